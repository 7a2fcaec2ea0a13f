// Reading an HTTP request's JSON body with the websocket port's bounds: no more bytes than
// one frame may have (limits.maxFrameBytes, 413 beyond) and no deeper nesting than a frame
// may have (32 levels, checked on the text before JSON.parse builds anything).
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.js';

export const MAX_JSON_DEPTH = 32;

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
