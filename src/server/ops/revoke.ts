// The status page's one write: revoking a session (POST /api/sessions/revoke). Everything
// else on the operators' port is read-only and unauthenticated; this is neither:
// - it needs the cluster's `auth` and an admin token (`Authorization: Bearer ...`), checked by
//   the client port's own gate and served like a client's revokeSession, audit line included;
// - with auth off it is refused: anyone who reaches the port could revoke, and so could any
//   web page the operator's browser opens (a form POST needs no preflight). With auth on, the
//   Authorization header and the JSON content type make a browser ask first (CORS
//   preflight), which this port never grants, so another site's page cannot send it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Answer } from '../../protocol/ops.js';
import { statusFor } from '../api/http/errors.js';

export type Revoke = (token: string, session: number, reason: string, remote: string) => Promise<Answer<'revokeSession'>>;

/** A revoke request's body is small: a session id and a reason. */
const MAX_BODY_BYTES = 4096;

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function serveRevoke(req: IncomingMessage, res: ServerResponse, authOn: boolean, revoke: Revoke): Promise<void> {
  const fail = (status: number, message: string): void => reply(res, status, { error: message });
  if (!authOn) return fail(403, 'the cluster has no "auth": revoking from the status page needs an admin token; use palisade session revoke');
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return fail(415, 'send JSON {"session": ID, "reason": TEXT} with Content-Type: application/json');
  const bearer = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!bearer) return fail(401, 'an admin token is needed: Authorization: Bearer <token>');
  const text = await readBody(req);
  if (text === null) return fail(413, `the body is over ${MAX_BODY_BYTES} bytes`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return fail(400, 'the body is not JSON');
  }
  const { session, reason } = (typeof body === 'object' && body !== null ? body : {}) as { session?: unknown; reason?: unknown };
  if (typeof session !== 'number' || !Number.isSafeInteger(session) || session < 1) return fail(400, 'session: expected a session id');
  if (typeof reason !== 'string' || reason === '') return fail(400, 'reason: expected the reason, for the audit log');
  const ans = await revoke(bearer[1]!, session, reason, req.socket.remoteAddress ?? 'unknown');
  if (!ans.ok) return reply(res, statusFor(ans.error.code), { error: ans.error.message, code: ans.error.code });
  reply(res, 200, { session, index: ans.result.index });
}
