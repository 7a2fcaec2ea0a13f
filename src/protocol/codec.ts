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
