// Hand-written histories with known verdicts. Every non-linearizable one is also run
// through the search alone (invariants bypassed), so both layers are held to the verdict.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { check, compileObject, partitionHistory, recordedView, type CheckResult, type Operation } from '../checker/index.js';
import { HistoryBuilder } from './builder.js';

const BUDGET = { maxSteps: 1_000_000, deadline: Number.POSITIVE_INFINITY };

/** The verdict of the search alone, over every object. */
function searchVerdict(ops: readonly Operation[]): 'linearizable' | 'not-linearizable' | 'budget' {
  let verdict: 'linearizable' | 'budget' = 'linearizable';
  for (const object of partitionHistory(ops)) {
    const outcome = compileObject(object.ref, recordedView(object.ops)).run(BUDGET);
    if (outcome.verdict === 'not-linearizable') return 'not-linearizable';
    if (outcome.verdict === 'budget') verdict = 'budget';
  }
  return verdict;
}

function assertValid(h: HistoryBuilder): void {
  const result = check(h.ops);
  assert.equal(result.valid, true, JSON.stringify(result, null, 1));
  assert.equal(searchVerdict(h.ops), 'linearizable');
}

function assertInvalid(h: HistoryBuilder, lock: string): Extract<CheckResult, { valid: false }> {
  const result = check(h.ops);
  assert.equal(result.valid, false, 'expected a violation');
  if (result.valid !== false) throw new Error('unreachable');
  assert.equal(result.lock, lock);
  assert.ok(result.window.length > 0);
  for (const op of result.window) assert.ok(h.ops.includes(op), 'window ops come from the history');
  assert.equal(searchVerdict(h.ops), 'not-linearizable', 'the search alone must reject it too');
  // The window on its own is a non-linearizable history.
  assert.equal(check(result.window).valid, false, 'the window itself fails');
  return result;
}

const ids = (ops: readonly Operation[]): number[] => ops.map((o) => Number(o.id)).sort((a, b) => a - b);

describe('linearizable histories', () => {
  it('sequential grants and releases', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.release('s1', 'L', 5, [2, 3]);
    h.acquire('s2', 'L', 8, [4, 5]);
    h.read('L', [['s2', 8]], [5.5, 5.8]);
    h.release('s2', 'L', 8, [6, 7]);
    h.read('L', [], [8, 9]);
    assertValid(h);
  });

  it('concurrent acquires whose order is decided by the tokens', () => {
    const h = new HistoryBuilder();
    // s2 asked first but s1 got the earlier token: s1 held, released, then s2 was granted.
    h.acquire('s2', 'L', 9, [0, 20]);
    h.acquire('s1', 'L', 5, [1, 10]);
    h.release('s1', 'L', 5, [11, 12]);
    h.read('L', [['s2', 9]], [21, 22]);
    assertValid(h);
  });

  it('an unknown acquire that did happen', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', null, [0, null]);
    h.read('L', [['s1', 7]], [5, 6]);
    h.tryAcquire('s2', 'L', false, [7, 8]);
    h.expire('s1', [6, 10]);
    h.acquire('s2', 'L', 12, [9, 12]);
    assertValid(h);
  });

  it('an unknown acquire that did not happen', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', null, [0, null]);
    h.acquire('s2', 'L', 5, [1, 2]);
    h.release('s2', 'L', 5, [3, 4]);
    h.acquire('s3', 'L', 9, [5, 6]);
    h.read('L', [['s3', 9]], [7, 8]);
    assertValid(h);
  });

  it('an unknown release that did happen lets the next holder in', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.release('s1', 'L', 5, [2, null], { outcome: 'unknown' });
    h.acquire('s2', 'L', 9, [3, 4]);
    assertValid(h);
  });

  it('failed operations are ignored', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.acquire('s2', 'L', 6, [2, 3], { outcome: 'fail' });
    h.release('s2', 'L', 5, [4, 5], { outcome: 'fail' });
    h.read('L', [['s1', 5]], [6, 7]);
    assertValid(h);
  });

  it('shared holders within the limit', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1], { mode: 'shared', limit: 2 });
    h.acquire('s2', 'L', 6, [2, 3], { mode: 'shared', limit: 2 });
    h.read('L', [['s2', 6], ['s1', 5]], [4, 5]);
    h.tryAcquire('s3', 'L', false, [6, 7], { mode: 'shared', limit: 2 });
    h.release('s1', 'L', 5, [8, 9]);
    h.acquire('s3', 'L', 10, [10, 11], { mode: 'shared', limit: 2 });
    h.read('L', [['s2', 6], ['s3', 10]], [12, 13]);
    assertValid(h);
  });

  it('shared waiters granted by one release share its token', () => {
    const h = new HistoryBuilder();
    h.acquire('w', 'L', 5, [0, 1]);
    h.acquire('r1', 'L', 7, [2, 10], { mode: 'shared' });
    h.acquire('r2', 'L', 7, [3, 10], { mode: 'shared' });
    h.release('w', 'L', 5, [6, 7]);
    assertValid(h);
  });

  it('a session expiry frees the lock for another grant, with lock-delay refusals in between', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.expire('s1', [2, 10]);
    h.tryAcquire('s2', 'L', false, [10.5, 11]); // free but still in lock-delay
    h.acquire('s2', 'L', 20, [5, 12]);
    h.read('L', [['s2', 20]], [13, 14]);
    assertValid(h);
  });

  it('an expiry nobody observed (unknown) may explain the next grant', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.expire('s1', [3, null], { outcome: 'unknown' });
    h.acquire('s2', 'L', 9, [4, 5]);
    assertValid(h);
  });

  it('the same grant answered twice to one session', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.acquire('s1', 'L', 5, [2, 3]);
    h.release('s1', 'L', 5, [4, 5]);
    assertValid(h);
  });

  it('sessions holding several locks, each lock checked on its own', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'A', 5, [0, 1]);
    h.acquire('s1', 'B', 6, [2, 3]);
    h.expire('s1', [4, 6]);
    h.acquire('s2', 'A', 9, [5, 8]);
    h.acquire('s2', 'B', 10, [5, 9]);
    h.read('A', [['s2', 9]], [10, 11]);
    h.read('B', [['s2', 10]], [10, 11]);
    assertValid(h);
  });

  it('an election: campaign, proclaim, leader reads, resign, next leader', () => {
    const h = new HistoryBuilder();
    h.campaign('s1', 'E', 'a', 5, [0, 1]);
    h.leader('E', { session: 's1', token: 5, value: 'a' }, [2, 3]);
    h.campaign('s2', 'E', 'b', 9, [2, 20]);
    h.proclaim('s1', 'E', 'a2', [4, 5]);
    h.leader('E', { session: 's1', token: 5, value: 'a2' }, [6, 7]);
    h.resign('s1', 'E', [8, 9]);
    h.leader('E', { session: 's2', token: 9, value: 'b' }, [21, 22]);
    assertValid(h);
  });

  it('a fenced resource accepting increasing tokens and rejecting a stale one', () => {
    const h = new HistoryBuilder();
    h.fencedWrite('s1', 'L', 5, [0, 1]);
    h.fencedWrite('s1', 'L', 5, [2, 3]);
    h.fencedWrite('s2', 'L', 9, [4, 5]);
    h.fencedWrite('s1', 'L', 5, [6, 7], 9);
    assertValid(h);
  });

  it('a fenced write with an unknown outcome may explain a rejection', () => {
    const h = new HistoryBuilder();
    h.fencedWrite('s1', 'L', 5, [0, 1]);
    h.fencedWrite('s2', 'L', 9, [2, null], undefined, { outcome: 'unknown' });
    h.fencedWrite('s1', 'L', 5, [6, 7], 9);
    assertValid(h);
  });
});

describe('non-linearizable histories', () => {
  it('two overlapping exclusive grants', () => {
    const h = new HistoryBuilder();
    const a = h.acquire('s1', 'L', 5, [0, 1]);
    const b = h.acquire('s2', 'L', 9, [2, 3]);
    const r = h.release('s1', 'L', 5, [4, 5]);
    h.read('L', [], [6, 7]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'overlapping-holders');
    assert.deepEqual(ids(result.window), ids([a, b, r]));
  });

  it('overlapping grants caught by the search when no single invariant sees them', () => {
    const h = new HistoryBuilder();
    // s1's grant is only known through a read: the invariants see no grant of s1.
    h.acquire('s1', 'L', null, [0, null]);
    h.read('L', [['s1', 5]], [1, 2]);
    h.acquire('s2', 'L', 9, [3, 4]);
    h.read('L', [['s2', 9]], [5, 6]);
    h.release('s1', 'L', 5, [7, 8]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'linearizability');
    assert.ok(result.windowMinimal);
  });

  it('a grant with a stale (lower) token', () => {
    const h = new HistoryBuilder();
    const a = h.acquire('s1', 'L', 9, [0, 1]);
    h.release('s1', 'L', 9, [2, 3]);
    const b = h.acquire('s2', 'L', 5, [4, 5]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'token-order');
    assert.deepEqual(ids(result.window), ids([a, b]));
  });

  it('two exclusive grants with the same token', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 10]);
    h.acquire('s2', 'L', 5, [0, 10]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'duplicate-token');
  });

  it('a read that misses an acknowledged release', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    const release = h.release('s1', 'L', 5, [2, 3]);
    const read = h.read('L', [['s1', 5]], [4, 5]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'linearizability');
    assert.deepEqual(ids(result.window), ids([release, read]));
  });

  it('shared holders above the limit', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1], { mode: 'shared', limit: 2 });
    h.acquire('s2', 'L', 6, [2, 3], { mode: 'shared', limit: 2 });
    h.acquire('s3', 'L', 7, [4, 5], { mode: 'shared', limit: 2 });
    const result = assertInvalid(h, 'L');
    assert.equal(result.window.length, 3);
  });

  it('a fenced resource accepting a lower token after a higher one', () => {
    const h = new HistoryBuilder();
    h.fencedWrite('s2', 'L', 9, [0, 1]);
    h.fencedWrite('s1', 'L', 5, [2, 3]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.kind, 'fence');
    assert.equal(result.check, 'fence-regression');
  });

  it('a fenced resource accepting a lower token, seen only by the search', () => {
    const h = new HistoryBuilder();
    // Concurrent writes: no real-time order between them, so only 5-then-9 works, but the
    // rejection afterwards reports the fence as 5.
    h.fencedWrite('s2', 'L', 9, [0, 10]);
    h.fencedWrite('s1', 'L', 5, [0, 10]);
    h.fencedWrite('s3', 'L', 3, [11, 12], 5);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'linearizability');
  });

  it('a release acknowledged for a session that did not hold the lock', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    const bad = h.release('s2', 'L', 5, [2, 3]);
    const result = assertInvalid(h, 'L');
    assert.deepEqual(ids(result.window), ids([bad]));
  });

  it('a grant to a session that had already expired', () => {
    const h = new HistoryBuilder();
    h.expire('s1', [0, 1]);
    h.acquire('s1', 'L', 5, [2, 3]);
    assertInvalid(h, 'L');
  });

  it('a refusal while the lock was free and not in lock-delay', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.release('s1', 'L', 5, [2, 3]);
    h.tryAcquire('s2', 'L', false, [4, 5]);
    assertInvalid(h, 'L');
  });

  it('a leader read showing a value the leader never proclaimed', () => {
    const h = new HistoryBuilder();
    h.campaign('s1', 'E', 'a', 5, [0, 1]);
    h.leader('E', { session: 's1', token: 5, value: 'zzz' }, [2, 3]);
    assertInvalid(h, 'E');
  });

  it('a rejection by the fenced resource of a token that was current', () => {
    const h = new HistoryBuilder();
    h.fencedWrite('s1', 'L', 5, [0, 1]);
    h.fencedWrite('s1', 'L', 5, [2, 3], 5);
    assertInvalid(h, 'L');
  });

  it('an expiry window that closes too late for the grant it would have to explain', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.expire('s1', [10, 12]);
    h.acquire('s2', 'L', 9, [2, 3]);
    const result = assertInvalid(h, 'L');
    assert.equal(result.check, 'overlapping-holders');
  });
});

describe('check()', () => {
  it('rejects malformed records with every problem listed', () => {
    const bad = [
      { id: 1, process: 1, op: 'acquire', args: { lock: 'L', mode: 'exclusive' }, invokeMs: 0, completeMs: 1, outcome: 'ok', result: { token: 5 } },
      { id: 1, process: 1, session: 's', op: 'acquire', args: { lock: 'L', mode: 'exclusive' }, invokeMs: 2, completeMs: 3, outcome: 'ok' },
    ] as unknown as Operation[];
    assert.throws(() => check(bad), /session is required.*needs result \{token: number\}.*duplicate id/s);
  });

  it('reports unknown when the budget is too small for a verdict', () => {
    const h = new HistoryBuilder();
    for (let i = 0; i < 20; i++) {
      h.acquire(`s${i}`, 'L', 10 + i * 2, [i * 10, i * 10 + 1]);
      h.release(`s${i}`, 'L', 10 + i * 2, [i * 10 + 2, i * 10 + 3]);
    }
    const result = check(h.ops, { maxSteps: 5 });
    assert.equal(result.valid, 'unknown');
    if (result.valid === 'unknown') assert.match(result.reason, /budget/);
    assert.equal(check(h.ops).valid, true);
  });

  it('an empty history is linearizable', () => {
    assert.equal(check([]).valid, true);
  });
});
