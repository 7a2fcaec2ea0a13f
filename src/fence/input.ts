// Validation shared by every store, so a token or a resource name means the same thing in
// memory and in PostgreSQL.
import { FenceInputError } from './errors.js';

/** What callers may pass as a token: a Raft log index, up to 64 bits. */
export type TokenInput = number | bigint | string;

/** The largest token: tokens are unsigned 64-bit log indexes. */
export const MAX_TOKEN = (1n << 64n) - 1n;

/**
 * The longest resource name, in UTF-8 bytes. Names are keys (a table row, a map entry), not
 * payloads; 512 bytes fits any path or URL-like name and keeps an index entry small.
 */
export const MAX_RESOURCE_BYTES = 512;

const DIGITS = /^[0-9]+$/;
// With the u flag a surrogate pair is one code point, so this matches only lone halves,
// which have no UTF-8 form: two such names would collide once encoded.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Normalises a token to a bigint in [0, MAX_TOKEN], or throws FenceInputError. */
export function toToken(input: TokenInput): bigint {
  let token: bigint;
  if (typeof input === 'bigint') {
    token = input;
  } else if (typeof input === 'number') {
    if (!Number.isInteger(input)) throw new FenceInputError(`fencing token must be an integer, got ${input}`);
    // Above 2^53 a number may already have been rounded: the caller would be fenced by a
    // token it never received.
    if (!Number.isSafeInteger(input)) {
      throw new FenceInputError(`fencing token ${input} is beyond Number.MAX_SAFE_INTEGER; pass it as a bigint or a string`);
    }
    token = BigInt(input);
  } else if (typeof input === 'string') {
    if (!DIGITS.test(input)) throw new FenceInputError(`fencing token must be a string of decimal digits, got ${JSON.stringify(input)}`);
    token = BigInt(input);
  } else {
    throw new FenceInputError(`fencing token must be a number, bigint or string, got ${typeof input}`);
  }
  if (token < 0n) throw new FenceInputError(`fencing token must not be negative, got ${token}`);
  if (token > MAX_TOKEN) throw new FenceInputError(`fencing token ${token} does not fit in 64 bits`);
  return token;
}

/** Checks a resource name: a non-empty string of at most MAX_RESOURCE_BYTES UTF-8 bytes. */
export function checkResource(resource: string): string {
  if (typeof resource !== 'string') throw new FenceInputError(`resource name must be a string, got ${typeof resource}`);
  if (resource.length === 0) throw new FenceInputError('resource name must not be empty');
  const bytes = Buffer.byteLength(resource, 'utf8');
  if (bytes > MAX_RESOURCE_BYTES) {
    throw new FenceInputError(`resource name is ${bytes} bytes; the limit is ${MAX_RESOURCE_BYTES} bytes of UTF-8`);
  }
  // PostgreSQL text cannot hold NUL; refusing it everywhere keeps the stores interchangeable.
  if (resource.includes('\0')) throw new FenceInputError('resource name must not contain a NUL character');
  if (LONE_SURROGATE.test(resource)) throw new FenceInputError('resource name must be well-formed Unicode (it has a lone surrogate)');
  return resource;
}
