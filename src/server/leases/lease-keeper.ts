// The leader's view of session leases, on its monotonic clock. Only the leader keeps
// deadlines; it never expires a session itself, it proposes ExpireSession, and only the
// committed entry ends the session (docs/internals.md, "Timing and safety").
//
//   server deadline = time the leader received the last confirmed keepalive + TTL
//
// A new leader (or a leader that finds its own clock jumped past an election timeout, i.e.
// it was paused) gives every session a full TTL from now before expiring any.
//
// The grace after a pause is one number (graceFrom), applied to a lease only when its
// deadline comes up: renewing every lease at once allocated a heap entry per session, and
// at 150,000 sessions that work and its garbage paused the leader past an election timeout
// again, so it granted another grace, and so on until it lost leadership.
import { MinHeap } from './min-heap.js';

interface Lease {
  readonly session: number;
  readonly ttlMs: number;
  /** When the lease runs out, from its last confirmed keepalive (see deadlineOf for grace). */
  deadline: number;
  /** When we last proposed its expiry (0 = never); re-proposed if that did not commit. */
  proposedAt: number;
  /** Its place in the heap: when to look at it next. Never after its deadline. */
  checkAt: number;
}

/** Leases a new leader makes per expiry round (see activate). */
const ACTIVATION_SLICE = 20_000;

/** The sessions a new leader has not made a lease for yet (see activate). */
interface PendingActivation {
  readonly at: number;
  readonly sessions: Iterator<{ readonly session: number; readonly ttlMs: number }>;
  readonly ttlOf: (session: number) => number | undefined;
}

/**
 * Each lease sits in the heap once, keyed by when to look at it next. A keepalive only moves
 * the lease's deadline; the heap is touched when a lease's check comes up and its deadline
 * has moved on since (once a TTL for a session kept alive every TTL/3), not on every
 * keepalive: a heap entry per keepalive was an allocation and a sift per keepalive, and at
 * 30,000 keepalives/s a rebuild of a heap of a million stale entries every half minute.
 */
export class LeaseKeeper {
  private readonly leases = new Map<number, Lease>();
  private readonly heap = new MinHeap<Lease>((a, b) => a.checkAt - b.checkAt);
  private active = false;
  /** The last pause's end: no lease whose expiry is not yet proposed runs out before
   *  graceFrom + its TTL (see due and remainingMs). */
  private graceFrom = Number.NEGATIVE_INFINITY;
  private pending: PendingActivation | null = null;

  constructor(private readonly reproposeAfterMs: number) {}

  get isActive(): boolean {
    return this.active;
  }

  get size(): number {
    return this.leases.size;
  }

  /**
   * This node became leader: every known session gets a full TTL from now. The leases are
   * made a slice per expiry round (due), or at once for a session asked about (its
   * keepalive, its view): at 1,000,000 sessions, making them all here held the new leader's
   * loop 340-620 ms before its first heartbeat, past the election timeout, and leadership
   * went round the cluster (term 2 → 69 in one bench run). A session not made yet has the
   * full TTL from `now` all the same; none can come due before now + the shortest TTL, and
   * the slices are done long before (20,000 a round, a round every 10-100 ms).
   * `ttlOf`: a session's TTL, undefined when it is not open.
   */
  activate(now: number, sessions: Iterable<{ readonly session: number; readonly ttlMs: number }>, ttlOf: (session: number) => number | undefined): void {
    this.active = true;
    this.leases.clear();
    this.heap.clear();
    this.graceFrom = Number.NEGATIVE_INFINITY;
    this.pending = { at: now, sessions: sessions[Symbol.iterator](), ttlOf };
    this.activateSlice();
  }

  deactivate(): void {
    this.active = false;
    this.leases.clear();
    this.heap.clear();
    this.graceFrom = Number.NEGATIVE_INFINITY;
    this.pending = null;
  }

  /** Whether some sessions have no lease yet (activate). */
  get activating(): boolean {
    return this.pending !== null;
  }

  /** Makes the next slice of a new leader's leases. A session already made (asked about,
   *  or opened since) is skipped, and so is one closed since (ttlOf: not open). */
  private activateSlice(): void {
    const p = this.pending;
    if (!p) return;
    for (let i = 0; i < ACTIVATION_SLICE; i++) {
      const n = p.sessions.next();
      if (n.done) {
        this.pending = null;
        return;
      }
      const { session, ttlMs } = n.value;
      if (!this.leases.has(session) && p.ttlOf(session) !== undefined) this.track(session, ttlMs, p.at);
    }
  }

  /** The lease of `session`, made now if activation has not reached it yet. */
  private lease(session: number): Lease | undefined {
    const l = this.leases.get(session);
    if (l || !this.pending) return l;
    const ttlMs = this.pending.ttlOf(session);
    if (ttlMs === undefined) return undefined;
    this.track(session, ttlMs, this.pending.at);
    return this.leases.get(session);
  }

  /** The leader resumed from a pause longer than an election timeout: grace for everyone
   *  whose expiry is not proposed yet. O(1); due() applies it. An expiry already proposed
   *  stays proposed (and keepalives of that session stay refused): the entry may commit. */
  graceAll(now: number): void {
    this.graceFrom = Math.max(this.graceFrom, now);
  }

  track(session: number, ttlMs: number, now: number): void {
    if (!this.active) return;
    const l: Lease = { session, ttlMs, deadline: now + ttlMs, proposedAt: 0, checkAt: now + ttlMs };
    this.leases.set(session, l);
    this.heap.push(l);
  }

  /** Its heap entry stays until it comes up, and is dropped then (see due). */
  forget(session: number): void {
    this.leases.delete(session);
  }

  /**
   * A keepalive that arrived at `receivedAt`, confirmed by a heartbeat round since. Null
   * when the session is unknown or its expiry has already been proposed: acknowledging it
   * then would let the client believe in a lease that the committed expiry is about to end.
   */
  keepAlive(session: number, receivedAt: number): number | null {
    const l = this.lease(session);
    if (!l || l.proposedAt > 0) return null;
    // Never move a deadline backwards: an older keepalive confirmed late must not shorten it.
    l.deadline = Math.max(l.deadline, receivedAt + l.ttlMs);
    return l.ttlMs;
  }

  /** Time left on the leader's deadline for `session` (ms, not below 0); null when this
   *  node keeps no deadlines (not leading) or does not know the session. */
  remainingMs(session: number, now: number): number | null {
    const l = this.lease(session);
    return this.active && l ? Math.max(0, this.deadlineOf(l) - now) : null;
  }

  /** When the lease was last renewed on this leader's clock (its last keepalive, or the
   *  grace of this leader taking office or resuming); null as for remainingMs. */
  renewedAt(session: number): number | null {
    const l = this.lease(session);
    return this.active && l ? this.deadlineOf(l) - l.ttlMs : null;
  }

  has(session: number): boolean {
    return this.lease(session) !== undefined;
  }

  /** Sessions whose deadline has passed and whose expiry should be proposed now. */
  due(now: number): number[] {
    this.activateSlice();
    const out: number[] = [];
    while (this.heap.size > 0 && this.heap.peek()!.checkAt <= now) {
      const l = this.heap.pop()!;
      if (this.leases.get(l.session) !== l) continue; // forgotten (closed, expired, re-tracked)
      const deadline = this.deadlineOf(l);
      if (deadline > now) {
        // Kept alive (or graced) since it was queued: look again at its new deadline.
        l.checkAt = deadline;
      } else {
        // Run out, or proposed and not committed yet (leadership churn): propose (again).
        out.push(l.session);
        l.proposedAt = now;
        l.checkAt = now + this.reproposeAfterMs;
      }
      this.heap.push(l);
    }
    return out;
  }

  /** When the lease runs out: its last keepalive's deadline, or the grace's if later; an
   *  expiry already proposed is not graced. */
  private deadlineOf(l: Lease): number {
    return l.proposedAt > 0 ? l.deadline : Math.max(l.deadline, this.graceFrom + l.ttlMs);
  }
}
