import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bytes, Driver, TEST_CONFIG } from './driver.js';
import type { Command, Fence } from '../../src/lockfsm/index.js';

function begin(d: Driver, session: number, opKey: string, fence: Fence, at = 1000, retry?: boolean) {
  return d.apply({ type: 'beginOp', session, seq: d.seq(session), opKey, fence, at, ...(retry ? { retry } : {}) });
}

function complete(d: Driver, session: number, opKey: string, fence: Fence, result: Uint8Array, at = 2000) {
  return d.apply({ type: 'completeOp', session, seq: d.seq(session), opKey, fence, result, at });
}

describe('operation ledger', () => {
  it('run -> complete -> done', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'L').result);
    const fence = { lock: 'L', token: t };
    const r = begin(d, a, 'charge-42', fence);
    const key = `charge-42@${d.index}`;
    assert.deepEqual(r.result, { type: 'run', idempotencyKey: key, attempt: 1 });
    assert.deepEqual(complete(d, a, 'charge-42', fence, bytes(7)).result, { type: 'completed', idempotencyKey: key });
    assert.deepEqual(begin(d, a, 'charge-42', fence).result, { type: 'done', idempotencyKey: key, result: bytes(7) });
    const twice = complete(d, a, 'charge-42', fence, bytes(8));
    assert.equal(twice.result.type === 'error' && twice.result.code, 'CONFLICT');
    assert.deepEqual(d.m.op('charge-42')?.result, bytes(7));
  });

  it('a later holder finds an abandoned attempt in doubt, retries under the same key and completes', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const ta = Driver.token(d.acquire(a, 'L').result);
    const first = begin(d, a, 'op', { lock: 'L', token: ta });
    assert.equal(first.result.type, 'run');
    const key = first.result.type === 'run' ? first.result.idempotencyKey : '';
    d.expire(a); // a paused: its lease ran out before it completed
    const tb = Driver.token(d.acquire(b, 'L').result);
    const fb = { lock: 'L', token: tb };
    assert.deepEqual(begin(d, b, 'op', fb).result, { type: 'inDoubt', idempotencyKey: key, attempt: 1, token: ta });
    const early = complete(d, b, 'op', fb, bytes(1));
    assert.equal(early.result.type === 'error' && early.result.code, 'CONFLICT', 'must record its attempt first');
    assert.deepEqual(begin(d, b, 'op', fb, 3000, true).result, { type: 'retry', idempotencyKey: key, attempt: 2 });
    assert.deepEqual(complete(d, b, 'op', fb, bytes(2)).result, { type: 'completed', idempotencyKey: key });
    assert.equal(d.m.op('op')?.attempt, 2);
  });

  it('a holder that lost the lock cannot complete (fenced)', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const ta = Driver.token(d.acquire(a, 'L').result);
    begin(d, a, 'op', { lock: 'L', token: ta });
    d.release(a, 'L', ta);
    d.acquire(b, 'L');
    const late = complete(d, a, 'op', { lock: 'L', token: ta }, bytes(1));
    assert.equal(late.result.type === 'error' && late.result.code, 'FENCED');
    assert.equal(d.m.op('op')?.state, 'running');
    const notHolder = begin(d, a, 'other', { lock: 'L', token: ta });
    assert.equal(notHolder.result.type === 'error' && notHolder.result.code, 'FENCED');
    assert.equal(d.m.op('other'), null);
  });

  it('an op is bound to the lock of its first beginOp', () => {
    const d = new Driver();
    const a = d.open();
    const t1 = Driver.token(d.acquire(a, 'L1').result);
    const t2 = Driver.token(d.acquire(a, 'L2').result);
    begin(d, a, 'op', { lock: 'L1', token: t1 });
    const other = begin(d, a, 'op', { lock: 'L2', token: t2 }, 1, true);
    assert.equal(other.result.type === 'error' && other.result.code, 'CONFLICT');
    const unknown = complete(d, a, 'nope', { lock: 'L1', token: t1 }, bytes());
    assert.equal(unknown.result.type === 'error' && unknown.result.code, 'CONFLICT');
  });

  it('fence is required on beginOp and completeOp', () => {
    const d = new Driver();
    const a = d.open();
    const r = d.m.apply(++d.index, { type: 'beginOp', session: a, seq: 1, opKey: 'op', at: 1 } as unknown as Command);
    assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT');
  });

  it('pruneOps drops completed ops older than the leader stamp; opsToPrune predicts it', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'L').result);
    const f = { lock: 'L', token: t };
    for (const [k, at] of [
      ['o1', 100],
      ['o2', 200],
      ['o3', 300],
    ] as const) {
      begin(d, a, k, f, at - 50);
      complete(d, a, k, f, bytes(1), at);
    }
    begin(d, a, 'abandoned', f, 10);
    // Ages come from the cluster's settings: done ops older than 1,000 ms, abandoned ones
    // older than 1,239 ms, so at 1,250 the cut-offs are 250 and 11.
    d.apply({ type: 'configure', settings: { ledgerRetentionMs: 1_000, ledgerAbandonedAfterMs: 1_239 } });
    assert.equal(d.m.opsToPrune(1_240), 2, 'at 1,240 the done ops before 240 and nothing abandoned');
    assert.equal(d.m.opsToPrune(1_240, 1), 1);
    assert.equal(d.m.opsToPrune(1_250), 3);
    assert.deepEqual(d.apply({ type: 'pruneOps', at: 1_240 }).result, { type: 'pruned', count: 2 });
    assert.equal(d.m.clock, 1_240, 'a pruneOps carries the cluster time forward');
    assert.equal(d.m.op('o1'), null);
    assert.equal(d.m.op('o3')?.state, 'done');
    assert.equal(d.m.op('abandoned')?.state, 'running', 'not abandoned for long enough yet');
    d.apply({ type: 'pruneOps', at: 1_250 });
    assert.equal(d.m.op('abandoned'), null);
    const again = begin(d, a, 'o1', f);
    assert.equal(again.result.type, 'run', 'a pruned op starts over, with a new idempotency key');
    assert.equal(again.result.type === 'run' && again.result.idempotencyKey, `o1@${d.index}`);
  });

  it('pruning never drops an entry before its time, even when stamps go back', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'L').result);
    const f = { lock: 'L', token: t };
    begin(d, a, 'late', f);
    complete(d, a, 'late', f, bytes(1), 500); // a leader whose clock ran ahead
    begin(d, a, 'early', f);
    complete(d, a, 'early', f, bytes(1), 100);
    assert.deepEqual(d.apply({ type: 'pruneOps', olderThan: 200 }).result, { type: 'pruned', count: 0 });
    assert.deepEqual(d.apply({ type: 'pruneOps', olderThan: 600 }).result, { type: 'pruned', count: 2 });
  });

  it('the cluster time is the latest stamp applied, and a stamp never moves it back', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'L').result);
    const f = { lock: 'L', token: t };
    assert.equal(d.m.clock, 0);
    begin(d, a, 'x', f, 500);
    assert.equal(d.m.clock, 500);
    complete(d, a, 'x', f, bytes(1), 400);
    assert.equal(d.m.clock, 500);
    d.apply({ type: 'pruneOps', at: 450 });
    assert.equal(d.m.clock, 500);
    assert.equal(d.m.op('x')?.state, 'done', '400 is not older than 450 minus a week');
  });

  it('bounds the number of ledger entries', () => {
    const d = new Driver({ ...TEST_CONFIG, maxLedgerEntries: 1 });
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'L').result);
    begin(d, a, 'a', { lock: 'L', token: t });
    const r = begin(d, a, 'b', { lock: 'L', token: t });
    assert.equal(r.result.type === 'error' && r.result.code, 'LIMIT_EXCEEDED');
  });
});
