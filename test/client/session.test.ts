// The lease as the client sees it: keepalives every TTL/3 and the safe deadline, on a fake clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, SessionExpiredError } from '../../src/client/index.js';
import { err, FakeCluster } from './fake-cluster.js';
import { advanceUntil, FakeClock, settle, until } from './fake-clock.js';

// TTL 3000, drift 1 %, margin max(50, 5 % × 3000) = 150:
// safe deadline = sentAt + 3000 × 0.99 − 150 = sentAt + 2820.
const TTL = 3000;
const SAFE = 2820;

async function setup(t: Parameters<typeof FakeCluster.forTest>[0]) {
  const cluster = await FakeCluster.forTest(t);
  const clock = new FakeClock();
  let ackKeepAlives = true;
  cluster.nodes[0]!.intercept = (req) =>
    (req.op === 'keepAlive' || req.op === 'attach') && !ackKeepAlives ? 'silent' : undefined;
  const openedAt = clock.now();
  const client = await cluster.client({ ttlMs: TTL, clock });
  return {
    cluster,
    clock,
    client,
    openedAt,
    stopAcking: () => (ackKeepAlives = false),
    startAcking: () => (ackKeepAlives = true),
  };
}

test('keepalives go every TTL/3', async (t) => {
  const { cluster, clock } = await setup(t);
  assert.equal(cluster.requests('keepAlive').length, 0);
  clock.advance(TTL / 3 - 1);
  await settle();
  assert.equal(cluster.requests('keepAlive').length, 0);
  clock.advance(1);
  await until(() => cluster.requests('keepAlive').length === 1, 'first keepalive');
  // Let its answer land: while one keepalive is unanswered, the next turn is skipped.
  await settle(30);
  clock.advance(TTL / 3);
  await until(() => cluster.requests('keepAlive').length === 2, 'second keepalive');
});

test('without acknowledged keepalives, lock.signal aborts exactly at the safe deadline from openSession', async (t) => {
  const { cluster, clock, client, openedAt, stopAcking, startAcking } = await setup(t);
  const lock = await client.acquire('a');
  stopAcking();
  // Walk to one ms before the deadline, letting sockets run at each step.
  while (clock.now() < openedAt + SAFE - 100) {
    clock.advance(100);
    await settle(5);
  }
  clock.advance(openedAt + SAFE - 1 - clock.now());
  await settle();
  assert.equal(lock.signal.aborted, false, 'still held 1 ms before the safe deadline');
  assert.equal(lock.held, true);
  clock.advance(1);
  assert.equal(lock.signal.aborted, true, 'aborted at the safe deadline');
  assert.ok(lock.signal.reason instanceof LockLostError);
  assert.throws(() => lock.assertHeld(), LockLostError);
  await assert.rejects(lock.put('k', 'v'), LockLostError);

  // The client no longer vouches for the session: it asks the cluster to close it (so its
  // locks do not outlive the client's belief), and opens a new one for what comes next.
  startAcking();
  // The silent attach times out; after a backoff a new connection serves the close.
  await advanceUntil(clock, () => cluster.requests('closeSession').length === 1, 'closeSession of the abandoned session');
  assert.equal(cluster.holder('a'), null);
  const again = await client.acquire('a');
  assert.ok(again.token > lock.token);
  assert.equal(cluster.requests('openSession').length, 2);
});

test('an acknowledged keepalive moves the deadline to its SEND time + TTL(1 − drift) − margin', async (t) => {
  const { cluster, clock, client, stopAcking } = await setup(t);
  const lock = await client.acquire('b');
  // Hold the keepalive's answer until 500 ms after it was sent.
  let answer: () => void = () => {};
  const answered = new Promise<void>((resolve) => (answer = resolve));
  const node = cluster.nodes[0]!;
  const silentWhenStopped = node.intercept!;
  node.intercept = async (req, conn) => {
    if (req.op === 'keepAlive' && cluster.requests('keepAlive').length === 1) await answered;
    return silentWhenStopped(req, conn);
  };
  clock.advance(TTL / 3); // the keepalive goes now
  const sentAt = clock.now();
  await until(() => cluster.requests('keepAlive').length === 1, 'keepalive');
  clock.advance(500);
  answer();
  await settle();
  stopAcking();
  while (clock.now() < sentAt + SAFE - 100) {
    clock.advance(100);
    await settle(5);
  }
  clock.advance(sentAt + SAFE - 1 - clock.now());
  await settle();
  assert.equal(lock.signal.aborted, false, 'held until the deadline the acknowledged keepalive earned');
  clock.advance(1);
  assert.equal(lock.signal.aborted, true, 'counted from the send, not from the (later) acknowledgement');
});

test('sessionExpired for our session loses the locks; the next acquire opens a new session', async (t) => {
  const { cluster, client } = await setup(t);
  const lock = await client.acquire('c');
  const first = client.sessionId!;
  cluster.expire(first);
  await until(() => lock.signal.aborted && client.sessionId === null, 'lock and session lost');
  assert.ok(lock.signal.reason instanceof LockLostError);
  const next = await client.acquire('c');
  assert.notEqual(client.sessionId, first);
  assert.equal(next.session.id, client.sessionId);
});

test('a waiting acquire rejects with SessionExpiredError when the session expires', async (t) => {
  const { cluster, client } = await setup(t);
  const other = await cluster.client();
  await other.acquire('w');
  const waiting = client.acquire('w');
  await until(() => cluster.waiters('w').length === 1, 'queued');
  cluster.expire(client.sessionId!);
  await assert.rejects(waiting, SessionExpiredError);
});

test('UNKNOWN_SESSION from a keepalive ends the session', async (t) => {
  const { cluster, clock, client } = await setup(t);
  const lock = await client.acquire('d');
  cluster.nodes[0]!.intercept = (req) => (req.op === 'keepAlive' ? err('UNKNOWN_SESSION', 'gone') : undefined);
  clock.advance(TTL / 3);
  await until(() => lock.signal.aborted, 'lock lost on UNKNOWN_SESSION');
  assert.equal(client.sessionId, null);
});

test('events for a session that is not ours are ignored', async (t) => {
  const { cluster, client } = await setup(t);
  const lock = await client.acquire('e');
  const other = client.sessionId! + 1000;
  const conn = [...cluster.nodes[0]!.conns][0]!;
  conn.send({ event: 'sessionExpired', index: 900, session: other });
  conn.send({ event: 'released', index: 901, session: other, name: 'e', token: lock.token, reason: 'expire' });
  conn.send({ event: 'granted', index: 902, session: other, name: 'zzz', token: 902, mode: 'exclusive' });
  await settle(30);
  assert.equal(lock.held, true);
  assert.equal(cluster.requests('release').length, 0, 'no release for a grant to someone else');
});

test('a released event for our lock (freed by the cluster) loses the handle', async (t) => {
  const { cluster, client } = await setup(t);
  const lock = await client.acquire('f');
  // The first of the two events an expiry pushes (released, then sessionExpired), alone.
  cluster.push({ event: 'released', index: cluster.index + 1, session: client.sessionId!, name: 'f', token: lock.token, reason: 'expire' });
  await until(() => lock.signal.aborted, 'lost');
  assert.throws(() => lock.assertHeld(), { code: 'LOCK_LOST' });
});
