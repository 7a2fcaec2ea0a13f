import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bytes, Driver, TEST_CONFIG } from './driver.js';
import type { Fence } from '../../src/lockfsm/index.js';

function put(d: Driver, session: number, key: string, value: Uint8Array, extra: { fence?: Fence; ifRevision?: number } = {}) {
  return d.apply({ type: 'put', session, seq: d.seq(session), key, value, ...extra });
}

function del(d: Driver, session: number, key: string, extra: { fence?: Fence; ifRevision?: number } = {}) {
  return d.apply({ type: 'delete', session, seq: d.seq(session), key, ...extra });
}

describe('key-value space', () => {
  it('put sets the revision to the entry index and emits kvChanged', () => {
    const d = new Driver();
    const a = d.open();
    const r = put(d, a, 'cfg', bytes(1, 2, 3));
    assert.deepEqual(r.result, { type: 'written', revision: d.index });
    assert.deepEqual(r.events, [{ type: 'kvChanged', key: 'cfg', value: bytes(1, 2, 3), revision: d.index }]);
    assert.deepEqual(d.m.kvGet('cfg'), { key: 'cfg', value: bytes(1, 2, 3), revision: d.index });
  });

  it('keeps a copy: changing the caller array later changes nothing', () => {
    const d = new Driver();
    const a = d.open();
    const v = bytes(1);
    put(d, a, 'k', v);
    v[0] = 9;
    assert.deepEqual(d.m.kvGet('k')?.value, bytes(1));
  });

  it('delete removes, with an event; deleting a missing key is not an error', () => {
    const d = new Driver();
    const a = d.open();
    put(d, a, 'k', bytes(1));
    const r = del(d, a, 'k');
    assert.deepEqual(r.result, { type: 'deleted', existed: true, revision: d.index });
    assert.deepEqual(r.events, [{ type: 'kvChanged', key: 'k', value: null, revision: d.index }]);
    assert.deepEqual(del(d, a, 'k').result, { type: 'deleted', existed: false, revision: 0 });
    assert.equal(d.m.kvGet('k'), null);
  });

  it('ifRevision is compare-and-set; 0 means must not exist', () => {
    const d = new Driver();
    const a = d.open();
    const created = put(d, a, 'k', bytes(1), { ifRevision: 0 });
    assert.equal(created.result.type, 'written');
    const rev = d.index;
    const again = put(d, a, 'k', bytes(2), { ifRevision: 0 });
    assert.equal(again.result.type === 'error' && again.result.code, 'CONFLICT');
    assert.equal(again.result.type === 'error' && again.result.currentRevision, rev);
    assert.equal(put(d, a, 'k', bytes(3), { ifRevision: rev }).result.type, 'written');
    const staleDelete = del(d, a, 'k', { ifRevision: rev });
    assert.equal(staleDelete.result.type === 'error' && staleDelete.result.code, 'CONFLICT');
    assert.deepEqual(d.m.kvGet('k')?.value, bytes(3));
  });

  it('a fenced put applies only for the current holder with that exact token', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const ta = Driver.token(d.acquire(a, 'L').result);
    assert.equal(put(d, a, 'k', bytes(1), { fence: { lock: 'L', token: ta } }).result.type, 'written');
    d.release(a, 'L', ta);
    const tb = Driver.token(d.acquire(b, 'L').result);
    const stale = put(d, a, 'k', bytes(2), { fence: { lock: 'L', token: ta } });
    assert.deepEqual(stale.result, {
      type: 'error',
      code: 'FENCED',
      message: `session ${a} does not hold lock "L" with token ${ta}`,
      currentToken: tb,
    });
    assert.deepEqual(stale.events, []);
    const otherSession = put(d, b, 'k', bytes(3), { fence: { lock: 'L', token: ta } });
    assert.equal(otherSession.result.type === 'error' && otherSession.result.code, 'FENCED');
    const stolenToken = put(d, a, 'k', bytes(4), { fence: { lock: 'L', token: tb } });
    assert.equal(stolenToken.result.type === 'error' && stolenToken.result.code, 'FENCED', "another session's token");
    assert.deepEqual(d.m.kvGet('k')?.value, bytes(1));
    const free = del(d, b, 'k', { fence: { lock: 'nolock', token: 1 } });
    assert.equal(free.result.type === 'error' && free.result.currentToken, null);
  });

  it('any write may carry a fence (acquire, release ...)', () => {
    const d = new Driver();
    const [a, b] = [d.open(), d.open()];
    const t = Driver.token(d.acquire(a, 'L').result);
    const r = d.acquire(a, 'other', { fence: { lock: 'L', token: t + 1 } });
    assert.equal(r.result.type === 'error' && r.result.code, 'FENCED');
    assert.equal(d.m.lock('other'), null);
    assert.equal(d.acquire(a, 'other', { fence: { lock: 'L', token: t } }).result.type, 'granted');
    assert.equal(d.acquire(b, 'x', { fence: { lock: 'L', token: t } }).result.type, 'error');
  });

  it('limits key size, value size and total bytes', () => {
    const d = new Driver({ ...TEST_CONFIG, maxKeyBytes: 8, maxValueBytes: 10, maxKvTotalBytes: 30 });
    const a = d.open();
    const longKey = put(d, a, 'k'.repeat(9), bytes(1));
    assert.equal(longKey.result.type === 'error' && longKey.result.code, 'LIMIT_EXCEEDED');
    const bigValue = put(d, a, 'k', new Uint8Array(11));
    assert.equal(bigValue.result.type === 'error' && bigValue.result.code, 'LIMIT_EXCEEDED');
    assert.equal(put(d, a, 'k1', new Uint8Array(10)).result.type, 'written'); // 12 bytes
    assert.equal(put(d, a, 'k2', new Uint8Array(10)).result.type, 'written'); // 24 bytes
    const over = put(d, a, 'k3', new Uint8Array(5)); // 31 > 30
    assert.equal(over.result.type === 'error' && over.result.code, 'LIMIT_EXCEEDED');
    assert.equal(put(d, a, 'k2', new Uint8Array(4)).result.type, 'written', 'overwrites count the difference');
    assert.equal(put(d, a, 'k3', new Uint8Array(5)).result.type, 'written');
    assert.equal(d.m.stats().kvBytes, 12 + 6 + 7);
    const empty = put(d, a, '', bytes());
    assert.equal(empty.result.type === 'error' && empty.result.code, 'INVALID_ARGUMENT');
  });

  it('kvRange lists keys by prefix in order', () => {
    const d = new Driver();
    const a = d.open();
    for (const k of ['app/b', 'app/a', 'other', 'app/c']) put(d, a, k, bytes(1));
    assert.deepEqual(
      d.m.kvRange('app/').map((e) => e.key),
      ['app/a', 'app/b', 'app/c'],
    );
    assert.deepEqual(
      d.m.kvRange('app/', 1).map((e) => e.key),
      ['app/a'],
    );
  });
});
