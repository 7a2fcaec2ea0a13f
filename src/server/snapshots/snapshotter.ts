// When and how a node snapshots its lock machine and compacts its log (docs/internals.md, "A
// snapshot is copied in one turn and encoded over many"), and what installing the leader's
// snapshot resets. Depends on the node through SnapshotCore only.
import type { Logger } from 'pino';
import type { LockMachine } from '../../lockfsm/index.js';
import type { RaftNode } from '../../raft/index.js';
import type { NodeStore } from '../../storage/node-store.js';
import { MemberDirectory, wrapSnapshot } from '../../storage/members.js';
import { nextTurn, type NodeClock } from '../clock.js';
import { SnapshotPolicy } from './snapshot-policy.js';

/** Table rows of a snapshot encoded per event-loop turn: a few milliseconds of work on a
 *  loaded node, well under a heartbeat interval. */
const ROWS_PER_TURN = 5_000;

export interface SnapshotCore {
  readonly raft: RaftNode;
  readonly store: NodeStore;
  readonly clock: NodeClock;
  readonly log: Logger;
  machine(): LockMachine;
  members(): MemberDirectory;
  stopping(): boolean;
  /** A snapshot could not be stored: the node cannot promise what its disk holds. */
  fatal(err: Error): void;
}

export class Snapshotter {
  private lastIndex: number;
  private readonly policy: SnapshotPolicy;
  private running = false;
  /** snapshotNow() calls made while a Ready was being applied: served at its advance. */
  private readonly wanted: { resolve: (index: number) => void; reject: (e: unknown) => void }[] = [];

  constructor(
    private readonly core: SnapshotCore,
    /** `snapshot.entries` of the config, and how many of them to keep behind a snapshot. */
    private readonly settings: { readonly entries: number; readonly keepTail: number },
    /** The snapshot the node started from (index 0, 0 bytes: none). */
    from: { readonly index: number; readonly bytes: number },
  ) {
    this.lastIndex = from.index;
    this.policy = new SnapshotPolicy(settings.entries, from);
  }

  get lastSnapshotIndex(): number {
    return this.lastIndex;
  }

  /** An entry of `bytes` was applied. */
  applied(bytes: number): void {
    this.policy.applied(bytes);
  }

  /** The leader's snapshot replaced this node's log and machine. */
  installed(index: number, bytes: number): void {
    this.lastIndex = index;
    this.policy.taken(index, bytes);
  }

  /** The core has recorded as applied all that the machine applied: the one point where a
   *  snapshot may be cut (the driver applies a Ready's entries while its write is in flight,
   *  and advances the core only after it). */
  afterAdvance(): void {
    const wanted = this.wanted.splice(0);
    if (wanted.length > 0) {
      const taken = this.take();
      for (const w of wanted) taken.then(w.resolve, w.reject);
      return;
    }
    if (this.running || !this.policy.due(this.core.machine().appliedIndex)) return;
    // A snapshot that cannot be stored leaves this node unable to promise what its disk
    // holds, like any failed write; one cut short by a stop (the storage closes between the
    // compaction's chunks) is not a failure.
    this.take().catch((err: unknown) => {
      if (!this.core.stopping()) this.core.fatal(err instanceof Error ? err : new Error(String(err)));
    });
  }

  /** Snapshot the machine at its applied index, store it and compact the log: now, or once
   *  the Ready being applied has been advanced. */
  now(): Promise<number> {
    if (this.core.stopping()) return Promise.reject(new Error('node stopping'));
    if (this.core.machine().appliedIndex <= this.core.raft.log.applied) return this.take();
    return new Promise((resolve, reject) => this.wanted.push({ resolve, reject }));
  }

  /** The node stops: a snapshot asked for mid-Ready waits for an advance that will not come. */
  stop(): void {
    for (const w of this.wanted.splice(0)) w.reject(new Error('node stopping'));
  }

  private async take(): Promise<number> {
    if (this.running) return this.lastIndex;
    this.running = true;
    const { raft, core } = { raft: this.core.raft, core: this.core };
    try {
      const machine = core.machine();
      const index = machine.appliedIndex;
      if (index <= this.lastIndex || index > raft.log.applied) return this.lastIndex;
      // The state at `index` is copied in this turn and encoded over the next ones: in one
      // go, at 300,000 sessions, it held the loop (and so the heartbeats) past an election
      // timeout on every node at once (docs/benchmarks.md, "The snapshot stall").
      const encoder = machine.snapshotEncoder();
      const appliedBefore = this.policy.pending;
      const conf = raft.confState;
      const members = new MemberDirectory(core.members().entries(), core.members().removedIds());
      while (!encoder.step(ROWS_PER_TURN)) {
        await nextTurn(core.clock);
        if (core.stopping()) return this.lastIndex;
      }
      // The snapshot's membership is the core's at compaction time, so a conf entry applied
      // meanwhile makes it wrong for `index`; a snapshot installed from the leader meanwhile
      // makes it stale. Either way the next due check takes a new one.
      if (raft.confState !== conf || index <= this.lastIndex || index > raft.log.applied || raft.log.term(index) === undefined) {
        return this.lastIndex;
      }
      const data = wrapSnapshot(encoder.bytes(), members);
      const snap = raft.compact(index, data, this.settings.keepTail);
      await core.store.saveSnapshot(snap);
      await core.store.compact(raft.log.snapshotIndex);
      this.lastIndex = index;
      this.policy.taken(index, data.length, this.policy.pending - appliedBefore);
      core.log.info({ index, bytes: data.length }, 'snapshot taken');
      return index;
    } finally {
      this.running = false;
    }
  }
}
