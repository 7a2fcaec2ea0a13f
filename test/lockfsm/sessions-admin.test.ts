// What the lock machine does for operators and service registration: revokeSession ends a
// session as an expiry does, ephemeral keys go in the entry that ends their session, the
// watch history replays every change after a revision (or says COMPACTED), and a txn applies
// one branch whole, fenced by its compares.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bytes, Driver, TEST_CONFIG } from './driver.js';
import { LockMachine, type MachineConfig, type TxnCompare, type TxnOp } from '../../src/lockfsm/index.js';

function put(d: Driver, session: number, key: string, value: Uint8Array, extra: { ephemeral?: boolean; ifRevision?: number } = {}) {
  return d.apply({ type: 'put', session, seq: d.seq(session), key, value, ...extra });
}

function txn(d: Driver, session: number, compare: TxnCompare[], success: TxnOp[], failure: TxnOp[] = []) {
  return d.apply({ type: 'txn', session, seq: d.seq(session), compare, success, failure });
}

describe('revokeSession', () => {
  it('ends the session like an expiry: lock-delay applies, the next waiter gets the revoke index as token', () => {
    const d = new Driver({ ...TEST_CONFIG, defaultLockDelayMs: 5_000 });
    const a = d.open();
    const b = d.open();
    const held = Driver.token(d.acquire(a, 'job').result);
    d.acquire(b, 'job'); // queued behind a
    const r = d.apply({ type: 'revokeSession', session: a, reason: 'stuck since 03:00', by: 'ops' });
    assert.deepEqual(r.result, { type: 'ok' });
    const revokedAt = d.index;
    assert.deepEqual(r.events[0], { type: 'sessionExpired', session: a, reason: 'revoke', detail: 'stuck since 03:00', by: 'ops' });
    assert.ok(r.events.some((e) => e.type === 'released' && e.session === a && e.token === held && e.reason === 'expire'));
    assert.ok(r.events.some((e) => e.type === 'lockDelayStarted' && e.name === 'job' && e.since === revokedAt));
    assert.equal(d.m.session(a), null);
    // Held back by lock-delay: b waits until the delay ends, then gets a higher token.
    assert.deepEqual(d.holders('job'), []);
    const ended = d.apply({ type: 'lockDelayElapsed', name: 'job', since: revokedAt });
    const granted = ended.events.find((e) => e.type === 'granted');
    assert.ok(granted && granted.type === 'granted' && granted.session === b && granted.token === d.index && granted.token > held);
  });

  it('answers UNKNOWN_SESSION for a session that is gone, and changes nothing', () => {
    const d = new Driver();
    const a = d.open();
    d.close(a);
    const r = d.apply({ type: 'revokeSession', session: a });
    assert.equal(r.result.type === 'error' && r.result.code, 'UNKNOWN_SESSION');
    assert.deepEqual(r.events, []);
  });

  it('refuses an over-long reason', () => {
    const d = new Driver();
    const a = d.open();
    const r = d.apply({ type: 'revokeSession', session: a, reason: 'x'.repeat(257) });
    assert.equal(r.result.type === 'error' && r.result.code, 'INVALID_ARGUMENT');
    assert.notEqual(d.m.session(a), null);
  });
});

describe('ephemeral keys', () => {
  for (const end of ['close', 'expire', 'revoke'] as const) {
    it(`are deleted in the entry that ends their session (${end}), and watchers see the delete`, () => {
      const d = new Driver();
      const a = d.open();
      const b = d.open();
      put(d, a, 'svc/a', bytes(1), { ephemeral: true });
      put(d, a, 'svc/keep', bytes(2));
      put(d, b, 'svc/b', bytes(3), { ephemeral: true });
      assert.deepEqual(d.m.session(a)?.ephemeralKeys, ['svc/a']);
      const r = end === 'close' ? d.close(a) : end === 'expire' ? d.expire(a) : d.apply({ type: 'revokeSession', session: a });
      assert.deepEqual(
        r.events.filter((e) => e.type === 'kvChanged'),
        [{ type: 'kvChanged', key: 'svc/a', value: null, revision: d.index }],
      );
      assert.equal(d.m.kvGet('svc/a'), null);
      assert.notEqual(d.m.kvGet('svc/keep'), null);
      assert.notEqual(d.m.kvGet('svc/b'), null);
      const h = d.m.kvHistory(d.index - 1, 'svc/');
      assert.deepEqual(h, { type: 'changes', changes: [{ key: 'svc/a', value: null, revision: d.index }], more: false });
    });
  }

  it('a plain put unties the key; an ephemeral put by another session ties it there', () => {
    const d = new Driver();
    const a = d.open();
    const b = d.open();
    put(d, a, 'k', bytes(1), { ephemeral: true });
    put(d, a, 'k', bytes(2)); // untied
    d.close(a);
    assert.deepEqual(d.m.kvGet('k')?.value, bytes(2));
    const c = d.open();
    put(d, c, 'k', bytes(3), { ephemeral: true });
    put(d, b, 'k', bytes(4), { ephemeral: true }); // now b's
    assert.deepEqual(d.m.session(c)?.ephemeralKeys, []);
    d.close(c);
    assert.deepEqual(d.m.kvGet('k')?.value, bytes(4));
    d.close(b);
    assert.equal(d.m.kvGet('k'), null);
  });

  it('count with the session\'s locks against maxLocksPerSession: its end undoes them in one entry', () => {
    const d = new Driver({ ...TEST_CONFIG, maxLocksPerSession: 3 });
    const a = d.open();
    d.acquire(a, 'l');
    put(d, a, 'k1', bytes(1), { ephemeral: true });
    put(d, a, 'k2', bytes(1), { ephemeral: true });
    const over = put(d, a, 'k3', bytes(1), { ephemeral: true });
    assert.equal(over.result.type === 'error' && over.result.code, 'LIMIT_EXCEEDED');
    assert.equal(d.m.kvGet('k3'), null);
    assert.equal(put(d, a, 'k3', bytes(1)).result.type, 'written', 'a key not tied to the session does not count');
    assert.equal(put(d, a, 'k1', bytes(2), { ephemeral: true }).result.type, 'written', 'tying a key again costs nothing');
    const txn2 = txn(d, a, [], [{ op: 'put', key: 'k4', value: bytes(1), ephemeral: true }]);
    assert.equal(txn2.result.type === 'error' && txn2.result.code, 'LIMIT_EXCEEDED');
  });

  it('a fenced ephemeral put with a stale token is FENCED', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'l').result);
    d.release(a, 'l', t);
    const r = d.apply({ type: 'put', session: a, seq: d.seq(a), key: 'k', value: bytes(1), ephemeral: true, fence: { lock: 'l', token: t } });
    assert.equal(r.result.type === 'error' && r.result.code, 'FENCED');
    assert.equal(d.m.kvGet('k'), null);
  });

  it('survive a snapshot tied to their session', () => {
    const d = new Driver();
    const a = d.open();
    put(d, a, 'k', bytes(1), { ephemeral: true });
    const restored = LockMachine.restore(d.m.snapshot(), TEST_CONFIG);
    assert.deepEqual(restored.session(a)?.ephemeralKeys, ['k']);
    const r = restored.apply(d.index + 1, { type: 'expireSession', session: a });
    assert.ok(r.events.some((e) => e.type === 'kvChanged' && e.key === 'k' && e.value === null));
    assert.deepEqual(restored.snapshot(), (() => {
      d.expire(a);
      return d.m.snapshot();
    })());
  });
});

describe('watch history', () => {
  it('replays every change after a revision, in order, several per revision', () => {
    const d = new Driver();
    const a = d.open();
    put(d, a, 'p/1', bytes(1));
    const from = d.index;
    put(d, a, 'q/x', bytes(9));
    put(d, a, 'p/2', bytes(2));
    txn(d, a, [], [{ op: 'put', key: 'p/3', value: bytes(3) }, { op: 'delete', key: 'p/1' }]);
    const h = d.m.kvHistory(from, 'p/');
    assert.deepEqual(h, {
      type: 'changes',
      more: false,
      changes: [
        { key: 'p/2', value: bytes(2), revision: from + 2 },
        { key: 'p/3', value: bytes(3), revision: from + 3 },
        { key: 'p/1', value: null, revision: from + 3 },
      ],
    });
    // A page ends only between revisions.
    const page = d.m.kvHistory(from, 'p/', 2);
    assert.equal(page.type === 'changes' && page.changes.length, 3);
    const first = d.m.kvHistory(from, 'p/', 1);
    assert.deepEqual(first.type === 'changes' && [first.changes.length, first.more, first.through], [1, true, from + 2]);
  });

  it('bounds the changes it looks at: a prefix few keys match ends a page early, saying how far it looked', () => {
    const d = new Driver();
    const a = d.open();
    const from = d.index;
    for (let i = 0; i < 10; i++) put(d, a, `noise/${i}`, bytes(i));
    put(d, a, 'rare/1', bytes(1));
    const page = d.m.kvHistory(from, 'rare/', 1000, 1 << 20, 4);
    assert.deepEqual(page, { type: 'changes', changes: [], more: true, through: from + 4 });
    let at = from;
    const seen: number[] = [];
    for (let pages = 0; pages < 10; pages++) {
      const h = d.m.kvHistory(at, 'rare/', 1000, 1 << 20, 4);
      assert.equal(h.type, 'changes');
      if (h.type !== 'changes') break;
      seen.push(...h.changes.map((c) => c.revision));
      if (!h.more) break;
      at = h.through!;
    }
    assert.deepEqual(seen, [d.index]);
  });

  it('drops the oldest changes past its count and says COMPACTED for a revision before them', () => {
    const d = new Driver({ ...TEST_CONFIG, watchHistoryEntries: 3 });
    const a = d.open();
    const revs: number[] = [];
    for (let i = 0; i < 5; i++) {
      put(d, a, `k${i}`, bytes(i));
      revs.push(d.index);
    }
    assert.equal(d.m.historyCompactedThrough, revs[1]);
    assert.deepEqual(d.m.kvHistory(revs[0]!, ''), { type: 'compacted', compactedThrough: revs[1] });
    const ok = d.m.kvHistory(revs[1]!, '');
    assert.deepEqual(ok.type === 'changes' && ok.changes.map((c) => c.revision), revs.slice(2));
  });

  it('is bounded by bytes, and by age in cluster time', () => {
    const d = new Driver({ ...TEST_CONFIG, watchHistoryBytes: 3 * (64 + 2 + 100), watchHistoryMaxAgeMs: 60_000 });
    const a = d.open();
    for (let i = 0; i < 5; i++) put(d, a, `k${i}`, new Uint8Array(100));
    assert.equal(d.m.stats().historyEntries, 3);
    // The cluster's time moves (a pruneOps stamped by the leader) and the next write ages the rest out.
    d.apply({ type: 'pruneOps', at: 1_000_000 });
    put(d, a, 'late', bytes(1));
    d.apply({ type: 'pruneOps', at: 1_000_000 + 60_001 });
    assert.equal(d.m.stats().historyEntries, 0);
    assert.equal(d.m.historyCompactedThrough, d.index - 1);
  });

  it('is carried in snapshots: a restored machine answers the same resumes', () => {
    const d = new Driver({ ...TEST_CONFIG, watchHistoryEntries: 4 });
    const a = d.open();
    for (let i = 0; i < 6; i++) put(d, a, `k${i % 2}`, bytes(i));
    const restored = LockMachine.restore(d.m.snapshot(), TEST_CONFIG);
    for (let from = 0; from <= d.index; from++) assert.deepEqual(restored.kvHistory(from, 'k'), d.m.kvHistory(from, 'k'), `from ${from}`);
    assert.deepEqual(restored.snapshot(), d.m.snapshot());
    const encoder = d.m.snapshotEncoder();
    while (!encoder.step(1));
    assert.deepEqual(encoder.bytes(), d.m.snapshot());
  });
});

describe('txn', () => {
  it('applies the success branch when every compare holds, all with the entry index', () => {
    const d = new Driver();
    const a = d.open();
    const t = Driver.token(d.acquire(a, 'l').result);
    put(d, a, 'x', bytes(1));
    const rx = d.index;
    const r = txn(
      d,
      a,
      [
        { target: 'lock', lock: 'l', token: t },
        { target: 'revision', key: 'x', op: 'eq', revision: rx },
        { target: 'absent', key: 'y' },
      ],
      [
        { op: 'put', key: 'y', value: bytes(2) },
        { op: 'delete', key: 'x' },
      ],
      [{ op: 'put', key: 'failed', value: bytes(0) }],
    );
    assert.deepEqual(r.result, { type: 'txn', succeeded: true, failed: [], results: [{ op: 'put', revision: d.index }, { op: 'delete', existed: true }], revision: d.index });
    assert.deepEqual(r.events, [
      { type: 'kvChanged', key: 'y', value: bytes(2), revision: d.index },
      { type: 'kvChanged', key: 'x', value: null, revision: d.index },
    ]);
    assert.equal(d.m.kvGet('failed'), null);
  });

  it('a stale lock compare chooses the failure branch and names the compare', () => {
    const d = new Driver();
    const a = d.open();
    const b = d.open();
    const t = Driver.token(d.acquire(a, 'l').result);
    d.release(a, 'l', t);
    d.acquire(b, 'l');
    const r = txn(d, a, [{ target: 'revision', key: 'x', op: 'lt', revision: 1_000 }, { target: 'lock', lock: 'l', token: t }], [{ op: 'put', key: 'x', value: bytes(1) }]);
    assert.deepEqual(r.result, { type: 'txn', succeeded: false, failed: [1], results: [], revision: d.index });
    assert.equal(d.m.kvGet('x'), null);
    assert.deepEqual(r.events, []);
  });

  it('is refused whole when its branch does not fit the budget', () => {
    const d = new Driver({ ...TEST_CONFIG, maxKvTotalBytes: 10 });
    const a = d.open();
    const r = txn(d, a, [], [
      { op: 'put', key: 'a', value: bytes(1, 2, 3) },
      { op: 'put', key: 'b', value: bytes(1, 2, 3, 4, 5, 6, 7) },
    ]);
    assert.equal(r.result.type === 'error' && r.result.code, 'LIMIT_EXCEEDED');
    assert.equal(d.m.kvGet('a'), null);
    // Replacing within one branch what it frees fits even when the space is full.
    put(d, a, 'a', bytes(1, 2, 3, 4, 5, 6, 7, 8, 9));
    const swap = txn(d, a, [], [{ op: 'delete', key: 'a' }, { op: 'put', key: 'b', value: bytes(1, 2, 3, 4, 5, 6, 7, 8, 9) }]);
    assert.equal(swap.result.type, 'txn');
  });

  it('bounds its compares and branches and refuses a key twice in one branch', () => {
    const config: MachineConfig = { ...TEST_CONFIG, maxTxnOps: 2 };
    const d = new Driver(config);
    const a = d.open();
    const three: TxnOp[] = ['a', 'b', 'c'].map((key) => ({ op: 'delete', key }));
    const tooMany = txn(d, a, [], three);
    assert.equal(tooMany.result.type === 'error' && tooMany.result.code, 'LIMIT_EXCEEDED');
    const twice = txn(d, a, [], [{ op: 'delete', key: 'a' }, { op: 'put', key: 'a', value: bytes(1) }]);
    assert.equal(twice.result.type === 'error' && twice.result.code, 'INVALID_ARGUMENT');
    const odd = d.apply({ type: 'txn', session: a, seq: d.seq(a), compare: [{ target: 'lock', lock: 'l', token: 1, key: 'x' } as unknown as TxnCompare], success: [], failure: [] });
    assert.equal(odd.result.type === 'error' && odd.result.code, 'INVALID_ARGUMENT');
  });

  it('a retry answers the first result and changes nothing', () => {
    const d = new Driver();
    const a = d.open();
    const cmd = { type: 'txn' as const, session: a, seq: d.seq(a), compare: [{ target: 'absent' as const, key: 'k' }], success: [{ op: 'put' as const, key: 'k', value: bytes(1) }], failure: [] };
    const first = d.apply(cmd);
    const again = d.apply(cmd);
    assert.deepEqual(again.result, first.result);
    assert.deepEqual(again.events, []);
  });
});
