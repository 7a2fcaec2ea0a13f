// A node learns it was removed from the cluster: from the entry that removes it, or from a
// peer that applied it (a removed node may never be sent that entry). It then stops, through
// the node's onRemoved, unless it turns out to be a member after all.
import type { Logger } from 'pino';
import type { NodeId, RaftNode } from '../../raft/index.js';
import type { NodeClock } from '../clock.js';

export interface RemovalCore {
  readonly id: NodeId;
  readonly raft: RaftNode;
  readonly clock: NodeClock;
  readonly log: Logger;
  readonly electionTimeoutMs: number;
  appliedIndex(): number;
  stopping(): boolean;
  /** Stop for good, saying why. */
  removed(why: string): void;
}

export class Removal {
  private removedAt: number | null = null;

  constructor(private readonly core: RemovalCore) {}

  /** The entry at `index` removes this node (`fromLog`: this node applied it; otherwise a peer
   *  said so). */
  removedBy(index: number, fromLog = false): void {
    const { core } = this;
    if (core.stopping() || this.removedAt !== null) return;
    // A node that joined again under its old id replays its old removal before its new
    // addition (or hears of it from a lagging peer): the removal counts only if, once the
    // entries after it had a moment to arrive, it is still not a member.
    if (!fromLog && index <= core.appliedIndex()) return; // the log path decides
    this.removedAt = index;
    const why = `removed from the cluster by entry ${index}`;
    const stopIfOut = (): void => {
      const conf = core.raft.confState;
      if (fromLog && (conf.voters.includes(core.id) || conf.learners.includes(core.id))) return void (this.removedAt = null);
      core.log.warn(why + '; stopping');
      core.removed(why);
    };
    // Let the driver finish this Ready (a removed leader steps down first), then stop.
    if (fromLog) core.clock.setTimeout(stopIfOut, 2 * core.electionTimeoutMs).unref?.();
    else core.clock.soon(stopIfOut);
  }
}
