// What a leader knows of each follower's log (paper, Figure 2: nextIndex[], matchIndex[])
// plus the flow control etcd adds: a follower is probed one message at a time until its
// log position is known, then replicated to with a bounded window of pipelined appends.
import type { NodeId, Snapshot } from './types.js';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

/** A ring of the last index of each AppendEntries in flight; bounded by `capacity`. */
export class Inflights {
  private readonly buf: number[] = [];
  constructor(readonly capacity: number) {}

  get full(): boolean {
    return this.buf.length >= this.capacity;
  }

  get count(): number {
    return this.buf.length;
  }

  add(lastIndex: number): void {
    this.buf.push(lastIndex);
  }

  /** An acknowledgement up to `index` frees every append that ended at or below it. */
  freeTo(index: number): void {
    let n = 0;
    while (n < this.buf.length && this.buf[n]! <= index) n++;
    if (n > 0) this.buf.splice(0, n);
  }

  /** Free the oldest slot (etcd's FreeFirstOne): lets one more append go out. */
  freeFirstOne(): void {
    this.buf.shift();
  }

  reset(): void {
    this.buf.length = 0;
  }
}

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** In probe state: an append is outstanding; wait for its answer or the next heartbeat. */
  probeSent = false;
  /** In snapshot state: the snapshot being sent (its index), and how far its chunks have gone.
   *  The leader keeps sending this one even if it compacts again meanwhile: switching to a
   *  newer snapshot restarts the transfer, and a leader that compacts faster than a slow
   *  follower receives would starve it forever. */
  pendingSnapshot = 0;
  snapshot: Snapshot | null = null;
  /** Bytes the follower has acknowledged, and bytes sent so far (chunks in flight between). */
  snapshotOffset = 0;
  snapshotSent = 0;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;
  /** The leader's tick count when it last heard from this member (CheckQuorum). */
  lastActive = 0;
  /** The highest commit index sent to this member (in an append or a heartbeat). */
  sentCommit = 0;
  readonly inflights: Inflights;

  constructor(
    readonly id: NodeId,
    next: number,
    maxInflight: number,
    public isLearner: boolean,
  ) {
    this.next = next;
    this.inflights = new Inflights(maxInflight);
  }

  becomeProbe(): void {
    // After a snapshot the follower holds at least the snapshot: probe from there.
    const from = this.state === 'snapshot' ? Math.max(this.match + 1, this.pendingSnapshot + 1) : this.match + 1;
    this.state = 'probe';
    this.next = from;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshot = null;
    this.snapshotOffset = 0;
    this.snapshotSent = 0;
    this.inflights.reset();
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshot = null;
    this.inflights.reset();
  }

  becomeSnapshot(snapshot: Snapshot): void {
    this.state = 'snapshot';
    this.pendingSnapshot = snapshot.meta.index;
    this.snapshot = snapshot;
    this.snapshotOffset = 0;
    this.snapshotSent = 0;
    this.probeSent = false;
    this.inflights.reset();
  }

  /** An accepted append up to `index`. Returns whether match moved. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * A rejected append of (rejected = prevIndex). `hint` is where the follower's log may
   * match (computed from its conflict index/term). Returns false for a stale rejection.
   */
  maybeDecrTo(rejected: number, hint: number): boolean {
    if (this.state !== 'snapshot' && rejected <= this.match && hint < this.match) {
      // The follower no longer holds what it acknowledged: its log went backwards (a lost or
      // truncated disk), or this is a reordered answer from before it caught up. etcd treats
      // it as stale and ignores it, which leaves a regressed follower stuck forever (probed
      // at match+1, rejecting each time). Forget the match and probe from its hint: if the
      // rejection was merely stale, the probe is answered at once and match comes back.
      this.becomeProbe();
      this.match = 0;
      this.next = Math.max(1, hint + 1);
      return true;
    }
    if (this.state === 'replicate') {
      // Stale: we already know the follower matches at or beyond `rejected`.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // Probe: only the answer to the probe we sent (next - 1) counts.
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, hint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  /** Whether another append may be sent now. */
  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full;
      case 'snapshot':
        return true;
    }
  }
}

/** The largest index replicated on a majority of `voters` (their match indexes). */
export function quorumIndex(matches: readonly number[]): number {
  if (matches.length === 0) return 0;
  const sorted = [...matches].sort((a, b) => b - a);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function majority(n: number): number {
  return Math.floor(n / 2) + 1;
}
