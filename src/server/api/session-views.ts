// Sessions as an operator sees them (`sessions`, `sessionInfo`; `palisade session list|show`,
// the status page): the lock machine's view of each session (owner, label, TTL, what it
// holds, waits for, leads and ties) with the leader's view of its lease (how long since it
// was renewed, how much is left). Only the leader keeps lease deadlines, so these reads are
// answered by the leader (a follower forwards them).
import type { LockMachine, SessionInfo } from '../../lockfsm/index.js';
import type { SessionView } from '../../protocol/client-protocol.js';

/** The leader's lease clock, as far as a view needs it (LeaseKeeper). */
export interface LeaseClock {
  renewedAt(session: number): number | null;
  remainingMs(session: number, now: number): number | null;
}

/** Sessions a listing shows at most when it does not say, and at most whatever it says. */
export const DEFAULT_SESSIONS_LIMIT = 1000;
export const MAX_SESSIONS_LIMIT = 10_000;
/** Names (locks, waits, elections, keys) one listing carries at most: a page stops early
 *  rather than make the leader build, and the client read, an answer of millions of names
 *  (a token may hold 10,000 sessions of 1,000 locks each). Ask again with `after`. */
export const MAX_NAMES_PER_LISTING = 100_000;

export function sessionView(s: SessionInfo, leases: LeaseClock, now: number): SessionView {
  const renewed = leases.renewedAt(s.id);
  return {
    session: s.id,
    label: s.label,
    owner: s.owner,
    ttlMs: s.ttlMs,
    sinceKeepAliveMs: renewed === null ? null : Math.max(0, Math.round(now - renewed)),
    leaseLeftMs: (() => {
      const left = leases.remainingMs(s.id, now);
      return left === null ? null : Math.round(left);
    })(),
    locks: s.locks.map((l) => ({ name: l.name, token: l.token, mode: l.mode })),
    waits: s.waits.map((w) => ({ name: w.name, mode: w.mode })),
    elections: s.elections,
    ephemeralKeys: s.ephemeralKeys,
  };
}

/** Open sessions with ids above `after`, by id, whose label starts with `prefix` (a session
 *  without a label matches only the empty prefix) and, when given, opened by `owner`: at most
 *  `limit` (capped at MAX_SESSIONS_LIMIT) and, after the first, MAX_NAMES_PER_LISTING names.
 *  O(sessions). */
export function sessionViews(
  machine: LockMachine,
  leases: LeaseClock,
  now: number,
  q: { readonly prefix?: string; readonly owner?: string; readonly limit?: number; readonly after?: number },
): SessionView[] {
  const prefix = q.prefix ?? '';
  const out: SessionView[] = [];
  const limit = Math.min(q.limit ?? DEFAULT_SESSIONS_LIMIT, MAX_SESSIONS_LIMIT);
  let names = 0;
  // The machine keeps sessions in the order they were opened: by id. The full view (its
  // lock lists) is built only for the sessions shown.
  for (const lease of machine.sessionLeases()) {
    if (out.length >= limit || (out.length > 0 && names >= MAX_NAMES_PER_LISTING)) break;
    if (q.after !== undefined && lease.session <= q.after) continue;
    if (q.owner !== undefined && machine.sessionOwner(lease.session) !== q.owner) continue;
    if (prefix !== '' && !(lease.label ?? '').startsWith(prefix)) continue;
    const view = sessionView(machine.session(lease.session)!, leases, now);
    names += view.locks.length + view.waits.length + view.elections.length + view.ephemeralKeys.length;
    out.push(view);
  }
  return out;
}
