import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Packr, Unpackr } from 'msgpackr';
import { LockMachine, SnapshotError, type Command } from '../../src/lockfsm/index.js';
import { bytes, Driver, TEST_CONFIG } from './driver.js';

/** A machine with something in every table. */
function busyMachine(): Driver {
  const d = new Driver();
  const [a, b, c] = [d.open(), d.open(), d.open()];
  d.apply({ type: 'openSession', ttlMs: 5000, label: 'web-3:4312' }); // a labelled session, idle
  const t = Driver.token(d.acquire(a, 'x', { lockDelayMs: 50 }).result);
  d.acquire(b, 'x');
  d.acquire(c, 'pool', { mode: 'shared', limit: 2 });
  d.acquire(b, 'pool', { mode: 'shared', limit: 2 });
  d.acquire(a, 'pool', { mode: 'shared', limit: 2 });
  d.acquire(c, 'gone', { lockDelayMs: 1000 });
  d.expire(c); // 'gone' in delay, with nobody; 'pool' grants a
  d.apply({ type: 'campaign', session: a, seq: d.seq(a), election: 'svc', value: 'va' });
  d.apply({ type: 'campaign', session: b, seq: d.seq(b), election: 'svc', value: 'vb' });
  d.apply({ type: 'put', session: a, seq: d.seq(a), key: 'k', value: bytes(1, 2, 3), fence: { lock: 'x', token: t } });
  d.apply({ type: 'beginOp', session: a, seq: d.seq(a), opKey: 'o1', fence: { lock: 'x', token: t }, at: 10 });
  d.apply({ type: 'beginOp', session: a, seq: d.seq(a), opKey: 'o2', fence: { lock: 'x', token: t }, at: 11 });
  d.apply({
    type: 'completeOp',
    session: a,
    seq: d.seq(a),
    opKey: 'o2',
    fence: { lock: 'x', token: t },
    result: bytes(4),
    at: 12,
  });
  d.apply({ type: 'openSession', ttlMs: 5000, owner: 'jobs' }); // owned, no label
  d.apply({ type: 'openSession', ttlMs: 5000, label: 'web-4:1', owner: 'batch' }); // owned and labelled
  return d;
}

describe('snapshot and restore', () => {
  it('startNewCluster ends every session, frees what they held, keeps keys, and moves the index', () => {
    const d = busyMachine();
    const m = LockMachine.restore(d.m.snapshot(), TEST_CONFIG);
    const sessions = m.stats().sessions;
    assert.ok(sessions > 0);
    assert.equal(m.startNewCluster(1000), sessions);
    assert.equal(m.appliedIndex, 1000);
    assert.equal(m.stats().sessions, 0);
    assert.equal(m.stats().holders, 0);
    assert.equal(m.stats().waiters, 0);
    assert.deepEqual(m.elections(), []);
    assert.deepEqual(m.kvGet('k')?.value, bytes(1, 2, 3));
    assert.ok(m.lock('gone')?.delayed, 'a lock-delay of the old state stays');
    const again = LockMachine.restore(m.snapshot(), TEST_CONFIG);
    assert.equal(again.appliedIndex, 1000);
    assert.throws(() => m.startNewCluster(999), RangeError, 'the index only grows');
  });

  it('restores the full state: reads, stats and the next snapshot are identical', () => {
    const d = busyMachine();
    const snap = d.m.snapshot();
    const r = LockMachine.restore(snap, TEST_CONFIG);
    assert.deepEqual(r.snapshot(), snap);
    assert.deepEqual(r.stats(), d.m.stats());
    assert.equal(r.appliedIndex, d.m.appliedIndex);
    for (const name of ['x', 'pool', 'gone']) assert.deepEqual(r.lock(name), d.m.lock(name), name);
    assert.deepEqual([...r.sessions()], [...d.m.sessions()]);
    assert.deepEqual(r.election('svc'), d.m.election('svc'));
    assert.deepEqual(r.kvGet('k'), d.m.kvGet('k'));
    assert.deepEqual(r.op('o1'), d.m.op('o1'));
    assert.deepEqual(r.op('o2'), d.m.op('o2'));
    assert.deepEqual([...r.pendingLockDelays()], [...d.m.pendingLockDelays()]);
  });

  it('a restored machine answers retries and later entries exactly like the original', () => {
    const d = busyMachine();
    const r = LockMachine.restore(d.m.snapshot(), TEST_CONFIG);
    const a = 1;
    const rest: Command[] = [
      { type: 'beginOp', session: a, seq: 13, opKey: 'o2', fence: { lock: 'x', token: 4 }, at: 1 }, // new
      { type: 'completeOp', session: a, seq: 12, opKey: 'o2', fence: { lock: 'x', token: 4 }, result: bytes(4), at: 12 }, // retry
      { type: 'closeSession', session: a, seq: 14 },
      { type: 'lockDelayElapsed', name: 'gone' },
      { type: 'expireSession', session: 2 },
    ];
    let index = d.m.appliedIndex;
    for (const cmd of rest) {
      index++;
      assert.deepEqual(r.apply(index, cmd), d.m.apply(index, cmd), cmd.type);
    }
    assert.deepEqual(r.snapshot(), d.m.snapshot());
  });

  it('a session ending after a restore emits its events in the same order (not in set order)', () => {
    const d = new Driver();
    const [s1, s2] = [d.open(), d.open()];
    const ta = Driver.token(d.acquire(s1, 'a').result); // lock table: a
    d.acquire(s2, 'c'); // lock table: a, c
    d.acquire(s2, 'a'); // s2 waits for a
    d.release(s1, 'a', ta); // s2 now holds c then a, while the table lists a then c
    const r = LockMachine.restore(d.m.snapshot(), TEST_CONFIG);
    const index = d.index + 1;
    const cmd: Command = { type: 'expireSession', session: s2 };
    assert.deepEqual(r.apply(index, cmd), d.m.apply(index, cmd));
  });

  it('keeps session owners, and reads the session forms of older snapshots (no label, no owner)', () => {
    const d = busyMachine();
    const owners = [...d.m.sessions()].map((s) => [s.label, s.owner]);
    assert.deepEqual(owners.slice(-3), [['web-3:4312', null], [null, 'jobs'], ['web-4:1', 'batch']]);
    const r = LockMachine.restore(d.m.snapshot(), TEST_CONFIG);
    assert.deepEqual([...r.sessions()].map((s) => [s.label, s.owner]), owners);
    // A snapshot written before owners existed: 4- and 5-field sessions, read as unowned.
    const packr = new Packr({ useRecords: false, variableMapSize: true, moreTypes: false });
    const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });
    const old = new LockMachine(TEST_CONFIG);
    old.apply(1, { type: 'openSession', ttlMs: 5000 });
    old.apply(2, { type: 'openSession', ttlMs: 5000, label: 'l' });
    const body = unpackr.unpack(old.snapshot()) as Record<string, unknown>;
    assert.deepEqual((body.sessions as unknown[][]).map((t) => t.length), [4, 5], 'unowned sessions keep the older forms');
    const back = LockMachine.restore(new Uint8Array(packr.pack(body)), TEST_CONFIG);
    // Answers stored before digests ([seq, command, result]) still answer retries by type.
    const withAnswer = new LockMachine(TEST_CONFIG);
    withAnswer.apply(1, { type: 'openSession', ttlMs: 5000 });
    withAnswer.apply(2, { type: 'put', session: 1, seq: 1, key: 'k', value: new Uint8Array([1]) });
    const b2 = unpackr.unpack(withAnswer.snapshot()) as { sessions: [number, number, number, unknown[][]][] };
    assert.equal(b2.sessions[0]![3][0]!.length, 4, 'answers carry their digest');
    b2.sessions[0]![3][0]!.length = 3;
    const undigested = LockMachine.restore(new Uint8Array(packr.pack(b2)), TEST_CONFIG);
    assert.equal(undigested.apply(3, { type: 'put', session: 1, seq: 1, key: 'k', value: new Uint8Array([1]) }).result.type, 'written');
    assert.deepEqual([...back.sessions()].map((s) => [s.id, s.label, s.owner]), [[1, null, null], [2, 'l', null]]);
  });

  it('reads Node Buffers (as storage hands them back)', () => {
    const d = busyMachine();
    const r = LockMachine.restore(Buffer.from(d.m.snapshot()), TEST_CONFIG);
    assert.deepEqual(r.snapshot(), d.m.snapshot());
    assert.equal(Object.getPrototypeOf(r.kvGet('k')!.value), Uint8Array.prototype);
  });

  it('an empty machine round-trips', () => {
    const m = new LockMachine(TEST_CONFIG);
    assert.deepEqual(LockMachine.restore(m.snapshot(), TEST_CONFIG).stats(), m.stats());
  });

  it('bad bytes are a clear SnapshotError, never a silent reset', () => {
    const snap = busyMachine().m.snapshot();
    const packr = new Packr({ useRecords: false });
    const cases: [string, Uint8Array][] = [
      ['empty', new Uint8Array()],
      ['garbage', bytes(0xc1, 2, 3)],
      ['another format', packr.pack({ format: 'etcd', version: 1 })],
      ['future version', packr.pack({ ...(new Unpackr().unpack(snap) as object), version: 2 })],
      ['trailing bytes', new Uint8Array([...snap, 0])],
    ];
    for (const [what, data] of cases) assert.throws(() => LockMachine.restore(data, TEST_CONFIG), SnapshotError, what);
    for (let cut = 0; cut < snap.length; cut += 7) {
      assert.throws(() => LockMachine.restore(snap.subarray(0, cut), TEST_CONFIG), SnapshotError, `cut at ${cut}`);
    }
  });

  it('inconsistent contents are refused', () => {
    const d = busyMachine();
    const body = new Unpackr({ mapsAsObjects: true }).unpack(d.m.snapshot()) as Record<string, unknown[]>;
    const packr = new Packr({ useRecords: false });
    const mutate = (f: (b: Record<string, unknown[]>) => void): Uint8Array => {
      const copy = structuredClone(body);
      f(copy);
      return packr.pack(copy);
    };
    const cases: [string, Uint8Array][] = [
      ['holder of a missing session', mutate((b) => ((b.locks![0] as unknown[])[4] = [[999, 4, 0, 0]]))],
      ['token from the future', mutate((b) => ((b.locks![0] as unknown[])[4] = [[1, 10_000, 0, 0]]))],
      ['two exclusive holders', mutate((b) => ((b.locks![0] as unknown[])[4] = [[1, 4, 0, 0], [2, 4, 0, 0]]))],
      ['duplicate session', mutate((b) => b.sessions!.push(b.sessions![0]))],
      ['bad mode flag', mutate((b) => ((b.locks![0] as unknown[])[4] = [[1, 4, 7, 0]]))],
      ['missing kv', mutate((b) => delete b.kv)],
      ['kv not an array', mutate((b) => ((b as Record<string, unknown>).kv = 'x'))],
      ['over the limit', mutate((b) => ((b.locks![1] as unknown[])[1] = 1))],
    ];
    for (const [what, data] of cases) assert.throws(() => LockMachine.restore(data, TEST_CONFIG), SnapshotError, what);
  });
});
