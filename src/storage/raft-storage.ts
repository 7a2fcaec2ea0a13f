// Durable Raft state of one node on LevelDB: hard state, log entries and the latest
// snapshot. Every Ready is persisted as ONE LevelDB write batch with `sync: true` (group
// commit), so a Ready is either entirely durable or not at all.
//
// Opening checks everything it reads: the identity the directory was created for, every
// value's shape, that the log after the snapshot is contiguous, and the Raft invariants a
// crash cannot break (terms never decrease along the log and never exceed the current term;
// commit never exceeds the log). Any violation is a StorageError naming the directory; the
// node never resets its data to get going again.
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { Level } from 'level';
import type { Entry, HardState, Snapshot } from '../raft/types.js';
import type { ReadyWrite } from '../raft/ready-plan.js';
import { StorageError } from './errors.js';
import type { LoadedState, NodeStore, StorageStats } from './node-store.js';
export type { LoadedState, StorageStats } from './node-store.js';
import { ALL_ENTRIES, HARD_STATE_KEY, JOINING_KEY, META_KEY, PEER_PREFIX, SNAPSHOT_KEY, entryIndexOf, entryKey, keyName, peerKey } from './keys.js';
import {
  CorruptValue,
  STORAGE_FORMAT,
  decodeEntry,
  decodeHardState,
  decodeMeta,
  decodeSnapshotRecord,
  encodeEntry,
  encodeHardState,
  encodeMeta,
  encodeSnapshotRecord,
  type Identity,
} from './records.js';
import { readWatermark, sameMark, WatermarkFile, type MarkDurability, type Watermark } from './watermark.js';
import { copyAside, dropCopy, explainLevelError } from './preopen.js';


/** See docs/operations.md: the procedure for a node whose data is damaged or gone. */
export const REJOIN_ADVICE =
  'this node must not vote or serve on this data: remove it from the cluster (`palisade member remove ID` on a ' +
  'healthy member), move this data directory aside, and start the node again with an empty directory and ' +
  '`serve --join` (docs/operations.md, "A node\'s data is corrupt")';



type Db = Level<Uint8Array, Uint8Array>;
type Op = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

const EMPTY_HARD_STATE: HardState = { term: 0, vote: null, commit: 0 };
/** Entries compact() deletes per turn in the write queue (tens of milliseconds of LevelDB). */
export const COMPACT_CHUNK = 10_000;

/** What open() learns about the stored log, kept in memory so that writes need no reads. */
interface LogBounds {
  snapshotIndex: number;
  /** Lowest and highest stored entry keys (entries at or below the snapshot index may linger
   *  after a compaction interrupted by a crash; they are ignored and deleted later). */
  firstStored: number | null;
  lastStored: number | null;
}

export class RaftStorage implements NodeStore {
  private readonly bounds: LogBounds;
  /** The state read (and checked) by open(), handed out by a load() before any write. */
  private opened: LoadedState | null;
  /** Writes run one after another: each computes its deletes from the bounds the previous
   *  one left. */
  private tail: Promise<unknown> = Promise.resolve();
  /** Set once a write failed: memory and disk may disagree, so nothing more is written. */
  private failure: unknown = null;
  private closed = false;
  private fsyncs = 0;
  private bytesWritten = 0;
  private lastFsyncMs = 0;
  /** Called with the duration of every synchronous write (latency histograms want each one). */
  onFsync: ((ms: number) => void) | null = null;

  private constructor(
    readonly dir: string,
    private readonly db: Db,
    state: LoadedState,
    bounds: LogBounds,
    private readonly wm: WatermarkFile,
    /** This directory's identity (meta.storageId): peers record it, see peer-identity.ts. */
    readonly storageId: string,
  ) {
    this.opened = state;
    this.bounds = bounds;
  }

  static async open(dir: string, identity: Identity): Promise<RaftStorage> {
    if (!identity.clusterId || !identity.nodeId) throw new StorageError(dir, 'cluster id and node id must be non-empty');
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      throw new StorageError(dir, `cannot create the data directory (${describe(err)})`, { cause: err });
    }
    let copy: string | null;
    try {
      copy = await copyAside(dir);
    } catch (err) {
      throw new StorageError(dir, `cannot copy the LevelDB logs aside before opening: ${explainLevelError(err)}`, { cause: err });
    }
    const kept = copy ? ` (the files LevelDB's recovery rewrote are kept as they were in ${copy})` : '';
    const db: Db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    try {
      await db.open();
    } catch (err) {
      if (/locked/.test(explainLevelError(err))) await dropCopy(copy).catch(() => undefined); // nothing was touched
      throw new StorageError(dir, `cannot open the database: ${explainLevelError(err)}${kept}`, { cause: err });
    }
    let wm: WatermarkFile | null = null;
    try {
      let isNew = false;
      let written = 0;
      const metaValue = await db.get(META_KEY);
      let meta: { storageId?: string; watermark?: boolean } = {};
      if (metaValue === undefined) {
        if (await hasAnyKey(db)) {
          throw new StorageError(dir, 'the database holds data but no identity record ("meta"); refusing to guess whose data it is');
        }
        isNew = true;
      } else {
        meta = checkIdentity(dir, metaValue, identity);
      }
      const { state, bounds } = await readAll(dir, db, isNew);
      // Check the log against the watermark before anything is written.
      const found = await readWatermark(dir);
      const durable = markOf(state, bounds);
      if (found.kind === 'corrupt') throw new StorageError(dir, `the watermark file is corrupt (both slots fail their checksum); ${REJOIN_ADVICE}`);
      if (found.kind === 'missing' && meta.watermark === true) {
        throw new StorageError(dir, `the watermark file is missing, so nothing tells how far this log reached; ${REJOIN_ADVICE}`);
      }
      if (found.kind === 'ok') checkAgainstWatermark(dir, durable, found.mark);
      wm = await WatermarkFile.open(dir, found.kind === 'ok' ? found.mark : durable, found.kind === 'ok' ? found.seq : null);
      if (!sameMark(wm.mark, durable)) await wm.write(durable, 'now');
      const storageId = meta.storageId ?? randomUUID();
      if (isNew || meta.storageId === undefined || meta.watermark !== true) {
        const value = encodeMeta(identity, { storageId, watermark: true });
        await db.put(META_KEY, value, { sync: true });
        written = META_KEY.length + value.length;
      }
      const storage = new RaftStorage(dir, db, state, bounds, wm, storageId);
      if (written > 0) storage.countWrite(written, 0);
      await dropCopy(copy);
      return storage;
    } catch (err) {
      await wm?.close().catch(() => undefined);
      await db.close().catch(() => undefined);
      if (err instanceof StorageError) throw new StorageError(dir, `${err.problem}${kept}`, { cause: err.cause });
      throw new StorageError(dir, `cannot read the database: ${explainLevelError(err)}${kept}`, { cause: err });
    }
  }

  /** Everything durable: hard state, snapshot, and the entries after the snapshot. */
  async load(): Promise<LoadedState> {
    this.checkUsable();
    const state = this.opened;
    if (state) {
      this.opened = null; // do not keep a second copy of the log alive
      return state;
    }
    return this.serially(async () => (await readAll(this.dir, this.db, false)).state);
  }

  /**
   * Persist one Ready in one synchronous batch. Entries must be contiguous and start no
   * later than right after the last stored one; stored entries from that index on that the
   * batch does not overwrite are deleted (a follower dropping a conflicting suffix).
   * A snapshot (installed from the leader) replaces the stored one and the whole stored log:
   * the core discards its log on restore (paper, Figure 13, rule 7), so the batch's entries,
   * if any, must start right after the snapshot.
   */
  save(batch: ReadyWrite): Promise<void> {
    return this.serially(async () => {
      const ops: Op[] = [];
      const b = this.bounds;
      const next: LogBounds = { ...b };
      const entries = batch.entries;
      checkContiguous(this.dir, entries);
      if (batch.snapshot) {
        const s = batch.snapshot;
        if (s.meta.index < b.snapshotIndex) {
          throw new StorageError(this.dir, `save: snapshot at ${s.meta.index} is older than the stored one at ${b.snapshotIndex}`);
        }
        if (entries.length > 0 && entries[0]!.index !== s.meta.index + 1) {
          throw new StorageError(this.dir, `save: entries start at ${entries[0]!.index}, not right after the snapshot at ${s.meta.index}`);
        }
        deleteRange(ops, b.firstStored, b.lastStored);
        ops.push({ type: 'put', key: SNAPSHOT_KEY, value: encodeSnapshotRecord(s) });
        next.snapshotIndex = s.meta.index;
        next.firstStored = null;
        next.lastStored = null;
      }
      if (entries.length > 0) {
        const first = entries[0]!.index;
        const last = entries[entries.length - 1]!.index;
        const lastIndex = Math.max(next.lastStored ?? 0, next.snapshotIndex);
        if (first <= next.snapshotIndex) {
          throw new StorageError(this.dir, `save: entry ${first} is covered by the snapshot at ${next.snapshotIndex}`);
        }
        if (first > lastIndex + 1) {
          throw new StorageError(this.dir, `save: entry ${first} would leave a gap after the last index ${lastIndex}`);
        }
        if (next.lastStored !== null && next.lastStored > last) {
          deleteRange(ops, Math.max(last + 1, next.firstStored ?? last + 1), next.lastStored);
        }
        for (const e of entries) ops.push({ type: 'put', key: entryKey(e.index), value: encodeEntry(e) });
        next.firstStored = next.firstStored === null ? first : Math.min(next.firstStored, first);
        next.lastStored = last;
      }
      if (batch.hardState) {
        const lastIndex = Math.max(next.lastStored ?? 0, next.snapshotIndex);
        if (batch.hardState.commit > lastIndex) {
          throw new StorageError(this.dir, `save: commit ${batch.hardState.commit} is beyond the last index ${lastIndex}`);
        }
        ops.push({ type: 'put', key: HARD_STATE_KEY, value: encodeHardState(batch.hardState) });
      }
      if (ops.length === 0) return;
      // The watermark never claims more than LevelDB holds: a shorter log (a conflicting
      // suffix dropped, a snapshot installed over a longer log) lowers it before the batch,
      // a longer log or a newer term raises it after the batch.
      const hs = batch.hardState;
      const before = this.wm.mark;
      const after: Watermark = {
        lastIndex: Math.max(next.lastStored ?? 0, next.snapshotIndex),
        term: hs ? hs.term : before.term,
        voted: hs ? hs.vote !== null : before.voted,
      };
      if (after.lastIndex < before.lastIndex) await this.writeMark({ ...before, lastIndex: after.lastIndex }, 'now');
      await this.writeSync(ops);
      Object.assign(this.bounds, next);
      // A longer log alone is marked 'soon' (docs/internals.md, "The watermark"); a term or
      // vote change is exact at once: the vote it records leaves as soon as this save resolves.
      const sameVote = after.term === before.term && after.voted === before.voted;
      if (!sameMark(this.wm.mark, after)) await this.writeMark(after, sameVote ? 'soon' : 'now');
    });
  }

  private async writeMark(mark: Watermark, durability: MarkDurability): Promise<void> {
    try {
      await this.wm.write(mark, durability);
    } catch (err) {
      this.failure = err;
      throw new StorageError(this.dir, `writing the watermark failed: ${explainLevelError(err)}`, { cause: err });
    }
  }

  /**
   * Store a snapshot the node took of its own applied state. The entries it covers stay
   * (a leader keeps a tail for slow followers) until compact() deletes them; load() never
   * returns them.
   */
  saveSnapshot(s: Snapshot): Promise<void> {
    return this.serially(async () => {
      if (s.meta.index < this.bounds.snapshotIndex) {
        throw new StorageError(this.dir, `saveSnapshot: snapshot at ${s.meta.index} is older than the stored one at ${this.bounds.snapshotIndex}`);
      }
      await this.writeSync([{ type: 'put', key: SNAPSHOT_KEY, value: encodeSnapshotRecord(s) }]);
      this.bounds.snapshotIndex = s.meta.index;
    });
  }

  /**
   * Remember that this node was started to join a running cluster. Until the cluster sends
   * it data its log is empty, like a founding member's before bootstrap; the mark keeps a
   * restart without --join from bootstrapping a second cluster whose first entries would
   * conflict, index for index, with the real one's.
   */
  markJoining(): Promise<void> {
    return this.serially(() => this.writeSync([{ type: 'put', key: JOINING_KEY, value: new Uint8Array([1]) }]));
  }

  /** Whether markJoining was ever called on this data directory. */
  async isJoining(): Promise<boolean> {
    return (await this.db.get(JOINING_KEY)) !== undefined;
  }

  /** The storage id recorded for each peer (see src/server/replication/peer-identity.ts). */
  async peerStorageIds(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const dec = new TextDecoder();
    const lo = peerKey('');
    const hi = peerKey('\uffff');
    for await (const [k, v] of this.db.iterator({ gte: lo, lt: hi })) out.set(dec.decode(k).slice(PEER_PREFIX.length), dec.decode(v));
    return out;
  }

  recordPeerStorageId(peer: string, storageId: string): Promise<void> {
    return this.serially(() => this.writeSync([{ type: 'put', key: peerKey(peer), value: new TextEncoder().encode(storageId) }]));
  }

  forgetPeerStorageId(peer: string): Promise<void> {
    return this.serially(() => this.writeSync([{ type: 'del', key: peerKey(peer) }]));
  }

  /**
   * Delete the entries up to `upTo`, which the stored snapshot must cover, COMPACT_CHUNK
   * entries per turn in the write queue: the Readys' writes queued meanwhile wait for one
   * chunk, not the whole range (deleting 160,000 entries in one go took LevelDB 190-740 ms,
   * on every node at once, and held every write behind it).
   */
  async compact(upTo: number): Promise<void> {
    while (await this.serially(() => this.compactChunk(upTo))) {
      // one more chunk
    }
  }

  /** Deletes the next chunk at or under `upTo`; false when nothing is left to delete. */
  private async compactChunk(upTo: number): Promise<boolean> {
    const b = this.bounds;
    if (upTo > b.snapshotIndex) {
      throw new StorageError(this.dir, `compact: entries up to ${upTo} are not covered by the snapshot at ${b.snapshotIndex}`);
    }
    if (b.firstStored === null || b.lastStored === null || upTo < b.firstStored) return false;
    const hi = Math.min(upTo, b.lastStored, b.firstStored + COMPACT_CHUNK - 1);
    // Not synced: if a crash loses the deletion, load() skips entries under the snapshot
    // and the next compaction deletes them.
    await this.db.clear({ gte: entryKey(b.firstStored), lte: entryKey(hi) });
    if (hi === b.lastStored) {
      b.firstStored = null;
      b.lastStored = null;
    } else {
      b.firstStored = hi + 1;
    }
    return true;
  }

  stats(): StorageStats {
    return { fsyncs: this.fsyncs, bytesWritten: this.bytesWritten, lastFsyncMs: this.lastFsyncMs };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.tail.catch(() => undefined);
    this.opened = null;
    await this.wm.close().catch(() => undefined);
    await this.db.close();
  }

  // ---- internals ---------------------------------------------------------------------------

  private checkUsable(): void {
    if (this.closed) throw new StorageError(this.dir, 'the storage is closed');
    if (this.failure !== null) {
      throw new StorageError(this.dir, `an earlier write failed (${describe(this.failure)}); restart the node`, { cause: this.failure });
    }
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    this.opened = null; // stale once anything is queued behind it
    const run = async (): Promise<T> => {
      this.checkUsable();
      return work();
    };
    const result = this.tail.then(run, run);
    this.tail = result.catch(() => undefined);
    return result;
  }

  private async writeSync(ops: Op[]): Promise<void> {
    let bytes = 0;
    for (const op of ops) bytes += op.key.length + (op.type === 'put' ? op.value.length : 0);
    const started = performance.now();
    try {
      await this.writeBatch(ops);
    } catch (err) {
      this.failure = err;
      throw new StorageError(this.dir, `a synchronous write failed: ${explainLevelError(err)}`, { cause: err });
    }
    this.countWrite(bytes, performance.now() - started);
  }

  /**
   * One synchronous LevelDB batch, built with the chained form (`batch()`, put/del, write):
   * each operation goes to the native batch as it is added. The array form (`batch(ops)`)
   * first clones every operation with the options spread into it and resolves its encodings
   * in JS; for a follower's batch of 17 entries that was 180 µs of the event loop against
   * 60 µs chained (and 300-400 against 180 µs of CPU in all). Same batch, same atomicity.
   */
  private async writeBatch(ops: readonly Op[]): Promise<void> {
    const batch = this.db.batch();
    try {
      for (const op of ops) {
        if (op.type === 'put') batch.put(op.key, op.value);
        else batch.del(op.key);
      }
    } catch (err) {
      await batch.close();
      throw err;
    }
    await batch.write({ sync: true });
  }

  private countWrite(bytes: number, ms: number): void {
    this.fsyncs += 1;
    this.bytesWritten += bytes;
    this.lastFsyncMs = ms;
    this.onFsync?.(ms);
  }
}

// ---- reading and checking ----------------------------------------------------------------------

function markOf(state: LoadedState, bounds: LogBounds): Watermark {
  const hs = state.hardState;
  return { lastIndex: bounds.snapshotIndex + state.entries.length, term: hs.term, voted: hs.vote !== null };
}

/** The log and hard state must reach what the watermark says they once did. */
function checkAgainstWatermark(dir: string, found: Watermark, mark: Watermark): void {
  if (found.lastIndex < mark.lastIndex) {
    throw new StorageError(
      dir,
      `the log ends at entry ${found.lastIndex}, but this node had written (and may have acknowledged) entries up to ` +
        `${mark.lastIndex}: ${mark.lastIndex - found.lastIndex} entries are gone (a truncated or damaged log); ${REJOIN_ADVICE}`,
    );
  }
  if (found.term < mark.term || (found.term === mark.term && mark.voted && !found.voted)) {
    throw new StorageError(
      dir,
      `the stored term and vote (term ${found.term}${found.voted ? ', voted' : ''}) are older than the ones this node had ` +
        `written (term ${mark.term}${mark.voted ? ', voted' : ''}): it could vote twice in one term; ${REJOIN_ADVICE}`,
    );
  }
}

function checkIdentity(dir: string, value: Uint8Array, expected: Identity): { storageId?: string; watermark?: boolean } {
  const meta = decodeOrFail(dir, META_KEY, () => decodeMeta(value));
  if (meta.format !== STORAGE_FORMAT) {
    throw new StorageError(dir, `unsupported storage format ${meta.format} (this build reads format ${STORAGE_FORMAT})`);
  }
  if (meta.clusterId !== expected.clusterId) {
    throw new StorageError(dir, `belongs to cluster "${meta.clusterId}", not "${expected.clusterId}"`);
  }
  if (meta.nodeId !== expected.nodeId) {
    throw new StorageError(dir, `belongs to node "${meta.nodeId}", not "${expected.nodeId}"`);
  }
  return meta;
}

async function readAll(dir: string, db: Db, isNew: boolean): Promise<{ state: LoadedState; bounds: LogBounds }> {
  const hardValue = await db.get(HARD_STATE_KEY);
  const hardState = hardValue === undefined ? EMPTY_HARD_STATE : decodeOrFail(dir, HARD_STATE_KEY, () => decodeHardState(hardValue));
  const snapValue = await db.get(SNAPSHOT_KEY);
  const snapshot = snapValue === undefined ? undefined : decodeOrFail(dir, SNAPSHOT_KEY, () => decodeSnapshotRecord(snapValue));
  const snapshotIndex = snapshot?.meta.index ?? 0;
  const snapshotTerm = snapshot?.meta.term ?? 0;

  const entries: Entry[] = [];
  let firstStored: number | null = null;
  let lastStored: number | null = null;
  let prevTerm = snapshotTerm;
  for await (const [key, value] of db.iterator(ALL_ENTRIES)) {
    const index = entryIndexOf(key);
    if (index === null) throw new StorageError(dir, `malformed entry key ${Buffer.from(key).toString('hex')}`);
    firstStored ??= index;
    lastStored = index;
    if (index <= snapshotIndex) continue; // covered by the snapshot: left by an interrupted compaction
    const expected = snapshotIndex + 1 + entries.length;
    if (index !== expected) {
      throw new StorageError(dir, `the log has a gap: expected entry ${expected}, found entry ${index}`);
    }
    const entry = decodeOrFail(dir, key, () => decodeEntry(index, value));
    if (entry.term < prevTerm) {
      throw new StorageError(dir, `entry ${index} has term ${entry.term}, lower than the term ${prevTerm} before it`);
    }
    prevTerm = entry.term;
    entries.push(entry);
  }

  const lastIndex = snapshotIndex + entries.length;
  if (hardState.commit > lastIndex) {
    throw new StorageError(dir, `the log is truncated: commit index ${hardState.commit} is beyond the last entry ${lastIndex}`);
  }
  if (prevTerm > hardState.term) {
    throw new StorageError(dir, `the log holds term ${prevTerm}, beyond the current term ${hardState.term} of the hard state`);
  }
  const state: LoadedState = snapshot ? { hardState, snapshot, entries, isNew } : { hardState, entries, isNew };
  return { state, bounds: { snapshotIndex, firstStored, lastStored } };
}

function decodeOrFail<T>(dir: string, key: Uint8Array, decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    if (err instanceof CorruptValue) throw new StorageError(dir, `corrupt value under "${keyName(key)}": ${err.message}`, { cause: err });
    throw err;
  }
}

function checkContiguous(dir: string, entries: readonly Entry[]): void {
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.index !== entries[0]!.index + i) {
      throw new StorageError(dir, `save: entries are not contiguous (${entries[i - 1]!.index} then ${entries[i]!.index})`);
    }
  }
}

function deleteRange(ops: Op[], from: number | null, to: number | null): void {
  if (from === null || to === null) return;
  for (let i = from; i <= to; i++) ops.push({ type: 'del', key: entryKey(i) });
}

async function hasAnyKey(db: Db): Promise<boolean> {
  for await (const _key of db.keys({ limit: 1 })) return true;
  return false;
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}
