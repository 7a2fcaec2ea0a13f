// Linearizable reads and leadership confirmation through ReadIndex (thesis §6.4), batched:
// every request that arrives while a round is in flight joins the next round, so one
// heartbeat round confirms any number of reads and keepalives.
import type { RaftNode, ReadState } from '../../raft/index.js';
import { systemClock, type NodeClock, type Timer } from '../clock.js';

type Waiter = { resolve: (index: number) => void; reject: (e: Error) => void };

export class ReadUnavailable extends Error {}

/**
 * How soon a round may start after the previous one started when only lease confirmations
 * (keepalives) wait for it; the node passes its tick (10 ms by default). Reads start a round
 * at once; keepalives alone would otherwise keep rounds running back to back (one per round
 * trip, hundreds to thousands a second at 10,000 keepalives/s), each a heartbeat to and an
 * answer from every follower. A keepalive still waits for a round that started after it
 * arrived; it only waits up to this much longer.
 */
export const LEASE_ROUND_SPACING_MS = 10;

/** Whether a waiter needs its round at once (a read) or may share a spaced one (a lease). */
export type Urgency = 'read' | 'lease';

export class ReadIndexBatcher {
  private next: Waiter[] = [];
  /** A read waits in `next`: its round starts without spacing. */
  private readWaiting = false;
  private inflight: { key: string; waiters: Waiter[]; timer: Timer } | null = null;
  private counter = 0;
  private lastStart = Number.NEGATIVE_INFINITY;
  private spaced: Timer | null = null;
  private stopped = false;

  constructor(
    private readonly raft: RaftNode,
    private readonly kick: () => void,
    private readonly roundTimeoutMs: number,
    private readonly nodeTag: string,
    private readonly clock: NodeClock = systemClock,
    private readonly leaseSpacingMs: number = LEASE_ROUND_SPACING_MS,
  ) {}

  /** Resolves with a read index confirmed by a heartbeat round started after this call. */
  request(urgency: Urgency = 'read'): Promise<number> {
    if (this.stopped) return Promise.reject(new ReadUnavailable('the node is stopping'));
    return new Promise((resolve, reject) => {
      this.next.push({ resolve, reject });
      if (urgency === 'read') this.readWaiting = true;
      this.flush();
    });
  }

  private flush(): void {
    if (this.inflight || this.next.length === 0) return;
    if (!this.readWaiting) {
      const wait = this.lastStart + this.leaseSpacingMs - this.clock.now();
      if (wait > 0) {
        this.spaced ??= this.clock.setTimeout(() => {
          this.spaced = null;
          this.flush();
        }, Math.ceil(wait));
        return;
      }
    }
    this.clock.clear(this.spaced);
    this.spaced = null;
    const waiters = this.next;
    this.next = [];
    this.readWaiting = false;
    this.lastStart = this.clock.now();
    const ctx = new TextEncoder().encode(`${this.nodeTag}:${++this.counter}`);
    const key = Buffer.from(ctx).toString('hex');
    // A round can be lost (the leader changed, a forwarded read was dropped): give up on it
    // after a while so the callers can retry, rather than hang.
    const timer = this.clock.setTimeout(() => this.finish(key, null), this.roundTimeoutMs);
    this.inflight = { key, waiters, timer };
    this.raft.readIndex(ctx);
    this.kick();
  }

  onReadStates(states: readonly ReadState[], dropped: readonly Uint8Array[]): void {
    for (const s of states) this.finish(Buffer.from(s.context).toString('hex'), s.index);
    for (const d of dropped) this.finish(Buffer.from(d).toString('hex'), null);
  }

  /** Leadership or the leader changed: a round in flight will not be answered. */
  abort(): void {
    if (this.inflight) this.finish(this.inflight.key, null);
  }

  /** The node is stopping: every waiter is told no leader confirmed it (so its caller is
   *  answered rather than left hanging), no round starts, and no timer is left behind. */
  stop(): void {
    this.stopped = true;
    this.clock.clear(this.spaced);
    this.spaced = null;
    const waiters = [...(this.inflight?.waiters ?? []), ...this.next];
    this.clock.clear(this.inflight?.timer);
    this.inflight = null;
    this.next = [];
    for (const w of waiters) w.reject(new ReadUnavailable('the node is stopping'));
  }

  private finish(key: string, index: number | null): void {
    if (!this.inflight || this.inflight.key !== key) return;
    const { waiters, timer } = this.inflight;
    this.clock.clear(timer);
    this.inflight = null;
    for (const w of waiters) {
      if (index === null) w.reject(new ReadUnavailable('no leader confirmed the read'));
      else w.resolve(index);
    }
    this.flush();
  }
}

/** Resolves waiters once the state machine has applied a given index. */
export class AppliedWaiters {
  private waiters: { index: number; resolve: () => void }[] = [];

  wait(index: number, applied: number): Promise<void> {
    if (index <= applied) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ index, resolve }));
  }

  advance(applied: number): void {
    if (this.waiters.length === 0) return;
    const keep: typeof this.waiters = [];
    for (const w of this.waiters) (w.index <= applied ? w.resolve() : keep.push(w));
    this.waiters = keep;
  }
}
