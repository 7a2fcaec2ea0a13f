// Drives the pure Raft core: a tick timer, and a loop that takes each Ready, persists it
// with one synchronous batch (group commit: whatever was proposed while the previous fsync
// ran goes into the next one), sends its messages, applies its committed entries and calls
// advance().
//
// Which messages leave before the write and what the write holds is decided by the core's
// ReadyPlanner (docs/internals.md, "The Ready loop"). The clock, the timers and the storage
// are seams (DriverTimers, DriverStorage): production passes Node's timers and LevelDB; the
// simulator (test/sim) passes its virtual clock and an in-memory store that is durable on
// return, so every sim seed runs this very loop.
import { ReadyPlanner, type RaftNode, type ReadyPlan, type ReadyWrite } from '../../raft/index.js';
import type { Entry, Message, NodeId, Ready, ReadState, Snapshot, SoftState } from '../../raft/index.js';
import { systemClock, type NodeClock } from '../clock.js';

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

/** Where a Ready's write goes. A promise: the driver waits for it before anything that
 *  depends on the write (LevelDB). undefined: the write was durable on return (the
 *  simulator's store), and the driver carries on in the same call. */
export interface DriverStorage {
  save(w: ReadyWrite): Promise<void> | void;
}

/** How the driver is scheduled. */
export interface DriverTimers {
  /** Run `fn` once the current work is done (production: the next event-loop turn). */
  soon(fn: () => void): void;
  /** Call `fn` every `ms`; returns what cancels it. */
  every(ms: number, fn: () => void): () => void;
}

/** A pass's messages, one list per peer, each in the order the core produced them. */
export function byDestination(msgs: readonly Message[]): Map<NodeId, Message[]> {
  const out = new Map<NodeId, Message[]>();
  for (const m of msgs) {
    const list = out.get(m.to);
    if (list) list.push(m);
    else out.set(m.to, [m]);
  }
  return out;
}

/** The driver's schedule on a node's clock. */
export function driverTimers(clock: NodeClock): DriverTimers {
  return {
    soon: (fn) => clock.soon(fn),
    every: (ms, fn) => {
      const t = clock.setInterval(fn, ms);
      return () => clock.clear(t);
    },
  };
}

export const nodeTimers: DriverTimers = driverTimers(systemClock);

/** What the driver logs (a pino Logger is one). */
export interface DriverLog {
  error(obj: object, msg: string): void;
}

/**
 * How many of a Ready's committed entries are applied while its write is in flight rather
 * than after it: those this node already holds durably (etcd's server likewise applies in
 * parallel with its WAL save). Under load nearly every Ready carries both new entries and
 * the commit of earlier ones, and waiting would add this Ready's fsync to every answer (and,
 * on a contended lock, to every handoff). Applying a committed entry only moves the
 * in-memory state machine and answers clients; no promise about this node's disk rides on
 * it (acknowledgements and votes still wait for the write, and the core is advanced, so a
 * snapshot can be cut, only after it). Entries this very write makes durable (a follower
 * told of a commit with the entries, a single-voter leader) still wait: a lone node must
 * not answer before its disk has the entry. A Ready that installs a snapshot or changes the
 * node's role keeps the old order, since those hooks must see the state machine as it was.
 */
function appliableDuringWrite(rd: Ready, stableIndex: number): number {
  const first = rd.committedEntries[0];
  if (first === undefined || rd.snapshot !== undefined || rd.softState !== undefined) return 0;
  return Math.max(0, Math.min(rd.committedEntries.length, stableIndex - first.index + 1));
}

export class RaftDriver {
  private cancelTick: (() => void) | null = null;
  private running = false;
  private scheduled = false;
  private stopped = false;
  /** A write or an apply failed: a write still in flight must not resume the loop. */
  private failed = false;
  private lastTick = 0;
  private idleWaiters: (() => void)[] = [];
  /** stop() waiting for the Ready in progress to finish. */
  private loopWaiters: (() => void)[] = [];
  private readonly planner: ReadyPlanner;
  /** Counters for benchmarks and metrics. */
  readonly stats = { readies: 0, fsyncBatches: 0, entriesPersisted: 0, entriesApplied: 0 };

  constructor(
    readonly raft: RaftNode,
    private readonly storage: DriverStorage,
    private readonly hooks: DriverHooks,
    private readonly tickMs: number,
    private readonly electionTimeoutMs: number,
    private readonly log: DriverLog,
    private readonly now: () => number,
    private readonly timers: DriverTimers = nodeTimers,
  ) {
    this.planner = new ReadyPlanner(raft.hardState());
  }

  start(): void {
    this.lastTick = this.now();
    this.cancelTick = this.timers.every(this.tickMs, () => this.tick());
    this.kick();
  }

  /** One tick of the core (the tick timer calls it). */
  tick(): void {
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
    // A failed driver takes no new pass: its storage can no longer promise durability.
    if (this.scheduled || this.running || this.stopped || this.failed) return;
    this.scheduled = true;
    this.timers.soon(() => {
      this.scheduled = false;
      if (this.running || this.stopped || this.failed) return;
      this.running = true;
      this.process();
    });
  }

  /** How this Ready is carried out: the core's plan (a test may plant a wrong one). */
  protected plan(rd: Ready): ReadyPlan {
    return this.planner.plan(rd);
  }

  /** Process Readys until none is left; returns early while a write is in flight, and
   *  resumes (finish, then process again) once it is durable. */
  private process(): void {
    try {
      while (!this.stopped && this.raft.hasReady()) {
        const rd = this.raft.ready();
        this.stats.readies++;
        const plan = this.plan(rd);
        if (plan.sendFirst.length) this.hooks.send(plan.sendFirst);
        const pending = plan.write ? this.storage.save(plan.write) : undefined;
        if (pending) {
          const appliedEarly = appliableDuringWrite(rd, this.raft.log.stableIndex);
          // Handlers first: an apply that throws must not leave the write's outcome unheard.
          pending.then(
            () => this.resume(rd, plan, appliedEarly),
            (err: unknown) => this.fail(err),
          );
          this.applyCommitted(rd.committedEntries.slice(0, appliedEarly));
          return;
        }
        this.finish(rd, plan, 0);
      }
    } catch (e) {
      this.fail(e);
      return;
    }
    this.running = false;
    for (const w of this.loopWaiters.splice(0)) w();
    if (this.raft.hasReady() && !this.stopped) this.kick();
    else for (const w of this.idleWaiters.splice(0)) w();
  }

  private resume(rd: Ready, plan: ReadyPlan, appliedEarly: number): void {
    if (this.failed) return;
    try {
      this.finish(rd, plan, appliedEarly);
    } catch (e) {
      this.fail(e);
      return;
    }
    this.process();
  }

  /** The rest of a Ready once its write (if any) is durable; the first `appliedEarly` of its
   *  committed entries were applied while the write ran. */
  private finish(rd: Ready, plan: ReadyPlan, appliedEarly: number): void {
    if (plan.write) {
      this.planner.written(plan.write);
      this.stats.fsyncBatches++;
      this.stats.entriesPersisted += plan.write.entries.length;
    }
    if (this.stopped) return;
    if (plan.sendAfterWrite.length) this.hooks.send(plan.sendAfterWrite);
    if (rd.softState) this.hooks.softState(rd.softState);
    if (rd.snapshot) this.hooks.installSnapshot(rd.snapshot);
    this.applyCommitted(appliedEarly === 0 ? rd.committedEntries : rd.committedEntries.slice(appliedEarly));
    if (rd.readStates.length || rd.droppedReads.length) this.hooks.readStates(rd.readStates, rd.droppedReads);
    this.raft.advance(rd);
    this.hooks.afterAdvance();
  }

  private applyCommitted(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    this.hooks.apply(entries);
    this.stats.entriesApplied += entries.length;
  }

  /** A failed write leaves us unable to promise durability: stop rather than go on. Once
   *  only: an apply that threw while a write was in flight may be followed by that write's
   *  own failure. */
  private fail(e: unknown): void {
    // The pass has ended either way: stop() waits for exactly this.
    this.running = false;
    for (const w of this.loopWaiters.splice(0)) w();
    if (this.failed) return;
    this.failed = true;
    this.log.error({ err: e }, 'raft driver failed');
    this.hooks.fatal(e as Error);
  }

  /** Resolves once no Ready is pending or being processed. */
  idle(): Promise<void> {
    if (!this.running && !this.scheduled && !this.raft.hasReady()) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  async stop(): Promise<void> {
    this.cancelTick?.();
    this.cancelTick = null;
    while (this.running) await new Promise<void>((r) => this.loopWaiters.push(r));
    this.stopped = true;
    // Keep the latest commit index on a clean stop, so a restart applies up to it at once.
    const hardState = this.planner.unwritten();
    if (hardState) {
      await Promise.resolve(this.storage.save({ hardState, entries: [] })).catch(() => {});
      this.planner.written({ hardState, entries: [] });
    }
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
