// The values stored under each key, encoded with msgpackr as plain msgpack maps/arrays.
// Decoding checks every field: a value that does not decode to exactly the expected shape
// is corruption, reported as a CorruptValue (the caller names the key and the directory).
import { Packr, type Options } from 'msgpackr';
import type { ConfState, Entry, EntryType, HardState, NodeId, Snapshot } from '../raft/types.js';

export const STORAGE_FORMAT = 1;

export interface Identity {
  readonly clusterId: string;
  readonly nodeId: string;
}

export interface MetaRecord extends Identity {
  readonly format: number;
  /** This data directory's own identity, drawn once when it is created: a node that lost
   *  its directory comes back with another one, which its peers can tell apart. (Absent in
   *  directories created before it existed; added at their next start.) */
  readonly storageId?: string;
  /** Set once the watermark file exists: from then on its absence is damage, not age. */
  readonly watermark?: boolean;
}

/** Entries are stored as compact tuples: log entries are many and small. */
type EntryTuple = [term: number, type: 0 | 1, data: Uint8Array];

export class CorruptValue extends Error {}

// Plain maps and arrays, no extensions; `skipValues` (missing from msgpackr's typings) leaves
// out properties whose value is undefined, as JSON does.
const packrOptions: Options & { skipValues: unknown[] } = {
  useRecords: false,
  moreTypes: false,
  int64AsType: 'number',
  useToJSON: false,
  skipValues: [undefined],
};
const packr = new Packr(packrOptions);

export function encodeValue(value: unknown): Uint8Array {
  return packr.pack(value);
}

function decodeValue(bytes: Uint8Array): unknown {
  // A plain Uint8Array view (not a Buffer) makes msgpackr hand back plain Uint8Array binaries.
  const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    return packr.unpack(view);
  } catch (err) {
    throw new CorruptValue(`undecodable value (${(err as Error).message})`);
  }
}

// ---- field checks ------------------------------------------------------------------------

function record(x: unknown, what: string): Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x) || x instanceof Uint8Array) {
    throw new CorruptValue(`${what} is not a map`);
  }
  return x as Record<string, unknown>;
}

function uint(x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) throw new CorruptValue(`${what} is not a non-negative integer`);
  return x;
}

function str(x: unknown, what: string): string {
  if (typeof x !== 'string') throw new CorruptValue(`${what} is not a string`);
  return x;
}

function bytes(x: unknown, what: string): Uint8Array {
  if (!(x instanceof Uint8Array)) throw new CorruptValue(`${what} is not binary`);
  return x;
}

function nodeIds(x: unknown, what: string): NodeId[] {
  if (!Array.isArray(x)) throw new CorruptValue(`${what} is not an array`);
  return x.map((id, i) => str(id, `${what}[${i}]`));
}

// ---- records -------------------------------------------------------------------------------

export function encodeMeta(identity: Identity, extra: { storageId?: string; watermark?: boolean } = {}): Uint8Array {
  const meta: MetaRecord = { format: STORAGE_FORMAT, clusterId: identity.clusterId, nodeId: identity.nodeId, ...extra };
  return encodeValue(meta);
}

export function decodeMeta(value: Uint8Array): MetaRecord {
  const m = record(decodeValue(value), 'meta');
  return {
    format: uint(m.format, 'meta.format'),
    clusterId: str(m.clusterId, 'meta.clusterId'),
    nodeId: str(m.nodeId, 'meta.nodeId'),
    ...(m.storageId === undefined ? {} : { storageId: str(m.storageId, 'meta.storageId') }),
    ...(m.watermark === undefined ? {} : { watermark: m.watermark === true }),
  };
}

export function encodeHardState(hs: HardState): Uint8Array {
  return encodeValue({ term: hs.term, vote: hs.vote, commit: hs.commit });
}

export function decodeHardState(value: Uint8Array): HardState {
  const h = record(decodeValue(value), 'hard state');
  const vote = h.vote === null ? null : str(h.vote, 'hard state vote');
  return { term: uint(h.term, 'hard state term'), vote, commit: uint(h.commit, 'hard state commit') };
}

export function encodeSnapshotRecord(s: Snapshot): Uint8Array {
  const { index, term, conf } = s.meta;
  return encodeValue({ meta: { index, term, conf: { voters: conf.voters, learners: conf.learners } }, data: s.data });
}

export function decodeSnapshotRecord(value: Uint8Array): Snapshot {
  const s = record(decodeValue(value), 'snapshot');
  const meta = record(s.meta, 'snapshot meta');
  const c = record(meta.conf, 'snapshot conf');
  const conf: ConfState = { voters: nodeIds(c.voters, 'snapshot voters'), learners: nodeIds(c.learners, 'snapshot learners') };
  return {
    meta: { index: uint(meta.index, 'snapshot index'), term: uint(meta.term, 'snapshot term'), conf },
    data: bytes(s.data, 'snapshot data'),
  };
}

export function encodeEntry(e: Entry): Uint8Array {
  const tuple: EntryTuple = [e.term, e.type === 'conf' ? 1 : 0, e.data];
  return encodeValue(tuple);
}

/** The index comes from the key; the value holds the rest. */
export function decodeEntry(index: number, value: Uint8Array): Entry {
  const t = decodeValue(value);
  if (!Array.isArray(t) || t.length !== 3) throw new CorruptValue('entry is not a [term, type, data] tuple');
  const type: EntryType | null = t[1] === 0 ? 'normal' : t[1] === 1 ? 'conf' : null;
  if (type === null) throw new CorruptValue('entry type is neither 0 (normal) nor 1 (conf)');
  return { term: uint(t[0], 'entry term'), index, type, data: bytes(t[2], 'entry data') };
}
