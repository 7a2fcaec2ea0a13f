// Drives the pure Raft core with real time and real storage: a tick timer, and a loop that
// takes each Ready, persists it with one synchronous LevelDB batch (group commit: whatever
// was proposed while the previous fsync ran goes into the next one), sends its messages,
// applies its committed entries and calls advance().
//
// Ordering (docs/internals.md, "The Ready loop"): messages that depend on what the Ready persists
// (votes, append acknowledgements) are sent only after the batch is durable. A leader's own
// AppendEntries/heartbeats do not depend on its local write (thesis §10.2.1: the leader may
// write its log in parallel with replicating it), so they go out first; the leader still
// applies, answers and publishes a commit index only in a later Ready, after its own fsync.
import type { Logger } from 'pino';
import type { RaftNode } from '../raft/index.js';
import type { Entry, HardState, Message, Ready, ReadState, Snapshot, SoftState } from '../raft/index.js';
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

const LEADER_MESSAGES = new Set<Message['type']>(['app', 'heartbeat', 'snap', 'timeoutNow']);

export class RaftDriver {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private scheduled = false;
  private stopped = false;
  private lastTick = 0;
  private idleWaiters: (() => void)[] = [];
  /** The hard state last written, to tell a commit-only Ready from a term or vote change. */
  private lastHard: HardState;
  /** A hard state not yet written (only its commit index moved). */
  private pendingHard: HardState | null = null;
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
    this.lastHard = raft.hardState();
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
        const early = rd.messages.filter((m) => LEADER_MESSAGES.has(m.type));
        const late = early.length === rd.messages.length ? [] : rd.messages.filter((m) => !LEADER_MESSAGES.has(m.type));
        if (early.length) this.hooks.send(early);
        // Entries, a snapshot, a term or a vote must be durable before the messages that
        // depend on them. A Ready that only moves the commit index writes nothing now: the
        // commit index is recoverable (a restarted node re-learns it from the leader), so it
        // rides along with the next durable batch instead of costing a write on the path
        // from commit to apply (etcd's MustSync rule, one step further).
        const mustSync = rd.entries.length > 0 || rd.snapshot !== undefined || this.termOrVoteChanged(rd);
        if (rd.hardState) this.pendingHard = rd.hardState;
        if (mustSync) {
          const hardState = this.pendingHard;
          await this.storage.save({
            ...(hardState ? { hardState } : {}),
            ...(rd.snapshot ? { snapshot: rd.snapshot } : {}),
            entries: rd.entries,
          });
          if (hardState) this.lastHard = hardState;
          if (this.pendingHard === hardState) this.pendingHard = null;
          this.stats.fsyncBatches++;
          this.stats.entriesPersisted += rd.entries.length;
        }
        if (this.stopped) break;
        if (late.length) this.hooks.send(late);
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

  private termOrVoteChanged(rd: Ready): boolean {
    const h = rd.hardState;
    if (!h) return false;
    const prev = this.lastHard;
    return h.term !== prev.term || h.vote !== prev.vote;
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
    if (this.pendingHard) {
      await this.storage.save({ hardState: this.pendingHard, entries: [] }).catch(() => {});
      this.pendingHard = null;
    }
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
