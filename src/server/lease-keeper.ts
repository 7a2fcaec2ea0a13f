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
  ttlMs: number;
  deadline: number;
  /** Bumped on every renewal, so stale heap entries are recognised and skipped. */
  version: number;
  /** When we last proposed its expiry (0 = never); re-proposed if that did not commit. */
  proposedAt: number;
}

export class LeaseKeeper {
  private readonly leases = new Map<number, Lease>();
  private readonly heap = new MinHeap<{ deadline: number; session: number; version: number }>((a, b) => a.deadline - b.deadline);
  private active = false;
  /** The last pause's end: no lease whose expiry is not yet proposed runs out before
   *  graceFrom + its TTL (see due and remainingMs). */
  private graceFrom = Number.NEGATIVE_INFINITY;

  constructor(private readonly reproposeAfterMs: number) {}

  get isActive(): boolean {
    return this.active;
  }

  get size(): number {
    return this.leases.size;
  }

  /** This node became leader: every known session gets a full TTL from now. */
  activate(now: number, sessions: Iterable<{ id: number; ttlMs: number }>): void {
    this.active = true;
    this.leases.clear();
    this.heap.clear();
    this.graceFrom = Number.NEGATIVE_INFINITY;
    for (const s of sessions) this.track(s.id, s.ttlMs, now);
  }

  deactivate(): void {
    this.active = false;
    this.leases.clear();
    this.heap.clear();
    this.graceFrom = Number.NEGATIVE_INFINITY;
  }

  /** The leader resumed from a pause longer than an election timeout: grace for everyone
   *  whose expiry is not proposed yet. O(1); due() applies it. An expiry already proposed
   *  stays proposed (and keepalives of that session stay refused): the entry may commit. */
  graceAll(now: number): void {
    this.graceFrom = Math.max(this.graceFrom, now);
  }

  track(session: number, ttlMs: number, now: number): void {
    if (!this.active) return;
    const l: Lease = { ttlMs, deadline: 0, version: 0, proposedAt: 0 };
    this.leases.set(session, l);
    this.renew(session, l, now);
  }

  forget(session: number): void {
    this.leases.delete(session);
  }

  /**
   * A keepalive that arrived at `receivedAt`, confirmed by a heartbeat round since. Null
   * when the session is unknown or its expiry has already been proposed: acknowledging it
   * then would let the client believe in a lease that the committed expiry is about to end.
   */
  keepAlive(session: number, receivedAt: number): number | null {
    const l = this.leases.get(session);
    if (!l || l.proposedAt > 0) return null;
    // Never move a deadline backwards: an older keepalive confirmed late must not shorten it.
    if (receivedAt + l.ttlMs > l.deadline) this.renew(session, l, receivedAt);
    return l.ttlMs;
  }

  /** Time left on the leader's deadline for `session` (ms, not below 0); null when this
   *  node keeps no deadlines (not leading) or does not know the session. */
  remainingMs(session: number, now: number): number | null {
    const l = this.leases.get(session);
    return this.active && l ? Math.max(0, this.deadlineOf(l) - now) : null;
  }

  has(session: number): boolean {
    return this.leases.has(session);
  }

  /** Sessions whose deadline has passed and whose expiry should be proposed now. */
  due(now: number): number[] {
    const out: number[] = [];
    while (this.heap.size > 0 && this.heap.peek()!.deadline <= now) {
      const top = this.heap.pop()!;
      const l = this.leases.get(top.session);
      if (!l || l.version !== top.version) continue;
      if (l.proposedAt === 0 && this.deadlineOf(l) > now) {
        // A grace since its last keepalive: it runs until graceFrom + TTL.
        this.renew(top.session, l, this.graceFrom);
        continue;
      }
      out.push(top.session);
      l.proposedAt = now;
      // If the proposal is lost (leadership churn), propose again later.
      this.heap.push({ deadline: now + this.reproposeAfterMs, session: top.session, version: l.version });
    }
    return out;
  }

  /** When the lease runs out: its last keepalive's deadline, or the grace's if later. */
  private deadlineOf(l: Lease): number {
    return l.proposedAt > 0 ? l.deadline : Math.max(l.deadline, this.graceFrom + l.ttlMs);
  }

  private renew(session: number, l: Lease, from: number): void {
    l.deadline = from + l.ttlMs;
    l.version++;
    l.proposedAt = 0;
    this.heap.push({ deadline: l.deadline, session, version: l.version });
    // Stale entries pile up with renewals; rebuild when they dominate.
    if (this.heap.size > 4 * this.leases.size + 1024) this.rebuild();
  }

  private rebuild(): void {
    this.heap.clear();
    for (const [session, l] of this.leases) this.heap.push({ deadline: l.deadline, session, version: l.version });
  }
}
