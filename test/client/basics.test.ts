import { hostname } from 'node:os';
import { test } from 'node:test';
import WebSocket from 'ws';
import assert from 'node:assert/strict';
import { LockClient, LockLostError } from '../../src/client/index.js';
import { FakeCluster } from './fake-cluster.js';
import { settle, until } from './fake-clock.js';

test('connect says hello first, opens one session; close releases and is idempotent', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await LockClient.connect({ endpoints: cluster.urls, ttlMs: 5000 });
  assert.deepEqual(
    cluster.log.map((e) => e.req.op),
    ['hello', 'openSession'],
  );
  assert.equal(cluster.requests('openSession')[0]!.ttlMs, 5000);
  assert.equal(cluster.requests('openSession')[0]!.label, `${hostname()}:${process.pid}`, 'the default label names this host and process');
  const session = client.sessionId;
  assert.equal(typeof session, 'number');

  const lock = await client.acquire('a');
  assert.equal(lock.name, 'a');
  assert.equal(lock.mode, 'exclusive');
  assert.equal(cluster.holder('a')!.token, lock.token);
  assert.equal(lock.held, true);

  await Promise.all([client.close(), client.close()]);
  await client.close();
  assert.equal(cluster.requests('closeSession').length, 1);
  assert.equal(cluster.holder('a'), null, 'closing the session frees its locks');
  assert.equal(lock.signal.aborted, true);
  assert.throws(() => lock.assertHeld(), LockLostError);
  await assert.rejects(client.acquire('b'), { code: 'CLIENT_CLOSED' });
});

test('connect can be awaited later (the benchmark keeps the promise)', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const pending = LockClient.connect({ endpoints: cluster.urls });
  const c = await pending;
  const lock = await (await pending).acquire('x', { ttlMs: 30_000 });
  assert.equal(typeof lock.token, 'number');
  await lock.release();
  await (await pending).close();
  assert.equal(c.sessionId, null);
});

test('release is idempotent and the handle refuses use afterwards', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await cluster.client();
  const lock = await client.acquire('r');
  await Promise.all([lock.release(), lock.release()]);
  await lock.release();
  assert.equal(cluster.requests('release').length, 1);
  assert.equal(cluster.holder('r'), null);
  assert.equal(lock.signal.aborted, true);
  assert.ok(lock.signal.reason instanceof LockLostError);
  assert.throws(() => lock.assertHeld(), { code: 'LOCK_LOST' });
  await assert.rejects(lock.put('k', 'v'), LockLostError);
  await assert.rejects(lock.once('op', () => 1), LockLostError);
  assert.equal(cluster.requests('put').length, 0, 'nothing was sent for a released handle');
});

test('tryAcquire answers null when busy and a Lock when free', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const b = await cluster.client();
  const held = await a.tryAcquire('t');
  assert.ok(held);
  assert.equal(await b.tryAcquire('t'), null);
  assert.equal(cluster.requests('acquire').at(-1)!.wait, false);
  await held.release();
  const now = await b.tryAcquire('t');
  assert.ok(now);
  assert.ok(now.token > held.token, 'tokens grow');
});

test('a queued acquire resolves on the granted event; withLock releases when fn throws', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const b = await cluster.client();
  const first = await a.acquire('q');
  const second = b.acquire('q');
  await until(() => cluster.waiters('q').length === 1, 'b queued');
  await first.release();
  const lock = await second;
  assert.ok(lock.token > first.token);

  await assert.rejects(
    b.withLock('w', async (l) => {
      assert.equal(l.held, true);
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(cluster.holder('w'), null, 'released although fn threw');
  let token = 0;
  const value = await b.withLock('w', { waitMs: 1000 }, (l) => {
    token = l.token;
    return l.token * 2;
  });
  assert.equal(value, token * 2, "withLock returns fn's value");
  assert.equal(cluster.holder('w'), null);
  await lock.release();
  await settle();
});

test('get reads holders and waiters', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const lock = await a.acquire('g');
  const info = await a.get('g');
  assert.deepEqual(info.holders, [{ session: a.sessionId, token: lock.token, mode: 'exclusive' }]);
  assert.deepEqual(info.waiters, []);
});

test('errors are typed; NOT_LEADER never surfaces', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  await assert.rejects(a.acquire(''), { name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' });
  cluster.nodes[0]!.intercept = (req) =>
    req.op === 'put' ? { ok: false, error: { code: 'PERMISSION_DENIED', message: 'no' } } : undefined;
  await assert.rejects(a.put('k', 'v'), { name: 'PermissionDeniedError', code: 'PERMISSION_DENIED' });
  cluster.nodes[0]!.intercept = (req) =>
    req.op === 'put' ? { ok: false, error: { code: 'CONFLICT', message: 'revision' } } : undefined;
  await assert.rejects(a.put('k', 'v', { ifRevision: 3 }), { name: 'ConflictError' });
  const fenced = a.put('k', 'v', { fence: { lock: 'nope', token: 7 } });
  cluster.nodes[0]!.intercept = null;
  await assert.rejects(fenced, { name: 'FencedError', code: 'FENCED' });
});

test('many locks on one session, and many cycles, raise no listener-leak warning', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await cluster.client();
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  const locks = await Promise.all(Array.from({ length: 40 }, (_, i) => client.acquire(`many/${i}`)));
  await Promise.all(locks.map((l) => l.release()));
  for (let i = 0; i < 200; i++) await (await client.acquire('cycle', { signal: new AbortController().signal })).release();
  await settle(20);
  assert.deepEqual(warnings.map((w) => w.message), []);
});

test('the WebSocket implementation can be injected', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const opened: string[] = [];
  class RecordingWebSocket extends WebSocket {
    constructor(url: string) {
      super(url);
      opened.push(url);
    }
  }
  const client = await cluster.client({ WebSocket: RecordingWebSocket });
  await client.put('k', 'v');
  assert.deepEqual(opened, [cluster.urls[0]]);
});
