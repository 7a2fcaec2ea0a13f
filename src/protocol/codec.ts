// The wire encoding shared by peer links and the client protocol: each ws binary message is
// ONE msgpack value. Plain msgpack only (maps with string keys, arrays, strings, integers,
// floats, booleans, nil, binary; no extension types), so that a client in any language can
// speak it with a stock msgpack library.
import { Packr, type Options } from 'msgpackr';
import { scanMsgpack } from './msgpack-scan.js';

export type FrameErrorCode = 'BAD_FRAME' | 'FRAME_TOO_LARGE';

/** A frame that cannot be decoded (or encoded). */
export class FrameError extends Error {
  override readonly name = 'FrameError';
  constructor(
    readonly code: FrameErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Deeper than any frame of ours; bounds the work a hostile frame can ask for. */
export const MAX_FRAME_DEPTH = 32;

/** A frame may decode to at most OBJECTS_BASE + its length / BYTES_PER_OBJECT maps, arrays,
 *  strings and binaries (msgpack-scan.ts). Our own frames spend well over 4 bytes on each
 *  (a map entry carries its key, a Raft entry its term and index); an array of empty maps
 *  spends one. The base leaves small frames of any shape alone. */
export const OBJECTS_BASE = 256;
export const BYTES_PER_OBJECT = 4;

/** The most objects a frame of `byteLength` bytes may decode to. */
export function maxObjectsFor(byteLength: number): number {
  return OBJECTS_BASE + Math.floor(byteLength / BYTES_PER_OBJECT);
}

// msgpackr's typings miss `skipValues`: leave out properties whose value is undefined (as
// JSON does) instead of writing msgpackr's private "undefined" extension.
const packrOptions: Options & { skipValues: unknown[] } = {
  useRecords: false, // plain maps, not msgpackr's record extension
  moreTypes: false,
  mapsAsObjects: true,
  int64AsType: 'number', // a uint64/int64 on the wire decodes as a JS number, never a bigint
  useToJSON: false,
  skipValues: [undefined],
};
const packr = new Packr(packrOptions);

export interface DecodeOptions {
  /** Refuse frames longer than this (FrameError FRAME_TOO_LARGE). */
  readonly maxBytes?: number;
}

export function encodeFrame(obj: unknown): Uint8Array {
  try {
    return packr.pack(widenIntegers(obj, 0));
  } catch (err) {
    throw new FrameError('BAD_FRAME', `cannot encode frame: ${(err as Error).message}`);
  }
}

/**
 * Decode one frame. Binary values come back as plain Uint8Array views into `bytes` (keep
 * `bytes` unmodified while they live). Throws FrameError on anything but one well-formed,
 * extension-free msgpack value; never fails otherwise, whatever the input.
 */
export function decodeFrame(bytes: Uint8Array, options: DecodeOptions = {}): unknown {
  if (!(bytes instanceof Uint8Array)) throw new FrameError('BAD_FRAME', 'frame is not binary');
  if (options.maxBytes !== undefined && bytes.length > options.maxBytes) {
    throw new FrameError('FRAME_TOO_LARGE', `frame of ${bytes.length} bytes exceeds the limit of ${options.maxBytes}`);
  }
  if (bytes.length === 0) throw new FrameError('BAD_FRAME', 'empty frame');
  const problem = scanMsgpack(bytes, { maxDepth: MAX_FRAME_DEPTH, maxObjects: maxObjectsFor(bytes.length) });
  if (problem !== null) throw new FrameError('BAD_FRAME', `malformed msgpack: ${problem}`);
  // A plain Uint8Array view (not a Buffer) makes msgpackr return plain Uint8Array binaries.
  const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    return packr.unpack(view);
  } catch (err) {
    throw new FrameError('BAD_FRAME', `malformed msgpack: ${(err as Error).message}`);
  }
}

// msgpackr writes integers outside [-2^31, 2^32) as float64. Another language's decoder
// would hand those to its user as floats, so integers that large (session ids, tokens and
// indexes grow without bound) are written as int64/uint64 instead. The walk copies only the
// objects on the path to such an integer; frames without one are packed as they are.
const INT32_MIN = -(2 ** 31);
const UINT32_LIMIT = 2 ** 32;

function widenIntegers(value: unknown, depth: number): unknown {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && (value < INT32_MIN || value >= UINT32_LIMIT) ? BigInt(value) : value;
  }
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array || depth > MAX_FRAME_DEPTH) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const w = widenIntegers(v, depth + 1);
      if (w !== v) {
        copy ??= value.slice();
        copy[i] = w;
      }
    }
    return copy ?? value;
  }
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | null = null;
  for (const key of Object.keys(source)) {
    const v = source[key];
    const w = widenIntegers(v, depth + 1);
    if (w !== v) {
      copy ??= { ...source };
      copy[key] = w;
    }
  }
  return copy ?? value;
}

/**
 * The msgpack encoding of `obj` in pieces of about `pieceBytes` each, built as they are
 * taken: concatenated they decode exactly as encodeFrame(obj) does. For answers too large to
 * build in one piece (a watch's first read holds up to 1000 values of 64 KiB): the sender
 * takes a piece only when the previous one has left, so the node never holds the whole
 * encoding. Maps and arrays are walked; every other value is packed whole, except binaries
 * longer than a piece, which are cut into slices of their own bytes (no copy).
 */
export function* encodeFrameParts(obj: unknown, pieceBytes: number): Generator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let size = 0;
  const take = (): Uint8Array => {
    const out = pending.length === 1 ? pending[0]! : Buffer.concat(pending, size);
    pending = [];
    size = 0;
    return out;
  };
  for (const piece of pieces(obj, pieceBytes, 0)) {
    pending.push(piece);
    size += piece.length;
    if (size >= pieceBytes) yield take();
  }
  if (size > 0) yield take();
}

function* pieces(value: unknown, pieceBytes: number, depth: number): Generator<Uint8Array> {
  if (value instanceof Uint8Array && value.length > pieceBytes) {
    yield header(value.length, [0xc4, 0xc5, 0xc6], null);
    for (let i = 0; i < value.length; i += pieceBytes) yield value.subarray(i, Math.min(value.length, i + pieceBytes));
    return;
  }
  if (depth < MAX_FRAME_DEPTH && Array.isArray(value)) {
    yield header(value.length, [null, 0xdc, 0xdd], 0x90);
    for (const v of value) yield* pieces(v, pieceBytes, depth + 1);
    return;
  }
  if (depth < MAX_FRAME_DEPTH && typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined);
    yield header(keys.length, [null, 0xde, 0xdf], 0x80);
    for (const k of keys) {
      yield copy(encodeFrame(k));
      yield* pieces((value as Record<string, unknown>)[k], pieceBytes, depth + 1);
    }
    return;
  }
  // A copy: msgpackr may reuse the buffer it packed into for its next pack.
  yield copy(encodeFrame(value));
}

/** A msgpack length header: the fix form (`fix` | n, for n < 16) when there is one, else the
 *  8-, 16- or 32-bit form (`codes`; null where the type has none). */
function header(n: number, codes: readonly (number | null)[], fix: number | null): Uint8Array {
  if (fix !== null && n < 16) return Uint8Array.of(fix | n);
  if (codes[0] !== null && n < 0x100) return Uint8Array.of(codes[0]!, n);
  if (n < 0x10000) return Uint8Array.of(codes[1]!, n >> 8, n & 0xff);
  return Uint8Array.of(codes[2]!, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

function copy(b: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(b);
}
