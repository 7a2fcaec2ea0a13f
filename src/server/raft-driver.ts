// Drives the pure Raft core with real time and real storage: a tick timer, and a loop that
// takes each Ready, persists it with one synchronous LevelDB batch (group commit: whatever
// was proposed while the previous fsync ran goes into the next one), sends its messages,
// applies its committed entries and calls advance().
//
// Which messages leave before the write and what the write holds is decided by the core's
// ReadyPlanner (docs/internals.md, "The Ready loop"); the simulator follows the same plan.
import type { Logger } from 'pino';
import { ReadyPlanner, type RaftNode } from '../raft/index.js';
import type { Entry, Message, ReadState, Snapshot, SoftState } from '../raft/index.js';
import type { RaftStorage } from '../storage/index.js';

export interface DriverHooks {
  send(msgs: readonly Message[]): void;
  /** Apply committed entries, in order (synchronously). */
  apply(entries: readonly Entry[]): void;
  /** A snapshot from the leader replaced our log: restore the state machine from it. */
  installSnapshot(snapshot: Snapshot): void;
  readStates(states: readonly ReadState[], dropped: readonly Uint8Array[]): void;
  softState(s: SoftState): void;
  /** After every processed Ready (snapshot policy, metrics). */
  afterAdvance(): void;
  /** The tick timer fired after a gap longer than the election timeout (we were paused). */
  paused(gapMs: number): void;
  fatal(err: Error): void;
}

export class RaftDriver {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private scheduled = false;
  private stopped = false;
  private lastTick = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly planner: ReadyPlanner;
  /** Counters for benchmarks and metrics. */
  readonly stats = { readies: 0, fsyncBatches: 0, entriesPersisted: 0, entriesApplied: 0 };

  constructor(
    readonly raft: RaftNode,
    private readonly storage: RaftStorage,
    private readonly hooks: DriverHooks,
    private readonly tickMs: number,
    private readonly electionTimeoutMs: number,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    this.planner = new ReadyPlanner(raft.hardState());
  }

  start(): void {
    this.lastTick = this.now();
    this.timer = setInterval(() => this.onTick(), this.tickMs);
    this.kick();
  }

  private onTick(): void {
    const t = this.now();
    const gap = t - this.lastTick;
    this.lastTick = t;
    if (gap > this.electionTimeoutMs) this.hooks.paused(gap);
    this.raft.tick();
    this.kick();
  }

  /** Something changed in the core (step/propose/readIndex): process Readys soon. Several
   *  calls in one event-loop turn collapse into one pass, which is what batches proposals. */
  kick(): void {
    if (this.scheduled || this.running || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.loop();
    });
  }

  private async loop(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    try {
      while (!this.stopped && this.raft.hasReady()) {
        const rd = this.raft.ready();
        this.stats.readies++;
        const plan = this.planner.plan(rd);
        if (plan.sendFirst.length) this.hooks.send(plan.sendFirst);
        if (plan.write) {
          await this.storage.save(plan.write);
          this.planner.written(plan.write);
          this.stats.fsyncBatches++;
          this.stats.entriesPersisted += plan.write.entries.length;
        }
        if (this.stopped) break;
        if (plan.sendAfterWrite.length) this.hooks.send(plan.sendAfterWrite);
        if (rd.softState) this.hooks.softState(rd.softState);
        if (rd.snapshot) this.hooks.installSnapshot(rd.snapshot);
        if (rd.committedEntries.length) {
          this.hooks.apply(rd.committedEntries);
          this.stats.entriesApplied += rd.committedEntries.length;
        }
        if (rd.readStates.length || rd.droppedReads.length) this.hooks.readStates(rd.readStates, rd.droppedReads);
        this.raft.advance(rd);
        this.hooks.afterAdvance();
      }
    } catch (e) {
      // A failed fsync leaves us unable to promise durability: stop rather than go on.
      this.log.error({ err: e }, 'raft driver failed');
      this.hooks.fatal(e as Error);
      return;
    } finally {
      this.running = false;
    }
    if (this.raft.hasReady() && !this.stopped) this.kick();
    else for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Resolves once no Ready is pending or being processed. */
  idle(): Promise<void> {
    if (!this.running && !this.scheduled && !this.raft.hasReady()) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    while (this.running) await new Promise((r) => setTimeout(r, 1));
    this.stopped = true;
    // Keep the latest commit index on a clean stop, so a restart applies up to it at once.
    const hardState = this.planner.unwritten();
    if (hardState) {
      await this.storage.save({ hardState, entries: [] }).catch(() => {});
      this.planner.written({ hardState, entries: [] });
    }
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
