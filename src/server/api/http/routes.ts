// The HTTP/JSON API's routes: each maps a method and path to one client-protocol op, and
// builds that op's request from the JSON body (POST) or the query string (GET). The request
// then goes through the same validator (parseRequest) and the same dispatch as a websocket
// frame, so the two transports cannot drift apart in what they accept or mean.
// docs/http-api.md describes them for people; web/openapi.json for tools (a test checks the
// document against this table and the running server).
import type { Op } from '../../../protocol/ops.js';
import { ApiError } from './errors.js';
import { tokenFromJson, valueFromJson } from './json-wire.js';
import { txnFromJson } from './txn-json.js';

export type Input = Readonly<Record<string, unknown>>;

export interface ApiRoute {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly op: Op;
  /** The op's fields (without id and op) from the body or query. */
  readonly fields: (input: Input) => Record<string, unknown>;
  /** Answered as a Server-Sent Events stream (streams.ts), not one JSON answer. */
  readonly stream?: true;
}

/** Longest long-poll wait of an acquire. A client that wants longer asks again. */
export const MAX_WAIT_MS = 60_000;

export const API_PREFIX = '/v1';

/** The (session, seq, ackedSeq) triple of session-scoped writes. */
function seqOf(b: Input): Record<string, unknown> {
  return { session: b.session, seq: b.seq, ackedSeq: b.ackedSeq };
}

function fenceOf(b: Input): unknown {
  const f = b.fence;
  if (f === undefined || f === null || typeof f !== 'object' || Array.isArray(f)) return f;
  const o = f as Input;
  return { lock: o.lock, token: tokenFromJson(o.token, 'fence.token') };
}

/** How long an acquire waits: absent or 0 = a try (busy at once); otherwise a long poll. */
export function waitMsOf(b: Input): number {
  const w = b.waitMs;
  if (w === undefined || w === null) return 0;
  if (typeof w !== 'number' || !Number.isSafeInteger(w) || w < 0 || w > MAX_WAIT_MS) {
    throw new ApiError(400, 'INVALID_ARGUMENT', `waitMs: expected an integer from 0 to ${MAX_WAIT_MS}`);
  }
  return w;
}

/** A query parameter that is a whole number (limit), as a number for the validator. */
export function queryInt(q: Input, name: string): unknown {
  const v = q[name];
  if (typeof v !== 'string' || v === '') return undefined;
  if (!/^[0-9]{1,16}$/.test(v)) throw new ApiError(400, 'INVALID_ARGUMENT', `${name}: expected a whole number`);
  return Number(v);
}

export const ROUTES = [
  { method: 'GET', path: '/status', op: 'status', fields: () => ({}) },
  // Sessions
  { method: 'POST', path: '/session/open', op: 'openSession', fields: (b) => ({ ttlMs: b.ttlMs, label: b.label }) },
  { method: 'POST', path: '/session/keepalive', op: 'keepAlive', fields: (b) => ({ session: b.session }) },
  { method: 'POST', path: '/sessions/keepalive', op: 'keepAlives', fields: (b) => ({ sessions: b.sessions }) },
  { method: 'POST', path: '/session/close', op: 'closeSession', fields: seqOf },
  { method: 'GET', path: '/sessions', op: 'sessions', fields: (q) => ({ prefix: q.prefix, owner: q.owner, limit: queryInt(q, 'limit'), after: queryInt(q, 'after') }) },
  { method: 'GET', path: '/session', op: 'sessionInfo', fields: (q) => ({ session: queryInt(q, 'session') }) },
  { method: 'POST', path: '/session/revoke', op: 'revokeSession', fields: (b) => ({ session: b.session, reason: b.reason }) },
  // Locks
  {
    method: 'POST',
    path: '/lock/acquire',
    op: 'acquire',
    fields: (b) => ({
      name: b.name,
      mode: b.mode ?? 'exclusive',
      limit: b.limit,
      lockDelayMs: b.lockDelayMs,
      wait: waitMsOf(b) > 0,
      ...seqOf(b),
    }),
  },
  { method: 'POST', path: '/lock/release', op: 'release', fields: (b) => ({ name: b.name, token: tokenFromJson(b.token, 'token'), ...seqOf(b) }) },
  { method: 'GET', path: '/lock', op: 'get', fields: (q) => ({ name: q.name }) },
  { method: 'GET', path: '/locks', op: 'locks', fields: (q) => ({ prefix: q.prefix, limit: queryInt(q, 'limit') }) },
  // Key-value space
  {
    method: 'POST',
    path: '/kv/put',
    op: 'put',
    fields: (b) => ({ key: b.key, value: valueFromJson(b), fence: fenceOf(b), ifRevision: b.ifRevision, ephemeral: b.ephemeral, ...seqOf(b) }),
  },
  { method: 'POST', path: '/kv/txn', op: 'txn', fields: (b) => ({ ...txnFromJson(b), fence: fenceOf(b), ...seqOf(b) }) },
  { method: 'POST', path: '/kv/delete', op: 'delete', fields: (b) => ({ key: b.key, fence: fenceOf(b), ifRevision: b.ifRevision, ...seqOf(b) }) },
  { method: 'GET', path: '/kv', op: 'kvGet', fields: (q) => ({ key: q.key }) },
  // fromRevision (or the Last-Event-ID header, streams.ts): resume after that revision.
  { method: 'GET', path: '/kv/watch', op: 'watch', fields: (q) => ({ prefix: q.prefix ?? '', fromRevision: queryInt(q, 'fromRevision') }), stream: true },
  // Elections
  { method: 'POST', path: '/election/campaign', op: 'campaign', fields: (b) => ({ election: b.election, value: b.value, ...seqOf(b) }) },
  {
    method: 'POST',
    path: '/election/proclaim',
    op: 'proclaim',
    fields: (b) => ({ election: b.election, token: tokenFromJson(b.token, 'token'), value: b.value, ...seqOf(b) }),
  },
  { method: 'POST', path: '/election/resign', op: 'resign', fields: (b) => ({ election: b.election, token: tokenFromJson(b.token, 'token'), ...seqOf(b) }) },
  { method: 'GET', path: '/election/leader', op: 'leader', fields: (q) => ({ election: q.election }) },
  { method: 'GET', path: '/election/observe', op: 'observe', fields: (q) => ({ election: q.election }), stream: true },
] as const satisfies readonly ApiRoute[];

/**
 * The ops the HTTP API does not serve, each with why. Every op has a route above or a line
 * here: the check below fails to compile when an op is added to the protocol's table
 * (src/protocol/ops.ts) without either, naming the op.
 */
export const NOT_OVER_HTTP = {
  hello: 'an HTTP request carries its token in Authorization; there is no connection to greet',
  attach: 'a session is not bound to an HTTP connection; every request names its session',
  cancelWait: "an acquire's long poll withdraws its own wait when it ends",
  unobserve: 'an observe stream ends when the client closes it',
  unwatch: 'a watch stream ends when the client closes it',
  beginOp: 'the idempotency ledger is served to the SDK over its websocket',
  completeOp: 'the idempotency ledger is served to the SDK over its websocket',
  members: 'an operator op: the CLI (websocket) and the operators\' port serve it',
  addMember: 'an operator op: the CLI (websocket)',
  removeMember: 'an operator op: the CLI (websocket)',
  transferLeader: 'an operator op: the CLI (websocket)',
  snapshot: 'an operator op: the CLI (websocket), a backup streams in chunks',
  config: 'an operator op: the CLI (websocket)',
  configure: 'an operator op: the CLI (websocket)',
} as const satisfies Partial<Record<Op, string>>;

type RoutedOp = (typeof ROUTES)[number]['op'];
type Unplaced = Exclude<Op, RoutedOp | keyof typeof NOT_OVER_HTTP>;
/** Compile-time: `true` only when every op is routed or listed in NOT_OVER_HTTP; otherwise
 *  the error names the ops without a place. */
const everyOpPlaced: [Unplaced] extends [never] ? true : { opsWithoutHttpRouteOrReason: Unplaced } = true;
void everyOpPlaced;


/** The path the OpenAPI document is served at (not an op). */
export const OPENAPI_PATH = `${API_PREFIX}/openapi.json`;

const BY_PATH = new Map<string, ApiRoute[]>();
for (const r of ROUTES) {
  const full = API_PREFIX + r.path;
  BY_PATH.set(full, [...(BY_PATH.get(full) ?? []), r]);
}

/** Every (method, full path) the API serves, the OpenAPI document included. */
export function servedRoutes(): { method: string; path: string }[] {
  return [...ROUTES.map((r) => ({ method: r.method, path: API_PREFIX + r.path })), { method: 'GET', path: OPENAPI_PATH }];
}

/** The route for a request, or an ApiError: 404 for an unknown path, 405 for a wrong method. */
export function findRoute(method: string, path: string): ApiRoute {
  const rs = BY_PATH.get(path);
  if (!rs) throw new ApiError(404, 'UNKNOWN_OP', `no such path: ${path.slice(0, 200)}`);
  const r = rs.find((x) => x.method === method);
  if (!r) {
    const allow = rs.map((x) => x.method).join(', ');
    throw new ApiError(405, 'UNKNOWN_OP', `${path} takes ${allow}, not ${method.slice(0, 16)}`, { allow });
  }
  return r;
}
