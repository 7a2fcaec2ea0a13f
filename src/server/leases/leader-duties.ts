// What only the leader does on a clock: expire sessions whose lease ran out, end
// lock-delays, prune the operation ledger (and carry the cluster's time forward while it
// holds anything). The lock machine has no clock, so these timers only *propose*
// (docs/internals.md, "Timing and safety", rule 1): a deposed leader's proposals never
// commit. Depends on the node through LeaderCore only.
import type { Logger } from 'pino';
import type { Command, LockMachine, MachineEvent } from '../../lockfsm/index.js';
import type { ClusterConfig } from '../../config/cluster-config.js';
import type { ClusterClock } from './cluster-clock.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { NodeClock, Timer } from '../clock.js';

/** Operations one pruneOps drops at most: one entry's work stays small. */
const PRUNE_BATCH = 1_000;

/** The node as the leader's timers see it. */
export interface LeaderCore {
  isLeader(): boolean;
  /** Propose one lock-machine command and process it soon; the index if accepted. */
  propose(command: Command): number | null;
  machine(): LockMachine;
  /** Once per expiry round of a leader (membership promotes learners that caught up). */
  leaderRound(): void;
}

export class LeaderDuties {
  private readonly lockDelayTimers = new Map<string, Timer>();
  private expiryTimer: Timer | null = null;
  private ledgerTimer: Timer | null = null;
  private lastExpiryCheck = 0;

  constructor(
    private readonly core: LeaderCore,
    private readonly leases: LeaseKeeper,
    private readonly cfg: Pick<ClusterConfig, 'raft' | 'sessions'>,
    private readonly clock: ClusterClock,
    private readonly log: Logger,
    private readonly time: NodeClock,
  ) {}

  private now(): number {
    return this.time.now();
  }

  start(): void {
    this.lastExpiryCheck = this.now();
    this.scheduleLedgerRound();
    this.expiryTimer = this.time.setInterval(() => this.expiryRound(), Math.max(10, Math.min(100, this.cfg.sessions.minTtlMs / 20)));
  }

  stop(): void {
    this.time.clear(this.expiryTimer);
    this.time.clear(this.ledgerTimer);
    this.ledgerTimer = null;
    this.clearLockDelays();
  }

  /** A new leader gives every session a full TTL from its election before expiring any,
   *  and re-arms every pending lock-delay with its full length (it cannot know how much
   *  of it has passed). */
  becameLeader(): void {
    const m = this.core.machine();
    this.clock.start(m.clock);
    this.leases.activate(this.now(), m.sessionLeases(), (session) => m.sessionTtlMs(session));
    for (const d of m.pendingLockDelays()) this.armLockDelay(d.name, d.delayMs, d.since);
  }

  lostLeadership(): void {
    this.leases.deactivate();
    this.clearLockDelays();
  }

  /** Timers ran late: we were paused (SIGSTOP, GC, CPU steal). Keepalives may be sitting
   *  unread in our socket buffers, so expire nothing now: give everyone a fresh TTL
   *  (rule 2 of "Timing and safety"). */
  paused(gapMs: number): void {
    if (!this.leases.isActive) return;
    this.log.warn({ gapMs }, 'resumed after a pause longer than the election timeout: renewing every lease');
    this.leases.graceAll(this.now());
  }

  /** Applied events that start or end a lease or a lock-delay. */
  onMachineEvent(ev: MachineEvent): void {
    switch (ev.type) {
      case 'sessionOpened':
        this.leases.track(ev.session, ev.ttlMs, this.now());
        break;
      case 'sessionClosed':
      case 'sessionExpired':
        this.leases.forget(ev.session);
        break;
      case 'lockDelayStarted':
        if (this.leases.isActive) this.armLockDelay(ev.name, ev.delayMs, ev.since);
        break;
      default:
        break;
    }
  }

  /** One round of the expiry timer (public for tests that drive the clock). */
  expiryRound(): void {
    const now = this.now();
    const gap = now - this.lastExpiryCheck;
    this.lastExpiryCheck = now;
    if (!this.leases.isActive || !this.core.isLeader()) return;
    if (gap > this.cfg.raft.electionTimeoutMs) {
      // This timer ran late: Node runs due timers before it reads input, so keepalives
      // may sit unread. Expire nothing; renew all.
      this.paused(gap);
      return;
    }
    this.core.leaderRound();
    for (const session of this.leases.due(now)) {
      const index = this.propose({ type: 'expireSession', session });
      if (index !== null) this.log.info({ session, index }, 'session lease ran out: proposing expiry');
    }
  }

  /** The ledger's round: a tenth of the cluster's retention, between 1 s and 1 min. */
  private ledgerPeriodMs(): number {
    return Math.min(60_000, Math.max(1_000, this.core.machine().settings.ledgerRetentionMs / 10));
  }

  private scheduleLedgerRound(): void {
    this.ledgerTimer = this.time.setTimeout(() => {
      this.ledgerRound();
      if (this.ledgerTimer !== null) this.scheduleLedgerRound();
    }, this.ledgerPeriodMs());
  }

  /** Ledger retention: a pruneOps stamped with the cluster's time drops what aged out (the
   *  ages are the cluster's settings, applied by every node). While the ledger holds
   *  anything the round also carries the cluster's time forward, so that a later leader's
   *  stamps continue from close to now rather than from the last operation's; and so it does
   *  while the watch history holds anything, whose age is counted in that time. (Public for
   *  tests that drive the clock.) */
  ledgerRound(): void {
    if (!this.core.isLeader()) return;
    const m = this.core.machine();
    const { ops, historyEntries } = m.stats();
    if (ops === 0 && historyEntries === 0) return;
    const at = this.clock.stamp(m.clock);
    if (m.opsToPrune(at, PRUNE_BATCH) === 0 && at - m.clock < this.ledgerPeriodMs()) return;
    this.propose({ type: 'pruneOps', at, max: PRUNE_BATCH });
  }

  /** The cluster's time to stamp into a command proposed now (while leader). */
  stamp(): number {
    return this.clock.stamp(this.core.machine().clock);
  }

  private armLockDelay(name: string, delayMs: number, since: number): void {
    this.time.clear(this.lockDelayTimers.get(name));
    this.lockDelayTimers.set(
      name,
      this.time.setTimeout(() => {
        this.lockDelayTimers.delete(name);
        if (this.core.isLeader()) this.propose({ type: 'lockDelayElapsed', name, since });
      }, delayMs),
    );
  }

  private clearLockDelays(): void {
    for (const t of this.lockDelayTimers.values()) this.time.clear(t);
    this.lockDelayTimers.clear();
  }

  private propose(cmd: Command): number | null {
    return this.core.propose(cmd);
  }
}
