import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SESSION_LABEL_MAX_BYTES, type Command } from '../../src/lockfsm/types.js';
import { LockMachine } from '../../src/lockfsm/index.js';
import { Driver, TEST_CONFIG } from './driver.js';

describe('sessions', () => {
  it('opens with the entry index as id and announces the lease to the leader', () => {
    const d = new Driver();
    d.m.skip(1);
    d.index = 1;
    const r = d.apply({ type: 'openSession', ttlMs: 5000 });
    assert.deepEqual(r.result, { type: 'session', session: 2, ttlMs: 5000 });
    assert.deepEqual(r.events, [{ type: 'sessionOpened', session: 2, ttlMs: 5000, label: null }]);
  });

  it('keeps the label the client gave, for lock tables; refuses an empty or over-long one', () => {
    const d = new Driver();
    const r = d.apply({ type: 'openSession', ttlMs: 5000, label: 'web-3:4312' });
    assert.equal(r.result.type, 'session');
    const id = d.index;
    assert.deepEqual(r.events, [{ type: 'sessionOpened', session: id, ttlMs: 5000, label: 'web-3:4312' }]);
    assert.equal(d.m.session(id)?.label, 'web-3:4312');
    assert.deepEqual([...d.m.sessionLeases()], [{ session: id, ttlMs: 5000, label: 'web-3:4312' }]);
    for (const label of ['', 'x'.repeat(SESSION_LABEL_MAX_BYTES + 1), 'é'.repeat(SESSION_LABEL_MAX_BYTES / 2 + 1), 42]) {
      const bad = d.apply({ type: 'openSession', ttlMs: 5000, label } as unknown as Command);
      assert.equal(bad.result.type === 'error' && bad.result.code, 'INVALID_ARGUMENT', JSON.stringify(label));
    }
    assert.equal(d.apply({ type: 'openSession', ttlMs: 5000, label: 'é'.repeat(SESSION_LABEL_MAX_BYTES / 2) }).result.type, 'session');
  });

  it('records the owner the node stamps (the token that opened it), checked like a label', () => {
    const d = new Driver();
    d.apply({ type: 'openSession', ttlMs: 5000, owner: 'jobs' });
    assert.equal(d.m.session(d.index)?.owner, 'jobs');
    d.apply({ type: 'openSession', ttlMs: 5000 });
    assert.equal(d.m.session(d.index)?.owner, null);
    for (const owner of ['', 'x'.repeat(SESSION_LABEL_MAX_BYTES + 1), 7]) {
      const bad = d.apply({ type: 'openSession', ttlMs: 5000, owner } as unknown as Command);
      assert.equal(bad.result.type === 'error' && bad.result.code, 'INVALID_ARGUMENT', JSON.stringify(owner));
    }
  });

  it('refuses a seq more than maxSeqAdvance above the highest so far, without acknowledging anything', () => {
    const d = new Driver({ ...TEST_CONFIG, maxSeqAdvance: 10 });
    const s = d.open();
    assert.equal(d.apply({ type: 'put', session: s, seq: 1, key: 'k', value: new Uint8Array(1) }).result.type, 'written');
    for (const [seq, ackedSeq] of [[Number.MAX_SAFE_INTEGER, undefined], [12, 11], [1000, 999]] as const) {
      const r = d.apply({ type: 'put', session: s, seq, ...(ackedSeq ? { ackedSeq } : {}), key: 'k', value: new Uint8Array(1) });
      assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT', String(seq));
    }
    assert.equal(d.m.session(s)?.ackedSeq, 0, 'a refused far ackedSeq acknowledged nothing');
    assert.equal(d.apply({ type: 'put', session: s, seq: 11, key: 'k', value: new Uint8Array(1) }).result.type, 'written', 'within the window (1 + 10)');
    assert.equal(d.apply({ type: 'put', session: s, seq: 21, ackedSeq: 11, key: 'k', value: new Uint8Array(1) }).result.type, 'written');
    assert.equal(d.apply({ type: 'closeSession', session: s, seq: 22, ackedSeq: 21 }).result.type, 'ok');
  });

  it('refuses an openSession beyond maxSessions, the same on every node; a close makes room', () => {
    const d = new Driver({ ...TEST_CONFIG, maxSessions: 2 });
    const [a] = [d.open(), d.open()];
    const over = d.apply({ type: 'openSession', ttlMs: 5000 });
    assert.equal(over.result.type === 'error' && over.result.code, 'LIMIT_EXCEEDED');
    assert.deepEqual(over.events, []);
    d.apply({ type: 'closeSession', session: a!, seq: 1 });
    assert.equal(d.apply({ type: 'openSession', ttlMs: 5000 }).result.type, 'session');
  });

  it('bounds the sessions one owner (token) has open, apart from the cluster cap; unowned sessions are not counted', () => {
    const d = new Driver({ ...TEST_CONFIG, maxSessionsPerOwner: 2 });
    const open = (owner?: string) => d.apply({ type: 'openSession', ttlMs: 5000, ...(owner ? { owner } : {}) }).result;
    assert.equal(open('jobs').type, 'session');
    const second = d.index + 1;
    assert.equal(open('jobs').type, 'session');
    const over = open('jobs');
    assert.equal(over.type === 'error' && over.code, 'LIMIT_EXCEEDED');
    assert.match(over.type === 'error' ? over.message : '', /token "jobs"/);
    assert.equal(open('batch').type, 'session', 'another token is not held back');
    assert.equal(open().type, 'session');
    assert.equal(open().type, 'session');
    assert.equal(open().type, 'session', 'sessions without an owner are not counted');
    d.expire(second);
    assert.equal(open('jobs').type, 'session', 'an ended session makes room');
    // The count is rebuilt from a snapshot.
    const r = LockMachine.restore(d.m.snapshot(), { ...TEST_CONFIG, maxSessionsPerOwner: 2 });
    const again = r.apply(d.index + 1, { type: 'openSession', ttlMs: 5000, owner: 'jobs' }).result;
    assert.equal(again.type === 'error' && again.code, 'LIMIT_EXCEEDED');
  });

  it('refuses TTLs outside the bounds or not integers', () => {
    const d = new Driver();
    for (const ttlMs of [TEST_CONFIG.minTtlMs - 1, TEST_CONFIG.maxTtlMs + 1, 1500.5, -1, Number.NaN]) {
      const r = d.apply({ type: 'openSession', ttlMs });
      assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT', String(ttlMs));
    }
    assert.equal(d.apply({ type: 'openSession', ttlMs: TEST_CONFIG.minTtlMs }).result.type, 'session');
    assert.equal(d.apply({ type: 'openSession', ttlMs: TEST_CONFIG.maxTtlMs }).result.type, 'session');
    assert.equal(d.m.stats().sessions, 2);
    assert.equal(d.m.appliedIndex, 7, 'failed entries still advance appliedIndex');
  });
});

describe('idempotency (client sessions, thesis §6.3)', () => {
  it('a retried acquire answers the first result and changes nothing, even after the lock moved', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const first = d.apply({ type: 'acquire', session: a, seq: 1, name: 'x', mode: 'exclusive', wait: false });
    const t = Driver.token(first.result);
    const retry = d.apply({ type: 'acquire', session: a, seq: 1, name: 'x', mode: 'exclusive', wait: false });
    assert.deepEqual(retry.result, first.result);
    assert.deepEqual(retry.events, []);
    d.apply({ type: 'release', session: a, seq: 2, name: 'x', token: t });
    d.apply({ type: 'acquire', session: b, seq: 1, name: 'x', mode: 'exclusive', wait: true });
    const late = d.apply({ type: 'acquire', session: a, seq: 1, name: 'x', mode: 'exclusive', wait: false });
    assert.deepEqual(late.result, first.result, 'the stored answer, not a new grant');
    assert.deepEqual(late.events, []);
    assert.deepEqual(d.holders('x'), [[b, d.index - 1, 'exclusive']]);
  });

  it('a retried queued acquire never queues twice', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    d.acquire(a, 'x');
    const q = d.apply({ type: 'acquire', session: b, seq: 1, name: 'x', mode: 'exclusive', wait: true });
    for (let i = 0; i < 3; i++) {
      const again = d.apply({ type: 'acquire', session: b, seq: 1, name: 'x', mode: 'exclusive', wait: true });
      assert.deepEqual(again.result, q.result);
    }
    assert.deepEqual(d.waiters('x'), [b]);
  });

  it('requests may be applied out of order; each seq is answered once', () => {
    const d = new Driver();
    const a = d.open();
    const r3 = d.apply({ type: 'acquire', session: a, seq: 3, name: 'c', mode: 'exclusive', wait: true });
    const r1 = d.apply({ type: 'acquire', session: a, seq: 1, name: 'a', mode: 'exclusive', wait: true });
    const r2 = d.apply({ type: 'acquire', session: a, seq: 2, name: 'b', mode: 'exclusive', wait: true });
    assert.equal(r1.result.type, 'granted');
    assert.equal(r2.result.type, 'granted');
    assert.equal(r3.result.type, 'granted');
    assert.deepEqual(d.apply({ type: 'acquire', session: a, seq: 1, name: 'a', mode: 'exclusive', wait: true }).result, r1.result);
    assert.equal(d.m.session(a)?.pendingResults, 3);
  });

  it('ackedSeq forgets answers; a forgotten seq answers STALE_SEQUENCE', () => {
    const d = new Driver();
    const a = d.open();
    d.apply({ type: 'acquire', session: a, seq: 1, name: 'a', mode: 'exclusive', wait: true });
    d.apply({ type: 'acquire', session: a, seq: 2, name: 'b', mode: 'exclusive', wait: true });
    d.apply({ type: 'acquire', session: a, seq: 3, name: 'c', mode: 'exclusive', wait: true, ackedSeq: 2 });
    assert.equal(d.m.session(a)?.pendingResults, 1);
    assert.equal(d.m.session(a)?.ackedSeq, 2);
    const stale = d.apply({ type: 'acquire', session: a, seq: 2, name: 'b', mode: 'exclusive', wait: true });
    assert.equal(stale.result.type === 'error' && stale.result.code, 'STALE_SEQUENCE');
    assert.deepEqual(stale.events, []);
    assert.equal(d.m.stats().pendingResults, 1);
  });

  it('refuses ackedSeq >= seq', () => {
    const d = new Driver();
    const a = d.open();
    const r = d.apply({ type: 'acquire', session: a, seq: 2, ackedSeq: 2, name: 'a', mode: 'exclusive', wait: true });
    assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT');
  });

  it('bounds unacknowledged answers per session; acknowledging makes room', () => {
    const d = new Driver({ ...TEST_CONFIG, maxPendingResultsPerSession: 2 });
    const a = d.open();
    d.apply({ type: 'acquire', session: a, seq: 1, name: 'a', mode: 'exclusive', wait: true });
    d.apply({ type: 'acquire', session: a, seq: 2, name: 'b', mode: 'exclusive', wait: true });
    const full = d.apply({ type: 'acquire', session: a, seq: 3, name: 'c', mode: 'exclusive', wait: true });
    assert.equal(full.result.type === 'error' && full.result.code, 'LIMIT_EXCEEDED');
    assert.equal(d.m.lock('c'), null, 'refused requests change nothing');
    const retry = d.apply({ type: 'acquire', session: a, seq: 3, ackedSeq: 1, name: 'c', mode: 'exclusive', wait: true });
    assert.equal(retry.result.type, 'granted', 'the refusal is not remembered: the retry runs once room is made');
  });

  it('refuses a seq reused by a different command', () => {
    const d = new Driver();
    const a = d.open();
    d.apply({ type: 'acquire', session: a, seq: 1, name: 'a', mode: 'exclusive', wait: true });
    const r = d.apply({ type: 'cancelWait', session: a, seq: 1, name: 'a' });
    assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT');
  });

  it('matches a stored answer to the whole command: the same op on another name is refused, a faithful retry answered', () => {
    const d = new Driver();
    const a = d.open();
    const b = d.open();
    const first = d.apply({ type: 'acquire', session: a, seq: 1, name: 'batch/ledger', mode: 'exclusive', wait: false });
    assert.equal(first.result.type, 'granted');
    d.apply({ type: 'acquire', session: b, seq: 1, name: 'batch/ledger', mode: 'exclusive', wait: false }); // busy, holders listed
    for (const other of [
      { name: 'jobs/anything', mode: 'exclusive', wait: false },
      { name: 'batch/ledger', mode: 'shared', wait: false },
      { name: 'batch/ledger', mode: 'exclusive', wait: true },
      { name: 'batch/ledger', mode: 'exclusive', wait: false, lockDelayMs: 5 },
    ] as const) {
      const r = d.apply({ type: 'acquire', session: b, seq: 1, ...other });
      assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT', JSON.stringify(other));
      assert.match(r.result.type === 'error' ? r.result.message : '', /different acquire/);
    }
    const retry = d.apply({ type: 'acquire', session: b, seq: 1, name: 'batch/ledger', mode: 'exclusive', wait: false });
    assert.equal(retry.result.type, 'busy', 'the same command still gets its first answer');
    // ackedSeq and the leader's `at` may differ between a command and its retry.
    const put = { type: 'put', session: a, seq: 2, key: 'k', value: new Uint8Array([1]) } as const;
    assert.equal(d.apply(put).result.type, 'written');
    assert.equal(d.apply({ ...put, ackedSeq: 1 }).result.type, 'written');
    assert.equal(d.apply({ ...put, value: new Uint8Array([2]) }).result.type, 'error');
    const fence = { lock: 'batch/ledger', token: Driver.token(first.result) };
    const begin = { type: 'beginOp', session: a, seq: 3, opKey: 'o', fence, at: 1 } as const;
    assert.equal(d.apply(begin).result.type, 'run');
    assert.equal(d.apply({ ...begin, at: 99 }).result.type, 'run');
    assert.equal(d.apply({ ...begin, opKey: 'p' }).result.type, 'error');
  });

  it('a retried release answers ok again and never releases a later grant', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.apply({ type: 'acquire', session: a, seq: 1, name: 'x', mode: 'exclusive', wait: true }).result);
    assert.deepEqual(d.apply({ type: 'release', session: a, seq: 2, name: 'x', token: t }).result, { type: 'ok' });
    const t2 = Driver.token(d.apply({ type: 'acquire', session: a, seq: 3, name: 'x', mode: 'exclusive', wait: true }).result);
    const retry = d.apply({ type: 'release', session: a, seq: 2, name: 'x', token: t });
    assert.deepEqual(retry.result, { type: 'ok' });
    assert.deepEqual(retry.events, []);
    assert.deepEqual(d.holders('x'), [[a, t2, 'exclusive']]);
  });

  it('errors are remembered too: a retry answers the same error', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'x').result);
    const first = d.apply({ type: 'release', session: b, seq: 1, name: 'x', token: t });
    d.release(a, 'x', t);
    d.acquire(b, 'x');
    assert.deepEqual(d.apply({ type: 'release', session: b, seq: 1, name: 'x', token: t }).result, first.result);
  });
});
