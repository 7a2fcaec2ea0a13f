// Reading an HTTP request's JSON body with the websocket port's bounds: no more bytes than
// one frame may have (limits.maxFrameBytes, 413 beyond) and no deeper nesting than a frame
// may have (32 levels, checked on the text before JSON.parse builds anything).
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.js';

export const MAX_JSON_DEPTH = 32;

/**
 * A POST must say its body is JSON (`Content-Type: application/json`, parameters such as
 * charset aside): 415 otherwise. A web page can make a browser send a cross-site POST
 * without asking the node first only with a form's types (text/plain, form encodings);
 * with this rule such a request is refused before its body is read.
 */
export function requireJsonBody(req: IncomingMessage): void {
  const type = req.headers['content-type'];
  const media = type?.split(';', 1)[0]!.trim().toLowerCase();
  if (media === 'application/json') return;
  const said = type === undefined ? 'no Content-Type' : `Content-Type ${JSON.stringify(type.slice(0, 100))}`;
  throw new ApiError(415, 'BAD_FRAME', `a POST body must be JSON, sent with "Content-Type: application/json" (this request has ${said})`, { connection: 'close' });
}

export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(declared, maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(size, maxBytes);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  const depth = jsonDepth(text);
  if (depth > MAX_JSON_DEPTH) throw new ApiError(400, 'BAD_FRAME', `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ApiError(400, 'BAD_FRAME', `the body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ApiError(400, 'BAD_FRAME', 'the body must be a JSON object');
  return value as Record<string, unknown>;
}

function tooLarge(bytes: number, max: number): ApiError {
  // The rest of the body is not read: the connection is closed after the answer.
  return new ApiError(413, 'FRAME_TOO_LARGE', `a body of ${bytes} bytes exceeds the limit of ${max}`, { connection: 'close' });
}

/** The deepest nesting of arrays and objects in JSON text (strings skipped). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}
