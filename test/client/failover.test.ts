// Finding a node that can serve, and retrying on it with the same seq.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LockClient, UnauthenticatedError, UnavailableError } from '../../src/client/index.js';
import WebSocket from 'ws';
import { err, FakeCluster, type Answer, type FakeNode } from './fake-cluster.js';
import { FakeClock, settle, until } from './fake-clock.js';

test('a request whose answer is lost with the connection is retried with the same seq on another node', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]];
  const client = await cluster.client();
  assert.equal(client.connectedUrl, n1.url);
  // n1 applies the acquire, then the connection dies before the answer leaves.
  let lost: Answer | undefined;
  n1.intercept = (req, conn) => {
    if (req.op !== 'acquire') return undefined;
    lost = cluster.apply(req, conn);
    return 'drop';
  };
  const lock = await client.acquire('a');

  const acquires = cluster.requests('acquire');
  assert.equal(acquires.length, 2, 'sent twice: once to n1, retried on n2');
  assert.equal(acquires[0]!.seq, acquires[1]!.seq, 'the retry carries the same seq');
  assert.equal(acquires[0]!.session, acquires[1]!.session);
  assert.equal((lost as { result: { token: number } }).result.token, lock.token, 'the retry got the first grant');
  assert.deepEqual(cluster.lock('a').holders, [{ session: client.sessionId, token: lock.token, mode: 'exclusive' }], 'granted once');
  assert.equal(client.connectedUrl, n2.url);
  // On the new connection the session is attached before the retry is sent.
  const onN2 = cluster.log.filter((e) => e.node === 'n2').map((e) => e.req.op);
  assert.deepEqual(onN2.slice(0, 3), ['hello', 'attach', 'acquire']);
  assert.equal(cluster.requests('attach', 'n2')[0]!.session, client.sessionId);
});

test('a connection that drops while idle is replaced, and the session re-attached', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const client = await cluster.client();
  const session = client.sessionId;
  cluster.nodes[0]!.dropConnections();
  await until(() => cluster.requests('attach').length === 1, 'attach after reconnect');
  assert.equal(cluster.requests('attach')[0]!.session, session);
  await client.acquire('b');
  assert.equal(client.sessionId, session, 'the session survived the reconnect');
});

test('a crashed node is left for the next endpoint', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const client = await cluster.client();
  await cluster.nodes[0]!.stop();
  const lock = await client.acquire('c');
  assert.equal(client.connectedUrl, cluster.nodes[1]!.url);
  await lock.release();
});

test('NOT_LEADER with a leaderHint moves the client to that node, never surfacing the error', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, , n3] = cluster.nodes;
  n1!.intercept = (req) =>
    req.op === 'openSession' || req.op === 'acquire'
      ? err('NOT_LEADER', 'not the leader', { leaderHint: { id: 'n3', clientUrl: n3!.url } })
      : undefined;
  const client = await cluster.client();
  const lock = await client.acquire('d');
  assert.equal(client.connectedUrl, n3!.url, 'went to the hinted node, skipping n2');
  assert.equal(cluster.requests('openSession', 'n2').length, 0);
  assert.equal(cluster.requests('openSession', 'n3').length, 1);
  assert.ok(lock.token > 0);
});

test('UNAVAILABLE and TIMEOUT answers are retried elsewhere with the same seq', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const client = await cluster.client();
  let answered = 0;
  cluster.nodes[0]!.intercept = (req) => {
    if (req.op !== 'put') return undefined;
    return ++answered === 1 ? err('UNAVAILABLE', 'no quorum') : err('TIMEOUT', 'outcome unknown');
  };
  cluster.nodes[1]!.intercept = (req) => (req.op === 'put' && answered === 1 ? err('TIMEOUT', 'slow') : undefined);
  const result = await client.put('k', 'v');
  const puts = cluster.requests('put');
  assert.ok(puts.length >= 2);
  assert.ok(puts.every((p) => p.seq === puts[0]!.seq), 'every retry carries the same seq');
  assert.equal(cluster.machine.kvGet('k')!.revision, result.revision);
});

test('ackedSeq tells the node which answers it may forget', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await cluster.client();
  const lock = await client.acquire('s');
  await lock.release();
  await client.put('k', 'v');
  const seqs = ['acquire', 'release', 'put'].map((op) => cluster.requests(op)[0]!);
  assert.deepEqual(seqs.map((r) => r.seq), [1, 2, 3]);
  assert.deepEqual(seqs.map((r) => r.ackedSeq), [0, 1, 2]);
});

test('hello naming another leader moves the client there (preferLeader)', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes;
  n1!.intercept = (req) =>
    req.op === 'hello'
      ? { ok: true, result: { nodeId: 'n1', clusterId: 'test', leader: 'n2', members: [{ id: 'n1', clientUrl: n1!.url }, { id: 'n2', clientUrl: n2!.url }] } }
      : undefined;
  const client = await cluster.client();
  assert.equal(client.connectedUrl, n2!.url);
  assert.equal(cluster.requests('openSession', 'n1').length, 0);
});

test('a node the client was not told of, named in hello, becomes a failover target', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes;
  n1!.intercept = (req) =>
    req.op === 'hello'
      ? { ok: true, result: { nodeId: 'n1', clusterId: 'test', leader: null, members: [{ id: 'n2', clientUrl: n2!.url }] } }
      : undefined;
  const client = await cluster.client({ endpoints: [n1!.url] });
  await n1!.stop();
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, n2!.url);
});

test('connect fails with UnavailableError when no node answers, UnauthenticatedError on bad credentials', async (t) => {
  const cluster = await FakeCluster.start(1);
  const deadUrl = cluster.urls[0]!;
  await cluster.stop();
  await assert.rejects(
    LockClient.connect({ endpoints: [deadUrl], requestTimeoutMs: 300, backoff: { initialMs: 5, maxMs: 20 } }),
    (e: unknown) => {
      assert.ok(e instanceof UnavailableError);
      assert.match(e.message, /ECONNREFUSED/, 'says why the last connection attempt failed');
      return true;
    },
  );

  const guarded = await FakeCluster.forTest(t);
  guarded.nodes[0]!.intercept = (req) => (req.op === 'hello' ? err('UNAUTHENTICATED', 'bad token') : undefined);
  const started = Date.now();
  await assert.rejects(LockClient.connect({ endpoints: guarded.urls, authToken: 'wrong' }), UnauthenticatedError);
  assert.ok(Date.now() - started < 2000, 'bad credentials fail at once, not after the timeout');
  assert.equal(guarded.requests('hello')[0]!.token, 'wrong');
});

test('INTERNAL is retried a few times with the same seq, then surfaced', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const client = await cluster.client();
  let failuresLeft = 2;
  cluster.nodes[0]!.intercept = (req) => (req.op === 'put' && failuresLeft-- > 0 ? err('INTERNAL', 'bug') : undefined);
  await client.put('k', 'v');
  const puts = cluster.requests('put');
  assert.equal(puts.length, 3);
  assert.ok(puts.every((p) => p.seq === puts[0]!.seq));
  cluster.nodes[0]!.intercept = (req) => (req.op === 'put' ? err('INTERNAL', 'bug') : undefined);
  await assert.rejects(client.put('k2', 'v'), { name: 'PalisadeError', code: 'INTERNAL' });
});

test('a killed leader is not dialed again while a follower holds the request: not for a stale hello, nor by the scout', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  const members = cluster.nodes.map((n) => ({ id: n.id, clientUrl: n.url }));
  const hello = (n: FakeNode): Answer => ({ ok: true, result: { nodeId: n.id, clusterId: 'test', leader: 'n1', members } });
  for (const n of cluster.nodes) n.intercept = (req) => (req.op === 'hello' ? hello(n) : undefined);
  const dials: string[] = [];
  class CountingWebSocket extends WebSocket {
    constructor(url: string) {
      super(url);
      dials.push(url);
    }
  }
  const clock = new FakeClock();
  const client = await cluster.client({ endpoints: [n1.url], clock, WebSocket: CountingWebSocket });
  assert.equal(client.connectedUrl, n1.url);
  await n1.stop();
  // The followers have not noticed yet: their hellos still name n1, they know no leader when
  // asked (so the scout asks around every 100 ms), and they hold the put for the next leader.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  for (const n of [n2, n3]) {
    n.intercept = async (req) => {
      if (req.op === 'hello') return hello(n);
      if (req.op === 'status') return { ok: true, result: { id: n.id, role: 'follower', term: 1, leader: null, commitIndex: 0, appliedIndex: 0, members: [], pid: 0 } };
      if (req.op === 'put') await held;
      return undefined;
    };
  }
  const before = dials.length;
  const put = client.put('k', 'v');
  await until(() => cluster.requests('put').length === 1, 'the put reaches a follower');
  // Half a second on the SDK's clock (an election's worth, less than the two election
  // timeouts n1 is set aside for): five scout rounds at least.
  for (let i = 0; i < 10; i++) {
    clock.advance(50);
    await settle(10);
  }
  const other = cluster.log.find((e) => e.req.op === 'put')!.node === 'n2' ? 'n3' : 'n2';
  assert.ok(cluster.requests('status', other).length > 0, 'the scout asked the other follower');
  release();
  await put;
  assert.deepEqual(dials.slice(before).filter((u) => u === n1.url), [], 'the dead leader was not dialed again');
  assert.notEqual(client.connectedUrl, n1.url);
  assert.equal(cluster.requests('put').length, 1, 'served where it was held');
});
