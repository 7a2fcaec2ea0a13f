// The sequential lock and fence models, step by step.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  INITIAL_FENCE_STATE,
  INITIAL_LOCK_STATE,
  lockModel,
  stepFence,
  stepLock,
  type FenceState,
  type LockModelOp,
  type LockState,
  type PendingView,
} from '../checker/index.js';

const x = (session: string, token: number | null): LockModelOp => ({ type: 'grant', session, mode: 'exclusive', limit: Infinity, token, value: null });
const sh = (session: string, token: number | null, limit = Infinity): LockModelOp => ({ type: 'grant', session, mode: 'shared', limit, token, value: null });
const rel = (session: string, token: number | null): LockModelOp => ({ type: 'release', session, token });
const read = (...holders: [string, number][]): LockModelOp => ({
  type: 'read',
  holders: holders.map(([session, token]) => ({ session, token })).sort((a, b) => (a.session < b.session ? -1 : 1)),
});
const expire = (session: string): LockModelOp => ({ type: 'expire', session });

/** Applies ops in order; throws at the first the model rejects, naming it. */
function run(ops: readonly LockModelOp[], from: LockState = INITIAL_LOCK_STATE): LockState {
  let s = from;
  ops.forEach((op, i) => {
    const r = stepLock(s, op);
    if (!r.ok) throw new Error(`op ${i} rejected: ${JSON.stringify(op)}`);
    s = r.state;
  });
  return s;
}
const accepts = (s: LockState, op: LockModelOp): boolean => stepLock(s, op).ok;

describe('lock model', () => {
  it('grants an exclusive lock to one holder at a time, in token order', () => {
    const s = run([x('a', 5)]);
    assert.equal(accepts(s, x('b', 9)), false, 'held');
    const freed = run([rel('a', 5)], s);
    assert.equal(accepts(freed, x('b', 4)), false, 'token below the last grant');
    assert.equal(accepts(freed, x('b', 5)), false, 'token equal to an exclusive grant');
    assert.ok(accepts(freed, x('b', 6)));
  });

  it('a rejected step leaves the state as it was', () => {
    const s = run([x('a', 5)]);
    const r = stepLock(s, x('b', 9));
    assert.equal(r.ok, false);
    assert.equal(r.state, s);
  });

  it('shared holders up to the limit; shared grants of one entry may share a token', () => {
    const s = run([sh('a', 5, 2), sh('b', 5, 2)]);
    assert.equal(accepts(s, sh('c', 7, 2)), false, 'limit reached');
    assert.equal(accepts(s, x('c', 7)), false, 'exclusive while shared holders');
    assert.ok(accepts(run([rel('a', 5)], s), sh('c', 7, 2)));
    assert.equal(accepts(run([x('w', 5), rel('w', 5)]), sh('c', 5)), false, 'after an exclusive grant, 5 is spent');
    assert.equal(accepts(run([sh('a', 5), rel('a', 5)]), sh('c', 5)), false, 'a release is a later entry');
  });

  it('a repeated answer for a held grant is accepted without a second grant', () => {
    const s = run([x('a', 5)]);
    assert.equal(run([x('a', 5)], s).key, s.key);
    assert.equal(accepts(s, x('a', 6)), false, 'a different token is a second grant');
  });

  it('a grant whose answer was lost holds with an unknown token, pinned by a later answer', () => {
    const s = run([x('a', null)]);
    assert.ok(accepts(s, read(['a', 17])), 'a read may reveal any token');
    assert.ok(accepts(s, rel('a', 17)));
    const pinned = run([x('a', 8)], s);
    assert.equal(accepts(pinned, read(['a', 9])), false);
    assert.equal(accepts(pinned, x('b', 8)), false);
  });

  it('releases only what the session holds with that token', () => {
    const s = run([x('a', 5)]);
    assert.equal(accepts(s, rel('b', 5)), false);
    assert.equal(accepts(s, rel('a', 6)), false);
    assert.equal(run([rel('a', 5)], s).holders.length, 0);
  });

  it('an expiry frees the session for good and may leave the lock in lock-delay', () => {
    const s = run([x('a', 5), expire('a')]);
    assert.equal(s.holders.length, 0);
    assert.ok(accepts(s, { type: 'refuse' }), 'refusal under lock-delay');
    assert.equal(accepts(s, x('a', 9)), false, 'an expired session is never granted again');
    const granted = run([x('b', 9)], s);
    assert.equal(accepts(run([rel('b', 9)], granted), { type: 'refuse' }), false, 'the delay ended with the grant');
  });

  it('reads see exactly the holders', () => {
    const s = run([sh('a', 5), sh('b', 6)]);
    assert.ok(accepts(s, read(['b', 6], ['a', 5])));
    assert.equal(accepts(s, read(['a', 5])), false);
    assert.equal(accepts(s, read(['a', 5], ['b', 7])), false);
  });

  it('elections: the leader proclaims, leader reads see session, token and value', () => {
    const s = run([{ type: 'grant', session: 'a', mode: 'exclusive', limit: 1, token: 5, value: '"v1"' }]);
    assert.ok(accepts(s, { type: 'readLeader', leader: { session: 'a', token: 5, value: '"v1"' } }));
    const p = run([{ type: 'proclaim', session: 'a', token: null, value: '"v2"' }], s);
    assert.equal(accepts(p, { type: 'readLeader', leader: { session: 'a', token: 5, value: '"v1"' } }), false);
    assert.equal(accepts(s, { type: 'proclaim', session: 'b', token: null, value: '"v2"' }), false);
    assert.ok(accepts(run([rel('a', null)], s), { type: 'readLeader', leader: null }));
  });

  it('states reached by different paths have equal keys', () => {
    assert.equal(run([sh('a', 5), sh('b', 5)]).key, run([sh('b', 5), sh('a', 5)]).key);
    assert.equal(run([x('a', 5), rel('a', 5), x('b', 7)]).key, run([x('c', 6), rel('c', 6), x('b', 7)]).key);
    assert.notEqual(run([x('b', 7)]).key, run([x('b', 7), rel('b', 7), x('b', 8)]).key);
  });
});

describe('lock model reductions', () => {
  const pending = (counts: Record<string, number>, definite: Record<string, number> = counts): PendingView => ({
    count: (tag) => counts[tag] ?? 0,
    countDefinite: (tag) => definite[tag] ?? 0,
  });

  it('a holder nobody can free kills conflicting grants and reads that do not show it', () => {
    const s = run([x('a', 5)]);
    const none = pending({});
    assert.ok(lockModel.isDead!(s, x('b', 9), none));
    assert.ok(lockModel.isDead!(s, read(), none));
    assert.equal(lockModel.isDead!(s, read(['a', 5]), none), false);
    assert.equal(lockModel.isDead!(s, x('b', 9), pending({ 'free:a': 1 })), false);
    assert.ok(lockModel.isDoomed!(s, pending({ grant: 1, 'grant:b': 1 })));
    assert.equal(lockModel.isDoomed!(s, pending({ grant: 1, 'grant:a': 1 })), false);
  });

  it('grants below the token horizon and acts of expired sessions are dead', () => {
    const s = run([x('a', 5), rel('a', 5), expire('c')]);
    assert.ok(lockModel.isDead!(s, x('b', 4), pending({})));
    assert.ok(lockModel.isDead!(s, x('c', 9), pending({})));
    assert.ok(lockModel.isDoomed!(s, pending({ 'act:c': 1 })));
  });

  it('a lost grant nothing needs is redundant; one a read shows is not', () => {
    const s = INITIAL_LOCK_STATE;
    assert.ok(lockModel.isRedundant!(s, x('a', null), pending({})));
    assert.equal(lockModel.isRedundant!(s, x('a', null), pending({ 'shows:a': 1 })), false);
    assert.equal(lockModel.isRedundant!(s, x('a', null), pending({ refuse: 1 })), false);
    assert.equal(lockModel.isRedundant!(s, x('a', null), pending({ 'holds:a': 1 })), false);
  });

  it('expired sessions nobody acts for are forgotten', () => {
    const s = run([expire('a'), expire('b')]);
    assert.deepEqual(lockModel.canonical!(s, pending({ 'act:b': 1 })).expired, ['b']);
  });
});

describe('fence model', () => {
  const accept = (token: number) => ({ type: 'accept' as const, token });
  const reject = (token: number, fence: number | null) => ({ type: 'reject' as const, token, fence });
  const after = (...tokens: number[]): FenceState => tokens.reduce((s, t) => stepFence(s, accept(t)).state, INITIAL_FENCE_STATE);

  it('accepts non-decreasing tokens and rejects lower ones with the current fence', () => {
    const s = after(5, 5, 9);
    assert.equal(s.fence, 9);
    assert.equal(stepFence(s, accept(7)).ok, false);
    assert.ok(stepFence(s, reject(7, 9)).ok);
    assert.ok(stepFence(s, reject(7, null)).ok);
    assert.equal(stepFence(s, reject(7, 5)).ok, false, 'wrong fence reported');
    assert.equal(stepFence(s, reject(9, 9)).ok, false, 'the current token is not stale');
    assert.equal(stepFence(INITIAL_FENCE_STATE, reject(1, null)).ok, false, 'nothing to be stale against');
  });
});
