// The snapshot envelope: format name, version and the applied index around the tables'
// own tuples. Tables serialize themselves as arrays of tuples in their iteration order,
// which keeps the snapshot compact and makes a restored machine iterate (and so emit
// events and encode its next snapshot) exactly as the original does.

import { copyingUnpackr, packr, packToBytes, plainView } from './codec.js';
import { DEFAULT_MACHINE_CONFIG, SETTING_NAMES, settingsProblem, type MachineConfig } from './config.js';
import { fail, readObject, readUint, SnapshotError } from './snapshot-reader.js';

export const SNAPSHOT_FORMAT = 'palisade.lockfsm';
/** 2: the cluster's settings (null: never configured) and time, kv entries' and ledger
 *  operations' owners, ephemeral keys' sessions, the watch history. Version 1 reads as never
 *  configured, at time 0, with no owners and an empty history compacted through its index. */
export const SNAPSHOT_VERSION = 2;

export interface SnapshotBody {
  readonly appliedIndex: number;
  readonly settings: MachineConfig | null;
  readonly clock: number;
  /** The highest revision the watch history dropped (history.ts). */
  readonly historyCompacted: number;
  readonly sessions: unknown;
  readonly locks: unknown;
  readonly elections: unknown;
  readonly kv: unknown;
  readonly ledgerRunning: unknown;
  readonly ledgerDone: unknown;
  readonly history: unknown;
}

const BODY_FIELDS = ['sessions', 'locks', 'elections', 'kv', 'ledgerRunning', 'ledgerDone', 'history'] as const;

/** A table's snapshot rows, built a slice at a time (an array is one). */
export interface SnapshotRows<T = unknown> {
  readonly length: number;
  slice(from: number, to: number): T[];
}

/** What SnapshotEncoder encodes: the body, with each table as rows it builds as it goes. */
export type SnapshotSource = Pick<SnapshotBody, 'appliedIndex' | 'settings' | 'clock' | 'historyCompacted'> & { readonly [F in (typeof BODY_FIELDS)[number]]: SnapshotRows };

/** The scalar fields after format and version, in the order encodeSnapshot writes them. */
const HEAD_FIELDS = ['appliedIndex', 'settings', 'clock', 'historyCompacted'] as const;

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
    this.parts.push(mapHeader(2 + HEAD_FIELDS.length + BODY_FIELDS.length));
    this.parts.push(packToBytes('format'), packToBytes(SNAPSHOT_FORMAT), packToBytes('version'), packToBytes(SNAPSHOT_VERSION));
    for (const key of HEAD_FIELDS) this.parts.push(packToBytes(key), packToBytes(body[key]));
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
  if (o.version !== 1 && o.version !== SNAPSHOT_VERSION) {
    fail(`unsupported version ${JSON.stringify(o.version)} (this build reads 1 to ${SNAPSHOT_VERSION})`);
  }
  // The history came within version 2, before its release: a version 2 snapshot without it
  // reads as version 1 does, with an empty history compacted through its index.
  const withHistory = 'history' in o || 'historyCompacted' in o;
  for (const field of BODY_FIELDS) if (!(field in o) && (field !== 'history' || withHistory)) fail(`missing ${field}`);
  const v1 = o.version === 1;
  if (!v1 && !('settings' in o && 'clock' in o)) fail('missing settings or clock');
  if (withHistory && !('historyCompacted' in o)) fail('missing historyCompacted');
  const appliedIndex = readUint(o.appliedIndex, 'appliedIndex');
  return {
    appliedIndex,
    settings: v1 || o.settings === null ? null : readSettings(o.settings),
    clock: v1 ? 0 : readUint(o.clock, 'clock'),
    historyCompacted: withHistory ? readUint(o.historyCompacted, 'historyCompacted') : appliedIndex,
    history: withHistory ? o.history : [],
    sessions: o.sessions,
    locks: o.locks,
    elections: o.elections,
    kv: o.kv,
    ledgerRunning: o.ledgerRunning,
    ledgerDone: o.ledgerDone,
  };
}

/** The settings of a snapshot: settings this build knows, and nothing else (a newer build's
 *  setting is one this build could not honour); one it knows and the snapshot lacks (written
 *  before the setting existed) has its default, as the configure entries of such a log get. */
function readSettings(v: unknown): MachineConfig {
  const o = readObject(v, 'settings');
  for (const k of Object.keys(o)) if (!SETTING_NAMES.includes(k as (typeof SETTING_NAMES)[number])) fail(`unknown setting ${JSON.stringify(k)}`);
  const out: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) out[name] = o[name] ?? DEFAULT_MACHINE_CONFIG[name];
  const problem = settingsProblem(out);
  if (problem !== null) fail(`settings: ${problem}`);
  return Object.freeze(out) as unknown as MachineConfig;
}
