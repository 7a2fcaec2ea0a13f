// What each simulated node keeps: its durable store (exactly what its Readys persisted) and
// its in-memory state machine (a running hash of every applied entry).
import type { Entry, HardState, ReadyWrite, Snapshot } from '../../src/raft/index.js';

/** A stable text key of an entry's content (type and data), for comparisons across nodes. */
export function entryKey(e: Pick<Entry, 'type' | 'data'>): string {
  let s = e.type === 'conf' ? 'C:' : 'N:';
  for (let i = 0; i < e.data.length; i++) s += String.fromCharCode(e.data[i]!);
  return s;
}

/**
 * The durable store of one node. Only what a Ready asked to persist lands here; a crash
 * loses everything else, and a restart rebuilds the node from this alone.
 */
export class Store {
  hardState: HardState = { term: 0, vote: null, commit: 0 };
  snapshot: Snapshot | null = null;
  /** Entries after the snapshot, contiguous. */
  entries: Entry[] = [];
  /** The last index this store held after its latest persist (what the node may have
   *  acknowledged): kept apart from the log, like the server's watermark file, so a log that
   *  lost its tail does not take it along. */
  watermark = 0;

  get snapshotIndex(): number {
    return this.snapshot?.meta.index ?? 0;
  }

  lastIndex(): number {
    return this.entries.length ? this.entries[this.entries.length - 1]!.index : this.snapshotIndex;
  }

  /** Persist one Ready's write: snapshot, then entries (a suffix that replaces any
   *  conflicting tail), then the hard state. Returns a contract violation, if any. */
  persist(rd: ReadyWrite): string | null {
    if (rd.snapshot) {
      this.snapshot = rd.snapshot;
      this.entries = [];
    }
    if (rd.entries.length) {
      const first = rd.entries[0]!.index;
      if (first <= this.snapshotIndex) return `ready entries start at ${first}, inside the snapshot (${this.snapshotIndex})`;
      if (first > this.lastIndex() + 1) return `ready entries start at ${first}, leaving a gap after ${this.lastIndex()}`;
      this.entries.length = first - this.snapshotIndex - 1;
      for (let i = 0; i < rd.entries.length; i++) {
        const e = rd.entries[i]!;
        if (e.index !== first + i) return `ready entries not contiguous at ${e.index}`;
        this.entries.push(e);
      }
    }
    if (rd.hardState) {
      const prev = this.hardState;
      if (rd.hardState.term < prev.term) return `persisted term went back ${prev.term} -> ${rd.hardState.term}`;
      if (rd.hardState.term === prev.term && prev.vote !== null && rd.hardState.vote !== prev.vote) {
        return `voted twice in term ${prev.term}: ${prev.vote} then ${rd.hardState.vote}`;
      }
      if (rd.hardState.commit < prev.commit) return `persisted commit went back ${prev.commit} -> ${rd.hardState.commit}`;
      this.hardState = rd.hardState;
    }
    this.watermark = this.lastIndex();
    if (this.hardState.commit > this.lastIndex()) {
      return `persisted commit ${this.hardState.commit} beyond the persisted log (${this.lastIndex()})`;
    }
    return null;
  }

  /** The application took a snapshot at `snap.meta.index`: drop the entries it covers. */
  compact(snap: Snapshot): void {
    if (snap.meta.index <= this.snapshotIndex) return;
    this.snapshot = snap;
    this.entries = this.entries.filter((e) => e.index > snap.meta.index);
  }
}

/** The replicated state machine: a running hash of (index, entry) and the latest ids. */
export class StateMachine {
  index = 0;
  h1 = 0x811c9dc5;
  h2 = 0x2545f491;
  count = 0;
  recent: string[] = [];

  apply(index: number, key: string): void {
    const s = `${index}|${key}`;
    let h1 = this.h1;
    let h2 = this.h2;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 16777619);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    this.h1 = h1 >>> 0;
    this.h2 = h2 >>> 0;
    this.index = index;
    if (key.length > 2) {
      this.count++;
      this.recent.push(key.slice(2));
      if (this.recent.length > 24) this.recent.shift();
    }
  }

  digest(): string {
    return `${this.h1.toString(16)}.${this.h2.toString(16)}.${this.count}`;
  }

  serialize(): Uint8Array {
    return new TextEncoder().encode(JSON.stringify({ i: this.index, a: this.h1, b: this.h2, c: this.count, r: this.recent }));
  }

  static restore(data: Uint8Array): StateMachine {
    const o = JSON.parse(new TextDecoder().decode(data)) as { i: number; a: number; b: number; c: number; r: string[] };
    const sm = new StateMachine();
    sm.index = o.i;
    sm.h1 = o.a;
    sm.h2 = o.b;
    sm.count = o.c;
    sm.recent = o.r;
    return sm;
  }
}
