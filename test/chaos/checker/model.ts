// The sequential specification the history is checked against: one lock (or election,
// which the service builds on a lock) and, separately, one fenced resource.
//
// States are immutable and carry a canonical `key`, so the search can memoise
// (linearized set, state) pairs. The model only ever *permits* what the service could
// have done: where the service may legitimately refuse or delay (lock-delay after an
// expiry, FIFO waiters) the model accepts both answers, so that a verdict of "not
// linearizable" is always a real bug.

import type { LockMode } from './history.js';

export interface StepResult<S> {
  ok: boolean;
  state: S;
}

/** What the search tells a model about operations not yet linearized or dropped. */
export interface PendingView {
  /** How many pending operations carry `tag` (see Model.tags). */
  count(tag: string): number;
  /** How many pending definite operations (they must still take effect) carry `tag`. */
  countDefinite(tag: string): number;
}

export interface Model<S, O> {
  readonly initial: S;
  step(state: S, op: O): StepResult<S>;
  key(state: S): string;
  describe(state: S): string;
  /**
   * True when `op` can be linearized neither in `state` nor in any state reachable from
   * it. The search then drops an optional operation at once (merging branches that differ
   * only in whether it was tried) and abandons a branch with a definite one.
   */
  isDead?(state: S, op: O, pending: PendingView): boolean;
  /**
   * For an optional operation: true when, from `state`, any way to finish the history in
   * which `op` happens has a counterpart in which it does not — so the search may assume
   * it did not. Must stay true in every state reachable from `state`.
   */
  isRedundant?(state: S, op: O, pending: PendingView): boolean;
  /** True when some pending definite operation can never take effect from `state`: the branch is lost. */
  isDoomed?(state: S, pending: PendingView): boolean;
  /** The state with what no pending operation can observe forgotten, so that equivalent branches share memo entries. */
  canonical?(state: S, pending: PendingView): S;
  /** Labels the search counts over pending operations, for isDead and canonical. */
  tags?(op: O): readonly string[];
}

// ---------------------------------------------------------------------------------------
// Lock / election

export interface Holder {
  readonly session: string;
  /** null when the grant came from an operation whose answer was lost. */
  readonly token: number | null;
  readonly mode: LockMode;
  /** Canonical JSON of an election leader's value; null for plain locks. */
  readonly value: string | null;
}

export interface LockState {
  /** Sorted by session. */
  readonly holders: readonly Holder[];
  /** A fresh grant needs a token >= this: tokens are log indexes and only grow. */
  readonly nextToken: number;
  /**
   * Token of the last state change when it was a shared grant: one log entry (a release
   * handing the lock to several queued readers) may grant several shared holders at the
   * same index, so the next shared grant may reuse it.
   */
  readonly openSharedToken: number | null;
  /**
   * Set when an expiry freed a holder: lock-delay may keep the lock unavailable until the
   * next grant, so a refusal is then acceptable even though nobody holds it.
   */
  readonly delayed: boolean;
  /** Sessions that have expired (sorted): they can never be granted again. */
  readonly expired: readonly string[];
  readonly key: string;
}

export type LockModelOp =
  /** acquire / tryAcquire granted / campaign. token null when the answer was lost. */
  | { type: 'grant'; session: string; mode: LockMode; limit: number; token: number | null; value: string | null }
  /** tryAcquire answered {granted:false}. */
  | { type: 'refuse' }
  /** release / resign. token null: any grant of the session (resign without a token). */
  | { type: 'release'; session: string; token: number | null }
  /** read: holders sorted by session. */
  | { type: 'read'; holders: readonly { session: string; token: number }[] }
  | { type: 'expire'; session: string }
  | { type: 'proclaim'; session: string; token: number | null; value: string }
  | { type: 'readLeader'; leader: { session: string; token: number; value: string } | null };

export function makeLockState(
  holders: readonly Holder[],
  nextToken: number,
  openSharedToken: number | null,
  delayed: boolean,
  expired: readonly string[],
): LockState {
  // JSON keeps the key unambiguous whatever characters session ids contain.
  const parts: unknown[] = [];
  for (const h of holders) parts.push(h.session, h.token, h.mode === 'shared' ? 1 : 0, h.value);
  const key = JSON.stringify([parts, Number.isFinite(nextToken) ? nextToken : null, openSharedToken, delayed ? 1 : 0, expired]);
  return { holders, nextToken, openSharedToken, delayed, expired, key };
}

export const INITIAL_LOCK_STATE: LockState = makeLockState([], Number.NEGATIVE_INFINITY, null, false, []);

// The helpers below run inside the search's inner loop: plain loops, no closures.

function holderIndex(holders: readonly Holder[], session: string): number {
  for (let i = 0; i < holders.length; i++) if (holders[i]!.session === session) return i;
  return -1;
}

/** holders without index `skip`, plus `add` (if any), kept sorted by session. */
function rebuildHolders(holders: readonly Holder[], skip: number, add: Holder | undefined): Holder[] {
  const out: Holder[] = [];
  let placed = add === undefined;
  for (let i = 0; i < holders.length; i++) {
    if (i === skip) continue;
    const h = holders[i]!;
    if (!placed && add!.session < h.session) {
      out.push(add!);
      placed = true;
    }
    out.push(h);
  }
  if (!placed) out.push(add!);
  return out;
}

function insertSorted(list: readonly string[], item: string): string[] {
  return [...list, item].sort();
}

function ok(state: LockState): StepResult<LockState> {
  return { ok: true, state };
}
function no(state: LockState): StepResult<LockState> {
  return { ok: false, state };
}

function tokenMatches(held: number | null, asked: number | null): boolean {
  return held === null || asked === null || held === asked;
}

function stepGrant(s: LockState, op: Extract<LockModelOp, { type: 'grant' }>): StepResult<LockState> {
  if (s.expired.includes(op.session)) return no(s);
  const ownAt = holderIndex(s.holders, op.session);
  if (ownAt >= 0) {
    const own = s.holders[ownAt]!;
    if (own.mode !== op.mode) return no(s);
    // A second answer for a grant the session already holds (the service answers a
    // retried or repeated acquire with the first grant).
    if (op.token === null || own.token === op.token) return ok(s);
    // The session holds through an operation whose answer was lost; this answer names
    // the token. It is still a grant made at a log index, so it obeys token order.
    if (own.token === null && op.token >= s.nextToken) {
      const pinned: Holder = { session: own.session, token: op.token, mode: own.mode, value: op.value ?? own.value };
      return ok(makeLockState(rebuildHolders(s.holders, ownAt, pinned), op.token + 1, op.mode === 'shared' ? op.token : null, s.delayed, s.expired));
    }
    return no(s);
  }
  if (op.token !== null && !(op.token >= s.nextToken || (op.mode === 'shared' && op.token === s.openSharedToken))) return no(s);
  if (op.mode === 'exclusive') {
    if (s.holders.length > 0) return no(s);
  } else {
    let shared = 0;
    for (const h of s.holders) {
      if (h.mode === 'exclusive') return no(s);
      shared++;
    }
    if (shared >= op.limit) return no(s);
  }
  const holders = rebuildHolders(s.holders, -1, { session: op.session, token: op.token, mode: op.mode, value: op.value });
  // A grant whose token was never seen does not move nextToken: we cannot know its index,
  // and guessing would reject histories the service could have produced.
  const nextToken = op.token === null ? s.nextToken : Math.max(s.nextToken, op.token + 1);
  const openShared = op.mode === 'shared' ? (op.token ?? s.openSharedToken) : null;
  return ok(makeLockState(holders, nextToken, openShared, false, s.expired));
}

/** Index of the holder a release/proclaim by `session` naming `token` refers to, or -1. */
function heldBy(s: LockState, session: string, token: number | null): number {
  const i = holderIndex(s.holders, session);
  return i >= 0 && tokenMatches(s.holders[i]!.token, token) ? i : -1;
}

export function stepLock(s: LockState, op: LockModelOp): StepResult<LockState> {
  switch (op.type) {
    case 'grant':
      return stepGrant(s, op);
    case 'refuse':
      // Refusing while the lock is free is only legitimate under lock-delay. With holders
      // present a refusal is always possible (shared: a queued exclusive waiter goes first).
      return s.holders.length > 0 || s.delayed ? ok(s) : no(s);
    case 'release': {
      const i = heldBy(s, op.session, op.token);
      if (i < 0) return no(s);
      return ok(makeLockState(rebuildHolders(s.holders, i, undefined), s.nextToken, null, s.delayed, s.expired));
    }
    case 'read': {
      if (op.holders.length !== s.holders.length) return no(s);
      for (let i = 0; i < op.holders.length; i++) {
        const seen = op.holders[i]!;
        const held = s.holders[i]!;
        if (seen.session !== held.session || !tokenMatches(held.token, seen.token)) return no(s);
      }
      return ok(s);
    }
    case 'expire': {
      if (s.expired.includes(op.session)) return ok(s); // the same expiry seen twice
      const i = holderIndex(s.holders, op.session);
      const freed = i >= 0;
      // An expiry that frees nothing leaves openSharedToken alone (permissive), so that it
      // is a pure no-op once nobody can act for the session any more.
      return ok(
        makeLockState(
          freed ? rebuildHolders(s.holders, i, undefined) : s.holders,
          s.nextToken,
          freed ? null : s.openSharedToken,
          s.delayed || freed,
          insertSorted(s.expired, op.session),
        ),
      );
    }
    case 'proclaim': {
      const i = heldBy(s, op.session, op.token);
      if (i < 0) return no(s);
      const h = s.holders[i]!;
      const updated: Holder = { session: h.session, token: h.token, mode: h.mode, value: op.value };
      return ok(makeLockState(rebuildHolders(s.holders, i, updated), s.nextToken, s.openSharedToken, s.delayed, s.expired));
    }
    case 'readLeader': {
      if (op.leader === null) return s.holders.length === 0 ? ok(s) : no(s);
      if (s.holders.length !== 1) return no(s);
      const h = s.holders[0]!;
      const seen = op.leader;
      return h.session === seen.session && tokenMatches(h.token, seen.token) && (h.value === null || h.value === seen.value)
        ? ok(s)
        : no(s);
    }
  }
}

export function describeLockState(s: LockState): string {
  const holders =
    s.holders.length === 0
      ? 'free'
      : s.holders
          .map((h) => `${h.session}@${h.token ?? '?'}${h.mode === 'shared' ? ' (shared)' : ''}${h.value === null ? '' : ` value=${h.value}`}`)
          .join(', ');
  const parts = [`holders: ${holders}`];
  if (Number.isFinite(s.nextToken)) parts.push(`next token >= ${s.nextToken}`);
  if (s.delayed) parts.push('possibly in lock-delay');
  if (s.expired.length > 0) parts.push(`expired sessions: ${s.expired.join(', ')}`);
  return parts.join('; ');
}

// Tags the search counts over pending operations (see PendingView):
//   act:<s>      operations acting for session s (grant, release, proclaim)
//   free:<s>     operations that can free s's hold (release, expiry)
//   holds:<s>    operations that need s to hold the lock (release, proclaim)
//   grant, grant:<s>, grantX, grantX:<s>   grants (X: exclusive), overall and per session
//   grantT:[s,t], grantU:<s>   grants of s with token t, and with a token never seen
//   observe, shows:<s>   reads of holders / leader, overall and those that show s
//   refuse       refused tryAcquires
const ACT = 'act:';
const FREE = 'free:';
const HOLDS = 'holds:';
const GRANT_BY = 'grant:';
const GRANT_UNSEEN = 'grantU:';
const grantTokenTag = (session: string, token: number): string => `grantT:${JSON.stringify([session, token])}`;
const GRANT_X_BY = 'grantX:';
const SHOWS = 'shows:';

export function lockOpTags(op: LockModelOp): readonly string[] {
  switch (op.type) {
    case 'grant':
      return op.mode === 'exclusive'
        ? [ACT + op.session, 'grant', GRANT_BY + op.session, 'grantX', GRANT_X_BY + op.session, grantIdentityTag(op.session, op.token)]
        : [ACT + op.session, 'grant', GRANT_BY + op.session, grantIdentityTag(op.session, op.token)];
    case 'proclaim':
      return [ACT + op.session, HOLDS + op.session];
    case 'release':
      return [ACT + op.session, FREE + op.session, HOLDS + op.session];
    case 'expire':
      return [FREE + op.session];
    case 'read':
      return ['observe', ...op.holders.map((h) => SHOWS + h.session)];
    case 'readLeader':
      return op.leader === null ? ['observe'] : ['observe', SHOWS + op.leader.session];
    case 'refuse':
      return ['refuse'];
  }
}

/** A holder nobody can ever free: no release or expiry of its session is pending. */
function isStuck(h: Holder, pending: PendingView): boolean {
  return pending.count(FREE + h.session) === 0;
}

function grantIdentityTag(session: string, token: number | null): string {
  return token === null ? GRANT_UNSEEN + session : grantTokenTag(session, token);
}

/**
 * Whether `session` may hold the lock with `token` (null: any token) now or later: it
 * has not expired, and it holds such a grant now (a grant whose token was never seen
 * matches any), or a grant that could produce one is pending.
 */
function canStillHold(s: LockState, session: string, token: number | null, pending: PendingView): boolean {
  if (s.expired.includes(session)) return false;
  const i = holderIndex(s.holders, session);
  if (i >= 0 && tokenMatches(s.holders[i]!.token, token)) return true;
  if (token === null) return pending.count(GRANT_BY + session) > 0;
  return pending.count(grantTokenTag(session, token)) > 0 || pending.count(GRANT_UNSEEN + session) > 0;
}

/**
 * Monotone facts make operations impossible for good: an expired session never holds
 * again, nor does one that holds nothing with no grant of it pending; nextToken never
 * decreases (so a fresh grant below it never happens); and a holder with no pending
 * release or expiry holds until the end.
 */
export function isLockOpDead(s: LockState, op: LockModelOp, pending: PendingView): boolean {
  switch (op.type) {
    case 'grant': {
      if (s.expired.includes(op.session)) return true;
      let ownHasToken = false;
      for (const h of s.holders) {
        if (h.session === op.session) {
          ownHasToken = h.token === op.token;
          continue;
        }
        if ((h.mode === 'exclusive' || op.mode === 'exclusive') && isStuck(h, pending)) return true;
      }
      return op.token !== null && op.token < s.nextToken && !(op.mode === 'shared' && op.token === s.openSharedToken) && !ownHasToken;
    }
    case 'release':
    case 'proclaim':
      return !canStillHold(s, op.session, op.token, pending);
    case 'expire':
      return false; // an expiry can always happen (a repeated one is a no-op)
    case 'read': {
      for (const seen of op.holders) if (!canStillHold(s, seen.session, seen.token, pending)) return true;
      for (const h of s.holders) {
        if (!isStuck(h, pending)) continue;
        let shown = false;
        for (const seen of op.holders) if (seen.session === h.session) shown = true;
        if (!shown) return true;
      }
      return false;
    }
    case 'readLeader':
      if (op.leader !== null && !canStillHold(s, op.leader.session, op.leader.token, pending)) return true;
      for (const h of s.holders) if (isStuck(h, pending) && h.session !== op.leader?.session) return true;
      return false;
    case 'refuse':
      return false;
  }
}

/**
 * Optional operations that may be assumed not to have happened:
 *  - an expiry of a session already expired, or of one holding nothing that nobody will
 *    act for any more: it would only add the session to a set nobody consults;
 *  - a grant whose hold nothing pending needs: no definite read shows the session, no
 *    definite release/proclaim/grant of the session needs it to hold, and no definite
 *    refusal could use a busy lock. Taking it out of any linearization keeps the others
 *    valid (fewer holders never hurt a grant; reads that ran while it held would have
 *    shown it). This is what keeps lost acquires of sessions that later expired from
 *    multiplying the search: each would otherwise stay pending as a live option forever.
 */
export function isLockOpRedundant(s: LockState, op: LockModelOp, pending: PendingView): boolean {
  switch (op.type) {
    case 'expire':
      return s.expired.includes(op.session) || (pending.count(ACT + op.session) === 0 && holderIndex(s.holders, op.session) < 0);
    case 'grant':
      return (
        holderIndex(s.holders, op.session) < 0 &&
        pending.countDefinite(SHOWS + op.session) === 0 &&
        pending.countDefinite(HOLDS + op.session) === 0 &&
        pending.countDefinite(GRANT_BY + op.session) === 0 &&
        pending.countDefinite('refuse') === 0
      );
    default:
      return false;
  }
}

/**
 * Some pending definite operation can never take effect from this state: a holder nobody
 * can free blocks every definite grant to another session that conflicts with it and
 * every definite read that does not show it; an expired session can no longer act.
 */
export function isLockStateDoomed(s: LockState, pending: PendingView): boolean {
  for (const h of s.holders) {
    if (!isStuck(h, pending)) continue;
    const blockedGrants =
      h.mode === 'exclusive'
        ? pending.countDefinite('grant') - pending.countDefinite(GRANT_BY + h.session)
        : pending.countDefinite('grantX') - pending.countDefinite(GRANT_X_BY + h.session);
    if (blockedGrants > 0) return true;
    if (pending.countDefinite('observe') > pending.countDefinite(SHOWS + h.session)) return true;
  }
  for (const session of s.expired) if (pending.countDefinite(ACT + session) > 0) return true;
  return false;
}

/** Expired sessions matter only to operations acting for them; forget those with none pending. */
export function canonicalLockState(s: LockState, pending: PendingView): LockState {
  if (s.expired.length === 0) return s;
  let keep = 0;
  for (const session of s.expired) if (pending.count(ACT + session) > 0) keep++;
  if (keep === s.expired.length) return s;
  const expired: string[] = [];
  for (const session of s.expired) if (pending.count(ACT + session) > 0) expired.push(session);
  return makeLockState(s.holders, s.nextToken, s.openSharedToken, s.delayed, expired);
}

export const lockModel: Model<LockState, LockModelOp> = {
  initial: INITIAL_LOCK_STATE,
  step: stepLock,
  key: (s) => s.key,
  describe: describeLockState,
  isDead: isLockOpDead,
  isRedundant: isLockOpRedundant,
  isDoomed: isLockStateDoomed,
  canonical: canonicalLockState,
  tags: lockOpTags,
};

// ---------------------------------------------------------------------------------------
// Fenced resource: a register of the highest token accepted. It is its own object (the
// resource is not the lock service), so it is checked apart from the lock it guards.

export interface FenceState {
  /** Highest token accepted so far; null before the first accepted write. */
  readonly fence: number | null;
  readonly key: string;
}

export type FenceModelOp =
  | { type: 'accept'; token: number }
  /** fence: the resource's reported fence, null when unknown (then not compared). */
  | { type: 'reject'; token: number; fence: number | null };

export function makeFenceState(fence: number | null): FenceState {
  return { fence, key: fence === null ? '-' : String(fence) };
}

export const INITIAL_FENCE_STATE: FenceState = makeFenceState(null);

export function stepFence(s: FenceState, op: FenceModelOp): StepResult<FenceState> {
  if (op.type === 'accept') {
    // A token equal to the fence is the same holder writing again.
    if (s.fence !== null && op.token < s.fence) return { ok: false, state: s };
    return { ok: true, state: s.fence === op.token ? s : makeFenceState(op.token) };
  }
  const legit = s.fence !== null && op.token < s.fence && (op.fence === null || op.fence === s.fence);
  return { ok: legit, state: s };
}

export const fenceModel: Model<FenceState, FenceModelOp> = {
  initial: INITIAL_FENCE_STATE,
  step: stepFence,
  key: (s) => s.key,
  describe: (s) => (s.fence === null ? 'no write accepted yet' : `highest accepted token ${s.fence}`),
  // The fence only grows: a token below it is refused for good, a reported fence below it is stale for good.
  isDead: (s, op) => s.fence !== null && (op.type === 'accept' ? op.token < s.fence : op.fence !== null && op.fence < s.fence),
};
