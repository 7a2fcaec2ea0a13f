// The leader's side of a follower's keepalive batch (keepalive-batch.ts sends it, forwarding.ts
// carries it): how many sessions one batch may name, and what the leader answers.
import type { Answer } from '../../protocol/ops.js';

/** The most sessions one batch carries (the leader refuses a longer one): a batch that
 *  reaches it is sent at once rather than at the end of its window. */
export const MAX_LEASE_BATCH = 10_000;

/** Each session's TTL in the batch's order, or null for a session the leader keeps no lease for. */
export type LeaseAnswer = { readonly ok: true; readonly result: { readonly ttls: readonly (number | null)[] } } | Answer<never>;
