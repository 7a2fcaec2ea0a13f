// The paper's five safety properties (Figure 3), checked incrementally after every simulated
// step, plus linearizable ReadIndex. Each check costs O(what changed in the step), except a
// new leader's completeness check, which scans the committed prefix once per election.
import type { Entry, NodeId, RaftNode } from '../../src/raft/index.js';
import { entryKey } from './state.js';

export class Violation extends Error {}

interface Committed {
  term: number;
  key: string | null; // null: learnt from a snapshot, content unknown
  /** An upper bound of the term in which the entry was committed (the observer's term). */
  commitTerm: number;
}

interface LeaderTrack {
  term: number;
  last: number;
  entry: Entry | undefined;
}

export class Checker {
  /** Election Safety: every (term, leader) ever seen. */
  readonly leaders = new Map<number, NodeId>();
  /** Log Matching: for each (index, term) ever present in a log, its predecessor's term and content. */
  private readonly entries = new Map<string, { prevTerm: number; key: string }>();
  /** Entries known committed (some node's commit index covered them). */
  private readonly committed = new Map<number, Committed>();
  maxCommit = 0;
  /** State Machine Safety: the entry applied at each index, and the state after it. */
  private readonly applied = new Map<number, string>();
  private readonly stateAt = new Map<number, string>();
  private readonly leaderTrack = new Map<NodeId, LeaderTrack>();
  elections = 0;

  constructor(private readonly describe: () => string) {}

  fail(msg: string): never {
    throw new Violation(`${msg} (${this.describe()})`);
  }

  /** Election Safety and Leader Append-Only, for every live node; Leader Completeness for a new leader. */
  checkLeader(id: NodeId, r: RaftNode): void {
    if (r.role !== 'leader') {
      this.leaderTrack.delete(id);
      return;
    }
    const term = r.term;
    const seen = this.leaders.get(term);
    if (seen === undefined) {
      this.leaders.set(term, id);
      this.elections++;
    } else if (seen !== id) {
      this.fail(`Election Safety: two leaders in term ${term}: ${seen} and ${id}`);
    }
    const log = r.log;
    const t = this.leaderTrack.get(id);
    if (!t || t.term !== term) {
      this.checkCompleteness(id, r);
    } else {
      // Leader Append-Only: what the leader held is still there, the very same entries.
      if (log.lastIndex() < t.last) this.fail(`Leader Append-Only: leader ${id} (term ${term}) log shrank ${t.last} -> ${log.lastIndex()}`);
      if (t.last > log.snapshotIndex && log.entry(t.last) !== t.entry) {
        this.fail(`Leader Append-Only: leader ${id} (term ${term}) overwrote its entry at ${t.last}`);
      }
    }
    const last = log.lastIndex();
    this.leaderTrack.set(id, { term, last, entry: log.entry(last) });
  }

  /** Leader Completeness: a leader of term T holds every entry committed in a term < T. */
  private checkCompleteness(id: NodeId, r: RaftNode): void {
    for (const [index, c] of this.committed) {
      if (c.commitTerm < r.term) this.checkHas(id, r, index, c);
    }
  }

  private checkHas(id: NodeId, r: RaftNode, index: number, c: Committed): void {
    const log = r.log;
    if (index < log.snapshotIndex) return; // covered by the leader's snapshot
    const t = log.term(index);
    if (t !== c.term) {
      this.fail(`Leader Completeness: leader ${id} of term ${r.term} lacks committed entry ${index} (term ${c.term}; has ${t ?? 'none'})`);
    }
    const e = log.entry(index);
    if (e && c.key !== null && entryKey(e) !== c.key) {
      this.fail(`Leader Completeness: leader ${id} of term ${r.term} holds different content at committed index ${index}`);
    }
  }

  /** A node's commit index moved from `from` to its current value: record what it committed. */
  checkCommit(id: NodeId, r: RaftNode, from: number, leaders: readonly { id: NodeId; r: RaftNode }[]): void {
    const log = r.log;
    const to = log.committed;
    if (to > this.maxCommit) this.maxCommit = to;
    for (let i = Math.max(from + 1, log.snapshotIndex); i <= to; i++) {
      const term = log.term(i);
      if (term === undefined) continue;
      const e = log.entry(i);
      const key = e ? entryKey(e) : null;
      const c = this.committed.get(i);
      if (c) {
        if (c.term !== term || (c.key !== null && key !== null && c.key !== key)) {
          this.fail(`State Machine Safety: ${id} committed (${i}, term ${term}) but (${i}, term ${c.term}) was committed before`);
        }
        if (c.key === null && key !== null) c.key = key;
        if (r.term < c.commitTerm) c.commitTerm = r.term;
        continue;
      }
      const rec: Committed = { term, key, commitTerm: r.term };
      this.committed.set(i, rec);
      for (const l of leaders) if (l.r.role === 'leader' && l.r.term > rec.commitTerm) this.checkHas(l.id, l.r, i, rec);
    }
  }

  /** Log Matching, on the entries a Ready is about to persist (every change to a log passes here). */
  checkEntries(id: NodeId, r: RaftNode, entries: readonly Entry[]): void {
    for (const e of entries) {
      const prevTerm = r.log.term(e.index - 1);
      if (prevTerm === undefined) this.fail(`log of ${id}: entry ${e.index} has no predecessor`);
      if (e.index > 1 && prevTerm > e.term) this.fail(`log of ${id}: term goes down at ${e.index} (${prevTerm} -> ${e.term})`);
      const k = `${e.index}:${e.term}`;
      const key = entryKey(e);
      const seen = this.entries.get(k);
      if (!seen) this.entries.set(k, { prevTerm, key });
      else if (seen.prevTerm !== prevTerm || seen.key !== key) {
        this.fail(
          `Log Matching: ${id} holds (${e.index}, term ${e.term}) after term ${prevTerm}` +
            ` but another log holds it after term ${seen.prevTerm}${seen.key !== key ? ' with other content' : ''}`,
        );
      }
    }
  }

  /** Full pairwise Log Matching (run now and then, and at the end). */
  checkLogsPairwise(nodes: readonly { id: NodeId; r: RaftNode }[]): void {
    for (let a = 0; a < nodes.length; a++) {
      for (let b = a + 1; b < nodes.length; b++) {
        const A = nodes[a]!;
        const B = nodes[b]!;
        const lo = Math.max(A.r.log.snapshotIndex, B.r.log.snapshotIndex);
        let i = Math.min(A.r.log.lastIndex(), B.r.log.lastIndex());
        while (i >= lo && A.r.log.term(i) !== B.r.log.term(i)) i--;
        for (; i > lo; i--) {
          const ea = A.r.log.entry(i)!;
          const eb = B.r.log.entry(i)!;
          if (ea.term !== eb.term || entryKey(ea) !== entryKey(eb)) {
            this.fail(`Log Matching: ${A.id} and ${B.id} agree at a later index but differ at ${i}`);
          }
        }
      }
    }
  }

  /** State Machine Safety: the node applies `e`; `digest` is its state afterwards. */
  checkApply(id: NodeId, e: Entry, digest: string): void {
    const key = entryKey(e);
    const seen = this.applied.get(e.index);
    if (seen === undefined) this.applied.set(e.index, key);
    else if (seen !== key) this.fail(`State Machine Safety: ${id} applied a different entry at ${e.index}`);
    this.checkState(id, e.index, digest, 'applying');
  }

  /** The state after `index`, however reached (applied entry by entry, or restored from a snapshot). */
  checkState(id: NodeId, index: number, digest: string, how: string): void {
    const seen = this.stateAt.get(index);
    if (seen === undefined) this.stateAt.set(index, digest);
    else if (seen !== digest) this.fail(`State Machine Safety: ${id} state at ${index} after ${how} differs from another node's`);
  }

  /** Linearizable reads: the index returned covers everything committed before the read began. */
  checkRead(id: NodeId, index: number, committedAtStart: number): void {
    if (index < committedAtStart) {
      this.fail(`Linearizability: read at ${id} returned index ${index} but ${committedAtStart} was committed before it began`);
    }
  }
}
