// The snapshot envelope: format name, version and the applied index around the tables'
// own tuples. Tables serialize themselves as arrays of tuples in their iteration order,
// which keeps the snapshot compact and makes a restored machine iterate (and so emit
// events and encode its next snapshot) exactly as the original does.

import { copyingUnpackr, packr, packToBytes, plainView } from './codec.js';
import { fail, readObject, readUint, SnapshotError } from './snapshot-reader.js';

export const SNAPSHOT_FORMAT = 'palisade.lockfsm';
export const SNAPSHOT_VERSION = 1;

export interface SnapshotBody {
  readonly appliedIndex: number;
  readonly sessions: unknown;
  readonly locks: unknown;
  readonly elections: unknown;
  readonly kv: unknown;
  readonly ledgerRunning: unknown;
  readonly ledgerDone: unknown;
}

const BODY_FIELDS = ['sessions', 'locks', 'elections', 'kv', 'ledgerRunning', 'ledgerDone'] as const;

/** A table's snapshot rows, built a slice at a time (an array is one). */
export interface SnapshotRows<T = unknown> {
  readonly length: number;
  slice(from: number, to: number): T[];
}

/** What SnapshotEncoder encodes: the body, with each table as rows it builds as it goes. */
export type SnapshotSource = { readonly appliedIndex: number } & { readonly [F in (typeof BODY_FIELDS)[number]]: SnapshotRows };

export function encodeSnapshot(body: SnapshotBody): Uint8Array {
  return packToBytes({ format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, ...body });
}

/**
 * The same bytes as encodeSnapshot(body), encoded a slice of table rows at a time. The source
 * is a copy of the state taken in one go (tuples, or what builds them), so the machine may go on
 * applying between steps; a node steps it between event-loop turns, because at 300,000
 * sessions encoding in one go held its loop past an election timeout (docs/benchmarks.md,
 * "The snapshot stall"). Each slice is packed as an array and its header replaced by the
 * table's own: a msgpack array is its header followed by its items' encodings.
 */
export class SnapshotEncoder {
  private readonly parts: Uint8Array[] = [];
  private readonly slices: Generator<void, void, void>;
  private budget = 0;
  private encoded: Uint8Array | null = null;

  constructor(body: SnapshotSource) {
    this.slices = this.encode(body);
  }

  /** Encodes about `rows` more table rows; true once the whole snapshot is encoded. */
  step(rows: number): boolean {
    if (this.encoded) return true;
    this.budget = Math.max(1, rows);
    if (!this.slices.next().done) return false;
    this.encoded = concat(this.parts);
    this.parts.length = 0;
    return true;
  }

  /** The encoded snapshot, once step() has returned true. */
  bytes(): Uint8Array {
    if (!this.encoded) throw new Error('lockfsm: snapshot not encoded yet');
    return this.encoded;
  }

  private *encode(body: SnapshotSource): Generator<void, void, void> {
    // The key order of encodeSnapshot's object literal: format, version, then the body's.
    this.parts.push(mapHeader(3 + BODY_FIELDS.length));
    for (const [key, value] of [['format', SNAPSHOT_FORMAT], ['version', SNAPSHOT_VERSION], ['appliedIndex', body.appliedIndex]] as const) {
      this.parts.push(packToBytes(key), packToBytes(value));
    }
    for (const field of BODY_FIELDS) {
      const rows = body[field];
      this.parts.push(packToBytes(field), arrayHeader(rows.length));
      for (let at = 0; at < rows.length; ) {
        const end = Math.min(rows.length, at + this.budget);
        this.parts.push(arrayItems(packr.pack(rows.slice(at, end)), end - at));
        this.budget -= end - at;
        at = end;
        if (this.budget <= 0) yield;
      }
    }
  }
}

/** msgpack's map header for `n` < 16 keys (fixmap), as msgpackr writes it. */
function mapHeader(n: number): Uint8Array {
  if (n >= 16) throw new Error('lockfsm: snapshot envelope has too many fields for a fixmap');
  return Uint8Array.of(0x80 | n);
}

/** msgpack's array header for `n` items: fixarray, array 16 or array 32. */
function arrayHeader(n: number): Uint8Array {
  if (n < 16) return Uint8Array.of(0x90 | n);
  if (n < 0x10000) return Uint8Array.of(0xdc, n >> 8, n & 0xff);
  return Uint8Array.of(0xdd, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

/** The items of a packed array of `n` items: the encoding without its header (copied:
 *  msgpackr packs into a buffer it reuses). */
function arrayItems(packed: Uint8Array, n: number): Uint8Array {
  const header = arrayHeader(n);
  for (let i = 0; i < header.length; i++) {
    if (packed[i] !== header[i]) throw new Error('lockfsm: unexpected array header from the encoder');
  }
  // Not packed.slice: on a Node Buffer that is a view of msgpackr's buffer, not a copy.
  const items = new Uint8Array(packed.length - header.length);
  items.set(packed.subarray(header.length));
  return items;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Checks the envelope; the tables check their own parts. Throws SnapshotError. */
export function decodeSnapshot(data: Uint8Array): SnapshotBody {
  if (!(data instanceof Uint8Array)) fail('data must be bytes');
  if (data.length === 0) fail('empty data');
  let value: unknown;
  try {
    value = copyingUnpackr.unpack(plainView(data));
  } catch (err) {
    throw new SnapshotError(`not valid msgpack (${err instanceof Error ? err.message.slice(0, 120) : 'undecodable'})`);
  }
  const o = readObject(value, 'snapshot');
  if (o.format !== SNAPSHOT_FORMAT) fail(`not a lock state machine snapshot (format ${JSON.stringify(o.format)})`);
  if (o.version !== SNAPSHOT_VERSION) fail(`unsupported version ${JSON.stringify(o.version)} (this build reads ${SNAPSHOT_VERSION})`);
  for (const field of BODY_FIELDS) if (!(field in o)) fail(`missing ${field}`);
  return {
    appliedIndex: readUint(o.appliedIndex, 'appliedIndex'),
    sessions: o.sessions,
    locks: o.locks,
    elections: o.elections,
    kv: o.kv,
    ledgerRunning: o.ledgerRunning,
    ledgerDone: o.ledgerDone,
  };
}
