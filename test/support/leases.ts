// Lease keepers in unit tests.
import type { LeaseKeeper } from '../../src/server/leases/lease-keeper.js';

/** Activates `k` as a new leader with `sessions`, each session's TTL looked up in the same list. */
export function activateAll(k: LeaseKeeper, now: number, sessions: readonly { session: number; ttlMs: number }[]): void {
  k.activate(now, sessions, (s) => sessions.find((x) => x.session === s)?.ttlMs);
}
