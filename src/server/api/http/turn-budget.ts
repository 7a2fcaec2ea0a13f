// Jobs begun on the turns of the event loop after the one that queued them, at most so many
// per turn, in order (setImmediate: timers and I/O run in between). A burst then costs the
// loop a bounded slice per turn instead of one long turn that delays everything else (Raft's
// heartbeats and election timers included); and whatever else the queuing turn decides
// about a job (its connection refused, cut) is known before the job begins.

export class TurnBudget {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  /** Queues `job` for a later turn. */
  run(job: () => void): void {
    this.waiting.push(job);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.nextTurn);
  }

  /** Jobs waiting for a later turn. */
  get backlog(): number {
    return this.waiting.length;
  }

  private readonly nextTurn = (): void => {
    const batch = this.waiting.splice(0, this.perTurn);
    this.scheduled = this.waiting.length > 0;
    if (this.scheduled) setImmediate(this.nextTurn);
    for (const job of batch) job();
  };
}
