// The cluster's time, as the leader stamps it into entries that need one (the ledger's `at`,
// pruneOps). The lock machine keeps the latest stamp applied (LockMachine.clock); a leader
// continues from it with its own monotonic clock, so that:
// - a stamp is never behind one applied before it, whoever stamped that one;
// - a step of any node's wall clock (NTP, an operator, a VM resumed) ages nothing: only a
//   cluster that has never had a stamp starts from the wall clock.
// Time during which no leader stamps anything is lost to the cluster clock: ledger entries
// then live longer than their retention, never shorter (the safe direction for an
// idempotency record).
export class ClusterClock {
  private base = 0;
  private monoAtBase = 0;
  private last = 0;

  constructor(
    /** Monotonic milliseconds (performance.now in production). */
    private readonly mono: () => number,
    /** Wall-clock milliseconds, read only for a cluster without a stamp yet. */
    private readonly wall: () => number,
  ) {}

  /** On taking office: continue from the machine's clock. */
  start(machineClock: number): void {
    this.rebase(machineClock > 0 ? machineClock : Math.floor(this.wall()));
  }

  /** The time to stamp now: never behind `machineClock` (the latest stamp applied) nor behind
   *  an earlier stamp of this leader. */
  stamp(machineClock: number): number {
    let t = Math.floor(this.base + (this.mono() - this.monoAtBase));
    // Entries of an earlier leader applied after we took office carry later stamps than our
    // start: continue from theirs.
    if (machineClock > t) {
      this.rebase(machineClock);
      t = machineClock;
    }
    this.last = Math.max(this.last, t);
    return this.last;
  }

  private rebase(at: number): void {
    this.base = at;
    this.monoAtBase = this.mono();
  }
}
