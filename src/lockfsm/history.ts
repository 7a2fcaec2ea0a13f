// The watch history: the latest changes of the key-value space, kept so that a watch can
// resume from a revision (after a reconnect, on another node, after a leader change) and
// miss nothing. It is replicated state like the rest: every node records the same changes
// as it applies the same entries, drops the same ones by the same settings, and carries
// them in its snapshots, so any node can serve a resume, also one restarted from a snapshot.
//
// Bounded three ways, by settings (config.ts): a count of changes, their bytes (key + value +
// RECORD_OVERHEAD_BYTES each: a budget of its own, besides the key-value space's), and an
// age in cluster time (machine.ts): the machine has no clock of its own, so a change is
// stamped with the cluster's time as of its entry, and ages as stamped entries carry that
// time forward (the leader's pruneOps round does so about once a minute while the history
// holds anything: the age's resolution). Changes made before the cluster ever had a time
// (clock 0) take the cluster's first time as theirs. The oldest changes go first. A resume from a revision older than what was dropped is refused (COMPACTED), never
// answered with a gap: `compactedThrough` is the highest revision dropped, and a watch may
// resume from it or any later revision.
//
// Why not the Raft log: it is compacted by each node on its own schedule (snapshot.entries),
// so what one node could replay another could not, and entries would have to be decoded
// and re-applied to find their changes. Why not only on the leader: a new leader would have
// none, and the resume this is for is the one after a leader change.

import { RECORD_OVERHEAD_BYTES, type MachineConfig } from './config.js';
import { fail, readArray, readEach, readIndex, readString, readUint, readNullableBytes } from './snapshot-reader.js';
import type { SnapshotRows } from './snapshot.js';
import { utf8Length } from './text.js';
import type { HistoryRead, KvChange } from './types.js';

interface Change extends KvChange {
  /** Cluster time of the write (the machine's clock after the entry). */
  readonly at: number;
  readonly bytes: number;
}

/** [revision, key, value or null, at] */
type ChangeTuple = [number, string, Uint8Array | null, number];

export class WatchHistory {
  /** Oldest first, revisions never decreasing; entries before `head` are dropped. */
  private changes: Change[] = [];
  private head = 0;
  private held = 0;
  private compacted = 0;

  constructor(private readonly settings: () => MachineConfig) {}

  get size(): number {
    return this.changes.length - this.head;
  }

  get bytes(): number {
    return this.held;
  }

  /** The highest revision dropped: a watch may resume from this revision or a later one. */
  get compactedThrough(): number {
    return this.compacted;
  }

  record(revision: number, key: string, value: Uint8Array | null, at: number): void {
    const bytes = utf8Length(key) + (value?.length ?? 0) + RECORD_OVERHEAD_BYTES;
    this.changes.push({ revision, key, value, at, bytes });
    this.held += bytes;
    this.trim(at);
  }

  /** Drops the oldest changes until the history is within its bounds as of cluster time `now`. */
  trim(now: number): void {
    const { watchHistoryEntries, watchHistoryBytes, watchHistoryMaxAgeMs } = this.settings();
    while (this.size > 0) {
      const oldest = this.changes[this.head]!;
      if (this.size <= watchHistoryEntries && this.held <= watchHistoryBytes && now - oldest.at <= watchHistoryMaxAgeMs) break;
      // The whole revision goes: a resume is from a revision, so the rest of one would be
      // kept for nobody.
      while (this.size > 0 && this.changes[this.head]!.revision === oldest.revision) this.held -= this.changes[this.head++]!.bytes;
      this.compacted = oldest.revision;
    }
    // Reclaim the dropped prefix now and then (amortised O(1) per change).
    if (this.head > 1024 && this.head * 2 > this.changes.length) {
      this.changes = this.changes.slice(this.head);
      this.head = 0;
    }
  }

  /** The cluster has its first time: changes made before it (at 0, a prefix of the history,
   *  since the cluster's time never goes back) are dated to it. Once in a cluster's life. */
  dateUndated(at: number): void {
    for (let i = this.head; i < this.changes.length && this.changes[i]!.at === 0; i++) this.changes[i] = { ...this.changes[i]!, at };
  }

  /**
   * The changes after revision `from` to keys starting with `prefix`, oldest first; at most
   * about `maxChanges` of them and `maxBytes` of keys and values, after looking at about
   * `maxScan` changes (a prefix few keys match costs no more), cut only between revisions:
   * `more` with `through`, the last revision looked at in full (ask again from it).
   * `compacted` when changes after `from` were dropped.
   */
  since(from: number, prefix: string, maxChanges: number, maxBytes: number, maxScan: number): HistoryRead {
    if (from < this.compacted) return { type: 'compacted', compactedThrough: this.compacted };
    const out: KvChange[] = [];
    let bytes = 0;
    let scanned = 0;
    const start = this.firstAfter(from);
    for (let i = start; i < this.changes.length; i++) {
      const c = this.changes[i]!;
      const prev = i > start ? this.changes[i - 1]!.revision : null;
      if (prev !== null && c.revision !== prev && (out.length >= maxChanges || bytes >= maxBytes || scanned >= maxScan)) {
        return { type: 'changes', changes: out, more: true, through: prev };
      }
      scanned++;
      if (!c.key.startsWith(prefix)) continue;
      out.push({ key: c.key, value: c.value, revision: c.revision });
      bytes += c.bytes;
    }
    return { type: 'changes', changes: out, more: false };
  }

  /** The position of the first change with a revision above `from` (binary search). */
  private firstAfter(from: number): number {
    let lo = this.head;
    let hi = this.changes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.changes[mid]!.revision <= from) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The changes as of now, their tuples built as they are encoded (the records never change). */
  snapshotRows(): SnapshotRows<ChangeTuple> {
    const kept = this.changes.slice(this.head);
    return {
      length: kept.length,
      slice: (from, to) => kept.slice(from, to).map((c) => [c.revision, c.key, c.value, c.at]),
    };
  }

  /** Restores what snapshotRows gave; `compactedThrough` from the snapshot's head. */
  restore(data: unknown, compactedThrough: number, appliedIndex: number): void {
    this.compacted = compactedThrough;
    let last = compactedThrough;
    let lastAt = 0;
    readEach(data, 'history', (item) => {
      const t = readArray(item, 'change');
      if (t.length !== 4) fail(`change must have 4 fields, has ${t.length}`);
      const revision = readIndex(t[0], appliedIndex, 'revision');
      if (revision < last || revision <= compactedThrough) fail(`revision ${revision} out of order, or at or below the compacted ${compactedThrough}`);
      const key = readString(t[1], 'key');
      const value = readNullableBytes(t[2], 'value');
      const at = readUint(t[3], 'at');
      if (at < lastAt) fail('cluster time goes backwards');
      last = revision;
      lastAt = at;
      const bytes = utf8Length(key) + (value?.length ?? 0) + RECORD_OVERHEAD_BYTES;
      this.changes.push({ revision, key, value, at, bytes });
      this.held += bytes;
    });
  }
}
