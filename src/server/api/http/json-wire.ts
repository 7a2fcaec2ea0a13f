// JSON <-> the client protocol's values. Fencing tokens are log indexes that grow without
// bound; JSON numbers lose integers past 2^53 in most languages' parsers, so every token
// leaves the node as a decimal string and may come in as one. Key-value values are bytes
// on the wire: JSON carries them once, as `"value": <string>, "encoding": "utf8" | "base64"`
// (text when the bytes are well-formed UTF-8 with no control characters but tab, LF and CR;
// base64 otherwise: a control byte would cost six characters as a JSON escape, and text
// that is not UTF-8 cannot be carried at all). Requests send `value` (UTF-8 text) or
// `valueBase64`.
import { ApiError } from './errors.js';

/** Result fields that hold a fencing token. */
const TOKEN_FIELDS: ReadonlySet<string> = new Set(['token', 'currentToken']);

/** A copy of `x` with every token field as a decimal string, and bytes as value + encoding. */
export function toJsonTokens(x: unknown): unknown {
  if (x instanceof Uint8Array) return bytesToJson(x);
  if (Array.isArray(x)) return x.map(toJsonTokens);
  if (x === null || typeof x !== 'object') return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if (TOKEN_FIELDS.has(k) && typeof v === 'number') out[k] = String(v);
    else if (k === 'value' && v instanceof Uint8Array) Object.assign(out, bytesToJson(v));
    else out[k] = toJsonTokens(v);
  }
  return out;
}

export type JsonBytes = { readonly value: string; readonly encoding: 'utf8' | 'base64' };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Control characters (Unicode's Cc) but tab, LF and CR. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/** Bytes as JSON, once: text when they are UTF-8 without control characters, else base64. */
export function bytesToJson(b: Uint8Array): JsonBytes {
  let text: string | null;
  try {
    text = strictUtf8.decode(b);
  } catch {
    text = null;
  }
  if (text !== null && !CONTROL.test(text)) return { value: text, encoding: 'utf8' };
  return { value: Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64'), encoding: 'base64' };
}

/** A token from JSON: a decimal string or a number; anything else is left for the
 *  request validator to refuse with its usual message. */
export function tokenFromJson(x: unknown, field: string): unknown {
  if (typeof x !== 'string') return x;
  if (!/^[0-9]{1,20}$/.test(x)) throw new ApiError(400, 'INVALID_ARGUMENT', `${field}: expected a token as a decimal string`);
  const n = Number(x);
  if (!Number.isSafeInteger(n)) throw new ApiError(400, 'INVALID_ARGUMENT', `${field}: token ${x} is beyond what this node can represent`);
  return n;
}

/** The bytes of a key-value write: `value` (UTF-8 text) or `valueBase64`. */
export function valueFromJson(body: Readonly<Record<string, unknown>>): Uint8Array | undefined {
  const text = body.value;
  const b64 = body.valueBase64;
  if (text !== undefined && text !== null && b64 !== undefined && b64 !== null) {
    throw new ApiError(400, 'INVALID_ARGUMENT', 'give either value or valueBase64, not both');
  }
  if (typeof text === 'string') return new Uint8Array(Buffer.from(text, 'utf8'));
  if (typeof b64 === 'string') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw new ApiError(400, 'INVALID_ARGUMENT', 'valueBase64: expected base64');
    return new Uint8Array(Buffer.from(b64, 'base64'));
  }
  if (text !== undefined && text !== null) throw new ApiError(400, 'INVALID_ARGUMENT', 'value: expected a string (or send valueBase64)');
  return undefined;
}
