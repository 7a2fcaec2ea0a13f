// Waiting for a lock: grants that overtake their `queued` answer, giving up without leaking,
// and catching up on a grant that happened while disconnected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockTimeoutError } from '../../src/client/index.js';
import { FakeCluster } from './fake-cluster.js';
import { settle, until } from './fake-clock.js';

test('a granted event that arrives before the queued answer is kept and used', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const holder = await cluster.client();
  const waiter = await cluster.client();
  const first = await holder.acquire('e');
  const waiterSession = waiter.sessionId;
  let queuedIndex = 0;
  cluster.nodes[0]!.intercept = (req, conn) => {
    if (req.op !== 'acquire' || req.session !== waiterSession) return undefined;
    const queued = cluster.apply(req, conn); // queued at some index q
    queuedIndex = (queued as { result: { index: number } }).result.index;
    cluster.expire(holder.sessionId!); // the holder's lease ends: granted{index > q} is pushed now...
    return queued; // ...and the queued answer only after it
  };
  const lock = await waiter.acquire('e', { waitMs: 2000 });
  assert.ok(lock.token > queuedIndex);
  assert.equal(cluster.holder('e')!.session, waiterSession);
  assert.equal(lock.token, cluster.holder('e')!.token);
  await until(() => first.signal.aborted, 'the old holder hears it was released');
});

test('a granted event older than the queued answer does not count', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const holder = await cluster.client();
  const waiter = await cluster.client();
  await holder.acquire('o');
  const session = waiter.sessionId!;
  cluster.nodes[0]!.intercept = (req, conn) => {
    if (req.op !== 'acquire' || req.session !== session) return undefined;
    // A stale grant (say, of an earlier acquisition) with an index below the queue entry.
    conn.send({ event: 'granted', index: 1, session, name: 'o', token: 1, mode: 'exclusive' });
    return undefined;
  };
  const pending = waiter.acquire('o', { waitMs: 150 });
  await assert.rejects(pending, LockTimeoutError);
});

test('when waitMs passes: cancelWait, LockTimeoutError, nothing left queued', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const holder = await cluster.client();
  const waiter = await cluster.client();
  await holder.acquire('w');
  const started = Date.now();
  await assert.rejects(waiter.acquire('w', { waitMs: 100 }), (e: unknown) => {
    assert.ok(e instanceof LockTimeoutError);
    assert.equal(e.code, 'LOCK_TIMEOUT');
    return true;
  });
  assert.ok(Date.now() - started >= 95);
  assert.equal(cluster.requests('cancelWait').length, 1);
  assert.equal(cluster.requests('cancelWait')[0]!.name, 'w');
  assert.deepEqual(cluster.waiters('w'), []);
});

test('a cancel that loses the race to a grant releases the grant before rejecting (event seen)', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const holder = await cluster.client();
  const waiter = await cluster.client();
  const held = await holder.acquire('r');
  cluster.nodes[0]!.intercept = async (req) => {
    // The holder's release (and with it the grant) is applied just before the cancel.
    if (req.op === 'cancelWait') await held.release();
    return undefined;
  };
  await assert.rejects(waiter.acquire('r', { waitMs: 100 }), LockTimeoutError);
  const releases = cluster.requests('release').filter((r) => r.session === waiter.sessionId);
  assert.equal(releases.length, 1, 'the unwanted grant was released');
  assert.equal(cluster.holder('r'), null, 'nothing leaked');
});

test('a cancel that loses the race to a grant whose event never came reads the lock and releases', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const holder = await cluster.client();
  const waiter = await cluster.client();
  const held = await holder.acquire('s');
  const session = waiter.sessionId!;
  cluster.nodes[0]!.intercept = async (req, conn) => {
    if (req.op === 'cancelWait') {
      cluster.subs.sessions.remove(session, conn); // the granted event gets lost
      await held.release();
      cluster.subs.sessions.add(session, conn);
    }
    return undefined;
  };
  await assert.rejects(waiter.acquire('s', { waitMs: 100 }), LockTimeoutError);
  // Three round trips (cancelWait, get, release) may outlast the 25 ms the caller is kept
  // waiting (WITHDRAW_GRACE_MS, lock.ts); the rest of the withdrawal then goes on behind it.
  await until(() => cluster.holder('s') === null, 'the grant released');
  assert.ok(cluster.requests('get').some((r) => r.name === 's'), 'read the lock to learn the grant');
  assert.ok(cluster.requests('release').some((r) => r.session === session), 'and released it');
});

test('aborting the signal while queued cancels the wait and rejects with the reason', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const holder = await cluster.client();
  const waiter = await cluster.client();
  await holder.acquire('a');
  const controller = new AbortController();
  const pending = waiter.acquire('a', { signal: controller.signal });
  await until(() => cluster.waiters('a').length === 1, 'queued');
  controller.abort(new Error('shutting down'));
  await assert.rejects(pending, /shutting down/);
  assert.equal(cluster.requests('cancelWait').length, 1);
  assert.deepEqual(cluster.waiters('a'), []);
});

test('a grant made while the client was disconnected is found by reading the lock after re-attaching', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const holder = await cluster.client({ endpoints: [cluster.urls[1]!] });
  const waiter = await cluster.client({ endpoints: [cluster.urls[0]!] });
  const held = await holder.acquire('d');
  const pending = waiter.acquire('d');
  await until(() => cluster.waiters('d').length === 1, 'queued');
  let freed = false;
  cluster.nodes[0]!.intercept = async (req) => {
    // While the waiter reconnects (no connection carries its session yet), the holder
    // releases and the lock is handed to it.
    if (req.op === 'hello' && !freed) {
      freed = true;
      await held.release();
    }
    return undefined;
  };
  cluster.nodes[0]!.dropConnections();
  const lock = await pending;
  assert.equal(lock.token, cluster.holder('d')!.token);
  assert.ok(cluster.requests('get').some((r) => r.name === 'd'));
});

test('two acquires of one name in one client take turns', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await cluster.client();
  const first = await client.acquire('n');
  let secondDone = false;
  const second = client.acquire('n').then((l) => {
    secondDone = true;
    return l;
  });
  await settle(30);
  assert.equal(secondDone, false);
  assert.equal(cluster.requests('acquire').length, 1, 'the second waits in the client');
  await first.release();
  const lock = await second;
  assert.ok(lock.token > first.token);
  assert.equal(await client.tryAcquire('n'), null, 'held by this client: busy');
  await lock.release();
});

test('an in-doubt acquire the caller gave up on does not leave a grant behind', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await cluster.client({ requestTimeoutMs: 200, attemptTimeoutMs: 50 });
  // The node applies the acquire but its answer never comes.
  cluster.nodes[0]!.intercept = (req, conn) => {
    if (req.op !== 'acquire') return undefined;
    cluster.apply(req, conn);
    return 'silent';
  };
  await assert.rejects(client.acquire('x', { waitMs: 150 }), LockTimeoutError);
  cluster.nodes[0]!.intercept = null;
  await until(() => cluster.holder('x') === null, 'the grant was released');
});
