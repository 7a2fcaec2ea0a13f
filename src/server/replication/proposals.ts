// Proposals waiting for their entry to be applied. A proposal succeeded only if the entry
// applied at its index has the term it was proposed in; another term there means a new
// leader overwrote it, and the caller retries (with the same sequence number, so a retry
// never applies twice).
import type { Result } from '../../lockfsm/types.js';
import { systemClock, type NodeClock, type Timer } from '../clock.js';

/** What applying an entry gave: the lock machine's result, or null for an entry that carries
 *  no command (the leader's no-op, a membership change). The proposer, which knows which
 *  command it proposed, turns it into its answer (wire.ts answerFor). */
export type Outcome = Result | null;

type Pending = { term: number; resolve: (v: Outcome) => void; reject: (e: Error) => void; timer: Timer };

export class ProposalLost extends Error {}
export class ProposalTimeout extends Error {}

export class ProposalTracker {
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly timeoutMs: number,
    private readonly clock: NodeClock = systemClock,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  wait(index: number, term: number): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pending.delete(index);
        reject(new ProposalTimeout(`entry ${index} not applied within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(index, { term, resolve, reject, timer });
    });
  }

  /** The entry at `index` with `term` was applied with this outcome. */
  settle(index: number, term: number, outcome: Outcome): void {
    const p = this.pending.get(index);
    if (!p) return;
    this.pending.delete(index);
    this.clock.clear(p.timer);
    if (p.term === term) p.resolve(outcome);
    else p.reject(new ProposalLost(`entry ${index} was replaced by a new leader`));
  }

  /** A snapshot jumped past some pending indexes: their outcome is unknown here. */
  failUpTo(index: number): void {
    for (const [i, p] of this.pending) {
      if (i > index) continue;
      this.pending.delete(i);
      this.clock.clear(p.timer);
      p.reject(new ProposalLost(`entry ${i} was covered by a snapshot`));
    }
  }

  failAll(err: Error): void {
    for (const [i, p] of this.pending) {
      this.pending.delete(i);
      this.clock.clear(p.timer);
      p.reject(err);
    }
  }
}
