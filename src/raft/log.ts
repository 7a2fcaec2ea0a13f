// The in-memory Raft log of one node: the entries after the last snapshot, which of them
// are durable, which are committed and which were handed out to be applied.
//
// Index bookkeeping (all inclusive):
//   snapshotIndex < firstIndex() = snapshotIndex + 1 <= ... <= lastIndex()
//   applied <= committed <= lastIndex()
//   stableIndex: highest index the driver has made durable (entries above it are "unstable"
//   and go out in the next Ready).
import type { Entry, Snapshot, SnapshotMeta } from './types.js';

export class RaftLog {
  private entries: Entry[] = [];
  private snapIndex = 0;
  private snapTerm = 0;
  committed = 0;
  /** Highest index handed to the application in a Ready (applied once advance() is called). */
  applied = 0;
  stableIndex = 0;
  /** A snapshot received from the leader, to be persisted and installed by the driver. */
  pendingSnapshot: Snapshot | null = null;

  constructor(snapshot: SnapshotMeta | undefined, entries: readonly Entry[], committed: number, applied: number) {
    if (snapshot) {
      this.snapIndex = snapshot.index;
      this.snapTerm = snapshot.term;
    }
    for (const [i, e] of entries.entries()) {
      if (e.index !== this.snapIndex + 1 + i) {
        throw new Error(`raft log: entry ${e.index} out of place (expected ${this.snapIndex + 1 + i})`);
      }
    }
    this.entries = [...entries];
    this.stableIndex = this.lastIndex();
    this.committed = Math.max(committed, this.snapIndex);
    if (this.committed > this.lastIndex()) {
      throw new Error(`raft log: commit ${this.committed} beyond last index ${this.lastIndex()}`);
    }
    this.applied = Math.max(applied, this.snapIndex);
    if (this.applied > this.committed) this.applied = this.committed;
  }

  get snapshotIndex(): number {
    return this.snapIndex;
  }

  get snapshotTerm(): number {
    return this.snapTerm;
  }

  firstIndex(): number {
    return this.snapIndex + 1;
  }

  lastIndex(): number {
    return this.snapIndex + this.entries.length;
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  /** Term of the entry at `index`; undefined when compacted away or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.snapIndex) return this.snapTerm;
    if (index < this.snapIndex || index > this.lastIndex()) return undefined;
    return this.entries[index - this.snapIndex - 1]!.term;
  }

  entry(index: number): Entry | undefined {
    if (index <= this.snapIndex || index > this.lastIndex()) return undefined;
    return this.entries[index - this.snapIndex - 1];
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Paper §5.4.1: a candidate's log is at least as up-to-date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /** Entries in [lo, hi], stopping once `maxBytes` of data is reached (at least one entry). */
  slice(lo: number, hi: number, maxBytes = Infinity): Entry[] {
    if (lo < this.firstIndex()) throw new Error(`raft log: slice from compacted index ${lo}`);
    hi = Math.min(hi, this.lastIndex());
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i <= hi; i++) {
      const e = this.entries[i - this.snapIndex - 1]!;
      bytes += e.data.length + 16;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  append(entries: readonly Entry[]): void {
    for (const e of entries) this.entries.push(e);
  }

  /**
   * Append a leader's entries that follow (prevIndex, prevTerm), which must already match.
   * Paper, Figure 2, AppendEntries rules 3 and 4: an existing entry that conflicts with a
   * new one (same index, different term) is deleted with all that follow; entries already
   * present are not touched (a stale, reordered AppendEntries must not truncate the log).
   * Returns the index of the last new entry.
   */
  appendFromLeader(prevIndex: number, entries: readonly Entry[]): number {
    const lastNew = prevIndex + entries.length;
    for (const e of entries) {
      if (e.index <= this.snapIndex) continue; // covered by our snapshot: committed, equal
      const have = this.term(e.index);
      if (have === e.term) continue;
      if (have !== undefined) {
        if (e.index <= this.committed) {
          throw new Error(`raft log: conflict at committed index ${e.index} (Log Matching violated)`);
        }
        this.truncateFrom(e.index);
      }
      const start = e.index - prevIndex - 1;
      this.append(entries.slice(start));
      break;
    }
    return lastNew;
  }

  private truncateFrom(index: number): void {
    this.entries.length = index - this.snapIndex - 1;
    if (this.stableIndex >= index) this.stableIndex = index - 1;
  }

  /**
   * Fast backtracking hint (etcd's findConflictByTerm): the largest index <= `index` whose
   * term is <= `term`, with that term. Lets a leader skip a whole diverging term per round trip.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = Math.min(index, this.lastIndex());
    for (; i > this.snapIndex; i--) {
      const t = this.term(i)!;
      if (t <= term) return { index: i, term: t };
    }
    return { index: this.snapIndex, term: this.snapTerm };
  }

  commitTo(index: number): boolean {
    if (index <= this.committed) return false;
    if (index > this.lastIndex()) throw new Error(`raft log: commit ${index} beyond last index ${this.lastIndex()}`);
    this.committed = index;
    return true;
  }

  unstableEntries(): Entry[] {
    if (this.stableIndex >= this.lastIndex()) return [];
    return this.entries.slice(this.stableIndex - this.snapIndex);
  }

  /** Committed entries not yet handed out. Committed-but-unstable entries may be included
   *  (a follower told of a commit together with the entries): the driver applies those only
   *  once the Ready's write is durable, the stable ones possibly while it runs. */
  nextCommitted(maxEntries = Infinity): Entry[] {
    const lo = Math.max(this.applied + 1, this.firstIndex());
    const hi = Math.min(this.committed, lo + maxEntries - 1);
    if (hi < lo) return [];
    return this.entries.slice(lo - this.snapIndex - 1, hi - this.snapIndex);
  }

  /** Drop entries up to `index` (inclusive); they are covered by a snapshot at `index`. */
  compact(index: number, term: number): void {
    if (index <= this.snapIndex) return;
    if (index > this.applied) throw new Error(`raft log: compact ${index} beyond applied ${this.applied}`);
    this.entries = this.entries.slice(index - this.snapIndex);
    this.snapIndex = index;
    this.snapTerm = term;
  }

  /**
   * Replace the whole log by a snapshot from the leader (paper, Figure 13, rule 7). The
   * caller has checked that our log does not already hold the snapshot's last entry (rule 6
   * is handled there by simply committing), so every entry we have is discarded.
   */
  restore(snapshot: Snapshot): void {
    this.entries = [];
    this.snapIndex = snapshot.meta.index;
    this.snapTerm = snapshot.meta.term;
    this.committed = snapshot.meta.index;
    this.applied = snapshot.meta.index;
    this.stableIndex = snapshot.meta.index;
    this.pendingSnapshot = snapshot;
  }
}
