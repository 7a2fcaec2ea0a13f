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

export interface Model<S, O> {
  readonly initial: S;
  step(state: S, op: O): StepResult<S>;
  key(state: S): string;
  describe(state: S): string;
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
  const key = JSON.stringify([
    holders.map((h) => [h.session, h.token, h.mode === 'shared' ? 1 : 0, h.value]),
    Number.isFinite(nextToken) ? nextToken : null,
    openSharedToken,
    delayed ? 1 : 0,
    expired,
  ]);
  return { holders, nextToken, openSharedToken, delayed, expired, key };
}

export const INITIAL_LOCK_STATE: LockState = makeLockState([], Number.NEGATIVE_INFINITY, null, false, []);

const bySession = (a: { session: string }, b: { session: string }): number =>
  a.session < b.session ? -1 : a.session > b.session ? 1 : 0;

function withHolder(holders: readonly Holder[], holder: Holder): Holder[] {
  return [...holders.filter((h) => h.session !== holder.session), holder].sort(bySession);
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
  const own = s.holders.find((h) => h.session === op.session);
  if (own !== undefined) {
    if (own.mode !== op.mode) return no(s);
    // A second answer for a grant the session already holds (the service answers a
    // retried or repeated acquire with the first grant).
    if (op.token === null || own.token === op.token) return ok(s);
    // The session holds through an operation whose answer was lost; this answer names
    // the token. It is still a grant made at a log index, so it obeys token order.
    if (own.token === null && op.token >= s.nextToken) {
      return ok(
        makeLockState(
          withHolder(s.holders, { ...own, token: op.token, value: op.value ?? own.value }),
          op.token + 1,
          op.mode === 'shared' ? op.token : null,
          s.delayed,
          s.expired,
        ),
      );
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
  const holders = withHolder(s.holders, { session: op.session, token: op.token, mode: op.mode, value: op.value });
  // A grant whose token was never seen does not move nextToken: we cannot know its index,
  // and guessing would reject histories the service could have produced.
  const nextToken = op.token === null ? s.nextToken : Math.max(s.nextToken, op.token + 1);
  const openShared = op.mode === 'shared' ? (op.token ?? s.openSharedToken) : null;
  return ok(makeLockState(holders, nextToken, openShared, false, s.expired));
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
      const i = s.holders.findIndex((h) => h.session === op.session && tokenMatches(h.token, op.token));
      if (i < 0) return no(s);
      return ok(makeLockState(s.holders.filter((_, j) => j !== i), s.nextToken, null, s.delayed, s.expired));
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
      const holders = s.holders.filter((h) => h.session !== op.session);
      const freed = holders.length !== s.holders.length;
      return ok(makeLockState(holders, s.nextToken, null, s.delayed || freed, insertSorted(s.expired, op.session)));
    }
    case 'proclaim': {
      const i = s.holders.findIndex((h) => h.session === op.session && tokenMatches(h.token, op.token));
      if (i < 0) return no(s);
      const holders = s.holders.map((h, j) => (j === i ? { ...h, value: op.value } : h));
      return ok(makeLockState(holders, s.nextToken, s.openSharedToken, s.delayed, s.expired));
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

export const lockModel: Model<LockState, LockModelOp> = {
  initial: INITIAL_LOCK_STATE,
  step: stepLock,
  key: (s) => s.key,
  describe: describeLockState,
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
};
