// How a driver carries out one Ready: which messages may leave before the local write, what
// that write holds, and which messages must wait until it is durable. The rule lives here,
// in the pure core (as etcd keeps MustSync in its raft package). Production's RaftDriver
// carries it out, and the simulator runs that same RaftDriver, so every sim seed checks it.
import type { Entry, HardState, Message, Ready, Snapshot } from './types.js';

/** What must be durable before `sendAfterWrite` leaves. */
export interface ReadyWrite {
  readonly hardState?: HardState;
  readonly snapshot?: Snapshot;
  readonly entries: readonly Entry[];
}

export interface ReadyPlan {
  /** The leader's replication (AppendEntries, heartbeats, snapshot chunks, TimeoutNow). */
  readonly sendFirst: readonly Message[];
  /** null: nothing to write now (the Ready moved only the commit index, or nothing). */
  readonly write: ReadyWrite | null;
  /** Votes and acknowledgements: promises about what this node has durably stored. */
  readonly sendAfterWrite: readonly Message[];
}

// A leader may write its log in parallel with replicating it (thesis §10.2.1): its
// AppendEntries do not promise anything about its own disk, and it counts itself towards a
// commit, applies and answers only in a later Ready, after this one's write completed.
const SEND_BEFORE_WRITE = new Set<Message['type']>(['app', 'heartbeat', 'snap', 'timeoutNow']);

/**
 * Plans each Ready of one RaftNode, remembering which hard state is durable. A Ready that
 * only moves the commit index writes nothing: the commit index is recoverable (a restarted
 * node re-learns it from the leader), so it rides with the next write (etcd's MustSync rule,
 * one step further). Entries, a snapshot, a new term or a new vote are always written before
 * the messages that depend on them.
 */
export class ReadyPlanner {
  /** The hard state of the last completed write. */
  private durable: HardState;
  /** A hard state not yet written (only its commit index moved). */
  private pending: HardState | null = null;

  constructor(durable: HardState) {
    this.durable = durable;
  }

  plan(rd: Ready): ReadyPlan {
    const sendFirst = rd.messages.filter((m) => SEND_BEFORE_WRITE.has(m.type));
    const sendAfterWrite = sendFirst.length === rd.messages.length ? [] : rd.messages.filter((m) => !SEND_BEFORE_WRITE.has(m.type));
    if (rd.hardState) this.pending = rd.hardState;
    const h = rd.hardState;
    const termOrVote = h !== undefined && (h.term !== this.durable.term || h.vote !== this.durable.vote);
    if (rd.entries.length === 0 && rd.snapshot === undefined && !termOrVote) return { sendFirst, write: null, sendAfterWrite };
    const write: ReadyWrite = {
      ...(this.pending ? { hardState: this.pending } : {}),
      ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
      entries: rd.entries,
    };
    return { sendFirst, write, sendAfterWrite };
  }

  /** The write of a plan is durable. */
  written(w: ReadyWrite): void {
    if (!w.hardState) return;
    this.durable = w.hardState;
    if (this.pending === w.hardState) this.pending = null;
  }

  /** The commit-only hard state not yet written (to save on a clean stop). */
  unwritten(): HardState | null {
    return this.pending;
  }
}
