// Clients trust the cluster, not whoever answers: the cluster id pinned at the first hello,
// a learned member given the token only once it proved it holds its digest, learned URLs
// dialled only with the seeds' protection, and grants below the client's token floor refused.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { LockClient, TokenRegressionError, type TrustViolation, type WebSocketConstructor } from '../../src/client/index.js';
import { learnedUrlProblem, seedTransport } from '../../src/client/endpoint-policy.js';
import { TokenFloor } from '../../src/client/token-floor.js';
import { FakeCluster, type Answer, type FakeNode } from './fake-cluster.js';
import { until } from './fake-clock.js';
import { within } from '../support/within.js';

const TOKEN = 'jobs-token-0123456789abcdef';

/** A client of `cluster` that collects what it reports instead of warning the process. */
async function watchedClient(cluster: FakeCluster, options: Parameters<FakeCluster['client']>[0] = {}): Promise<{ client: LockClient; violations: TrustViolation[] }> {
  const violations: TrustViolation[] = [];
  const client = await cluster.client({ onTrustViolation: (v) => violations.push(v), ...options });
  return { client, violations };
}

/** Every node lists `members` in its hello. */
function advertise(cluster: FakeCluster, members: readonly FakeNode[]): void {
  cluster.members = members.map((n) => ({ id: n.id, clientUrl: n.url }));
}

// ---- the cluster id pin ------------------------------------------------------------------

test('a node answering for another cluster is not used: no attach, no request; the client goes on to a node of its own', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  n2.clusterId = 'elsewhere';
  const { client, violations } = await watchedClient(cluster);
  assert.equal(client.connectedUrl, n1.url, 'pinned to "test" by n1, the first endpoint');
  await n1.stop();
  const lock = await client.acquire('a');
  assert.equal(client.connectedUrl, n3.url);
  assert.ok(cluster.requests('hello', 'n2').length > 0, 'n2 was dialled');
  assert.deepEqual(
    cluster.log.filter((e) => e.node === 'n2').map((e) => e.req.op).filter((op) => op !== 'hello'),
    [],
    'nothing but hello went to the other cluster',
  );
  assert.deepEqual(
    violations.map((v) => [v.kind, v.url]),
    [['CLUSTER_MISMATCH', n2.url]],
  );
  assert.match(violations[0]!.message, /"elsewhere".*"test"/);
  await lock.release();
});

test('the clusterId option pins the cluster before the first hello', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes as [FakeNode, FakeNode];
  n1.clusterId = 'elsewhere';
  const { client, violations } = await watchedClient(cluster, { clusterId: 'test' });
  assert.equal(client.connectedUrl, n2.url);
  assert.equal(cluster.requests('openSession', 'n1').length, 0);
  assert.deepEqual(violations.map((v) => v.kind), ['CLUSTER_MISMATCH']);
});

// ---- learned members prove themselves before the token goes to them -----------------------

/** Three nodes, each listed in hello; a client given n1 alone learns n2 and n3. n1 and n3
 *  hold the client's token, as members of its cluster do. */
async function learnedMembers(t: TestContext): Promise<{ cluster: FakeCluster; n1: FakeNode; n2: FakeNode; n3: FakeNode }> {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  advertise(cluster, [n1, n2, n3]);
  n1.tokens = [TOKEN];
  n3.tokens = [TOKEN];
  return { cluster, n1, n2, n3 };
}

test('a learned member that cannot prove it holds the token is never sent it, nor the session', async (t) => {
  const { cluster, n1, n2, n3 } = await learnedMembers(t);
  // n2 answers for the right cluster (anyone can copy a cluster id) but holds no token.
  const { client, violations } = await watchedClient(cluster, { endpoints: [n1.url], authToken: TOKEN });
  await n1.stop();
  await client.acquire('a');
  assert.equal(client.connectedUrl, n3.url);
  const toN2 = cluster.log.filter((e) => e.node === 'n2').map((e) => e.req);
  assert.ok(toN2.length > 0, 'n2 was dialled');
  assert.deepEqual(
    toN2.map((r) => [r.op, r.token === undefined, r.challenge !== undefined]),
    toN2.map(() => ['hello', true, true]),
    'n2 got challenge hellos only, never the token, no attach',
  );
  assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['UNPROVEN_NODE', n2.url]]);
  // n3 proved, then got the token in a second hello, then the session.
  const toN3 = cluster.log.filter((e) => e.node === 'n3').map((e) => e.req);
  assert.equal(toN3[0]!.challenge !== undefined && toN3[0]!.token === undefined, true);
  assert.deepEqual(toN3.slice(1, 3).map((r) => [r.op, r.token]), [['hello', TOKEN], ['attach', undefined]]);
});

test('a learned member relaying the challenge to a real node is refused: the proof names the real node\'s URL', async (t) => {
  const { cluster, n1, n2, n3 } = await learnedMembers(t);
  n2.tokens = [TOKEN];
  n2.provesAs = n3.url; // what a relay to n3 gets back
  const { client, violations } = await watchedClient(cluster, { endpoints: [n1.url], authToken: TOKEN });
  await n1.stop();
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, n3.url);
  assert.equal(cluster.requests('hello', 'n2').filter((r) => r.token !== undefined).length, 0, 'the token never went to n2');
  assert.deepEqual(violations.map((v) => v.kind), ['UNPROVEN_NODE']);
  assert.match(violations[0]!.message, /wrong proof/);
});

test('a learned member refusing the challenge is set aside, not taken for bad credentials', async (t) => {
  const { cluster, n1, n2, n3 } = await learnedMembers(t);
  n2.tokens = ['some-other-token-0123456789']; // answers UNAUTHENTICATED to our token's id
  const { client } = await watchedClient(cluster, { endpoints: [n1.url], authToken: TOKEN });
  await n1.stop();
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, n3.url);
});

// ---- learned URLs with the seeds' protection ----------------------------------------------

test('learned URLs are dialled only with the protection of the seeds', () => {
  assert.equal(seedTransport(['wss://a:1', 'wss://b:1']), 'tls');
  assert.equal(seedTransport(['ws://127.0.0.1:1', 'ws://localhost:2', 'ws://[::1]:3']), 'loopback');
  assert.equal(seedTransport(['ws://127.0.0.1:1', 'ws://10.0.0.2:1']), 'network');
  assert.throws(() => seedTransport(['wss://a:1', 'ws://b:1']), { code: 'INVALID_ARGUMENT' });
  const cases: [string, ReturnType<typeof seedTransport>, boolean][] = [
    ['wss://10.0.0.3:7001', 'tls', true],
    ['ws://10.0.0.3:7001', 'tls', false],
    ['ws://127.0.0.1:7001', 'tls', false],
    ['ws://127.0.0.9:7001', 'loopback', true],
    ['ws://localhost:7001', 'loopback', true],
    ['ws://10.0.0.3:7001', 'loopback', false],
    ['wss://127.0.0.1:7001', 'loopback', false],
    ['ws://10.0.0.3:7001', 'network', true],
    ['wss://10.0.0.3:7001', 'network', false],
    ['http://10.0.0.3:7001', 'network', false],
    ['not a url', 'network', false],
  ];
  for (const [url, seeds, allowed] of cases) assert.equal(learnedUrlProblem(url, seeds) === null, allowed, `${url} with ${seeds} seeds`);
});

/** A WebSocket that records every URL dialled; URLs in `mapped` are served by another
 *  (a wss:// seed by a ws:// fake node), and any other non-loopback URL is refused here, so
 *  that no test traffic leaves 127.0.0.0/8 even when the rule under test is broken. */
function recordingWebSocket(dialled: string[], mapped: ReadonlyMap<string, string> = new Map()): WebSocketConstructor {
  return class extends WebSocket {
    constructor(url: string) {
      dialled.push(url);
      const target = mapped.get(url) ?? url;
      if (!new URL(target).hostname.startsWith('127.')) throw new Error(`the test does not dial ${url}`);
      super(target);
    }
  };
}

test('ws:// seeds on loopback: a member listed off this host is never dialled, and reported once', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes as [FakeNode, FakeNode];
  const offHost = 'ws://192.0.2.7:7001';
  cluster.members = [
    { id: 'n1', clientUrl: n1.url },
    { id: 'n2', clientUrl: n2.url },
    { id: 'n9', clientUrl: offHost },
  ];
  const dialled: string[] = [];
  const { client, violations } = await watchedClient(cluster, { endpoints: [n1.url], WebSocket: recordingWebSocket(dialled) });
  await n1.stop();
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, n2.url, 'the loopback member was learned');
  assert.ok(!dialled.includes(offHost), 'the off-host ws:// member was not dialled');
  assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['INSECURE_ENDPOINT', offHost]]);
});

test('wss:// seeds: a member listed with ws:// is never dialled; wss:// members are', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  const secure = (n: FakeNode): string => n.url.replace('ws://', 'wss://');
  // n1 and n3 are listed (and served) as wss://; n2 is listed with its plain ws:// URL.
  cluster.members = [
    { id: 'n1', clientUrl: secure(n1) },
    { id: 'n2', clientUrl: n2.url },
    { id: 'n3', clientUrl: secure(n3) },
  ];
  const dialled: string[] = [];
  const mapped = new Map([n1, n3].map((n) => [secure(n), n.url]));
  const { client, violations } = await watchedClient(cluster, { endpoints: [secure(n1)], WebSocket: recordingWebSocket(dialled, mapped) });
  await n1.stop();
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, secure(n3));
  assert.ok(!dialled.includes(n2.url), 'the ws:// member was not dialled');
  assert.equal(cluster.requests('hello', 'n2').length, 0);
  assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['INSECURE_ENDPOINT', n2.url]]);
});

// ---- the token floor ------------------------------------------------------------------------

test('the floor: a grant must be above the floor its request was sent with; the floor rises with accepted grants only', () => {
  const floor = new TokenFloor();
  const atA = floor.current;
  const atB = floor.current;
  assert.equal(floor.check(11, atB, 'b', 'ws://n'), null);
  assert.equal(floor.current, 11);
  assert.equal(floor.check(10, atA, 'a', 'ws://n'), null, 'an earlier request granted earlier, answered later');
  assert.equal(floor.current, 11, 'a lower accepted token leaves the floor');
  const atC = floor.current;
  const refused = floor.check(11, atC, 'c', 'ws://liar');
  assert.ok(refused instanceof TokenRegressionError, 'a token at the floor is refused');
  assert.deepEqual([refused.code, refused.token, refused.floor, refused.lockName, refused.url], ['TOKEN_REGRESSION', 11, 11, 'c', 'ws://liar']);
  assert.equal(floor.check(3, atC, 'c', 'ws://liar')?.code, 'TOKEN_REGRESSION');
  assert.equal(floor.current, 11, 'a refused token leaves the floor');
});

test('an acquire answered with a token below one already accepted fails TOKEN_REGRESSION; the node is left, the request withdrawn', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes as [FakeNode, FakeNode];
  const { client, violations } = await watchedClient(cluster);
  const first = await client.acquire('a');
  await first.release();
  // n1 now answers acquires as a node that lost its log would: with token 1.
  n1.intercept = (req, conn) => {
    if (req.op !== 'acquire') return undefined;
    cluster.apply(req, conn); // the cluster did apply it: the client must undo it
    return { ok: true, result: { status: 'granted', token: 1, index: 1 } } satisfies Answer;
  };
  await assert.rejects(client.acquire('b'), (e: unknown) => {
    assert.ok(e instanceof TokenRegressionError, `TokenRegressionError, not ${String(e)}`);
    assert.deepEqual([e.token, e.floor, e.lockName, e.url], [1, first.token, 'b', n1.url]);
    return true;
  });
  assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['TOKEN_REGRESSION', n1.url]]);
  await until(() => cluster.holder('b') === null, 'the grant the request made in the cluster released');
  const again = await client.acquire('b');
  assert.equal(client.connectedUrl, n2.url, 'the client left n1');
  assert.ok(again.token > first.token, 'the real cluster grants above the floor');
});

test('a re-delivered answer for an earlier acquire is no regression, though a later grant was accepted first', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1] = cluster.nodes as [FakeNode, FakeNode];
  const { client, violations } = await watchedClient(cluster);
  // n1 applies acquire 'a' and keeps its answer; 'b' is granted and answered after it.
  n1.intercept = (req, conn) => {
    if (req.op !== 'acquire' || req.name !== 'a') return undefined;
    cluster.apply(req, conn);
    return 'silent';
  };
  const a = client.acquire('a');
  await until(() => cluster.holder('a') !== null, 'a granted in the cluster');
  const b = await client.acquire('b');
  // The connection drops: the retry of 'a' (same seq) gets its first answer from n2.
  n1.intercept = null;
  n1.dropConnections();
  const lockA = await a;
  assert.ok(lockA.token < b.token, `a (${lockA.token}) was granted before b (${b.token})`);
  assert.deepEqual(violations, []);
});

test('a granted event with a token below the floor fails the waiting acquire with TOKEN_REGRESSION', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes as [FakeNode, FakeNode];
  const { client, violations } = await watchedClient(cluster);
  const other = await cluster.client({ endpoints: [n2.url] });
  const held = await client.acquire('held');
  await other.acquire('q');
  const waiting = client.acquire('q');
  await until(() => cluster.waiters('q').length === 1, 'queued');
  // A forged grant, after the queue entry, with a token under the floor.
  cluster.push({ event: 'granted', index: cluster.index + 1, session: client.sessionId!, name: 'q', token: held.token, mode: 'exclusive' });
  await assert.rejects(waiting, { name: 'TokenRegressionError', code: 'TOKEN_REGRESSION' });
  assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['TOKEN_REGRESSION', n1.url]]);
  await until(() => cluster.waiters('q').length === 0, 'the wait withdrawn from the cluster');
});

test('a refused grant event is no news of the cluster: a real grant that won the race with the withdrawal is read and released', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const { client } = await watchedClient(cluster);
  const other = await cluster.client();
  const held = await client.acquire('held');
  const theirs = await other.acquire('q');
  const waiting = client.acquire('q');
  await until(() => cluster.waiters('q').length === 1, 'queued');
  const session = client.sessionId!;
  // The real grant is made just before the withdrawal's cancelWait, and its event is lost.
  for (const n of cluster.nodes) {
    n.intercept = async (req, conn) => {
      if (req.op === 'cancelWait') {
        cluster.subs.sessions.remove(session, conn);
        await theirs.release();
        cluster.subs.sessions.add(session, conn);
      }
      return undefined;
    };
  }
  cluster.push({ event: 'granted', index: cluster.index + 1, session, name: 'q', token: held.token, mode: 'exclusive' });
  await assert.rejects(waiting, { code: 'TOKEN_REGRESSION' });
  await until(() => cluster.holder('q') === null, 'the real grant released, not held for nobody');
  assert.ok(cluster.requests('get').some((r) => r.name === 'q'), 'the lock was read to learn the real grant');
});

test('a leadership with a token below the floor fails the campaign with TOKEN_REGRESSION', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1] = cluster.nodes as [FakeNode, FakeNode];
  const { client } = await watchedClient(cluster);
  const lock = await client.acquire('a');
  n1.intercept = (req) => (req.op === 'campaign' ? { ok: true, result: { status: 'leader', token: lock.token, index: lock.token } } : undefined);
  await assert.rejects(client.election('e').campaign('v'), { code: 'TOKEN_REGRESSION' });
});

test('a node that answers a campaign "queued" at a low index and then says this client leads below the floor: TOKEN_REGRESSION, the candidacy withdrawn', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1] = cluster.nodes as [FakeNode, FakeNode];
  const { client, violations } = await watchedClient(cluster);
  const other = await cluster.client({ endpoints: [cluster.nodes[1]!.url] });
  const held = await client.acquire('a');
  await other.election('e').campaign('theirs');
  // n1 queues the campaign in the cluster but answers it as queued at index 1, and reads the
  // election as led by this client at token 2: after the index it claimed, below the floor.
  const ours = client.sessionId!;
  n1.intercept = (req, conn) => {
    if (req.op === 'observe') return { ok: true, result: { election: 'e', leader: ours, value: 'ours', token: 2 } };
    if (req.op !== 'campaign') return undefined;
    cluster.apply(req, conn);
    return { ok: true, result: { status: 'queued', position: 1, index: 1 } };
  };
  const campaign = client.election('e').campaign('ours');
  await assert.rejects(within(campaign, 3_000, () => 'the campaign to settle'), { code: 'TOKEN_REGRESSION' });
  assert.ok(2 <= held.token, 'the leadership was below the floor');
  assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['TOKEN_REGRESSION', n1.url]]);
  await until(() => cluster.requests('resign').some((r) => r.session === ours), 'a resign sent to withdraw the candidacy');
  await until(() => !cluster.candidates('e').includes(ours), 'the candidacy withdrawn from the cluster');
});

test('without onTrustViolation, a violation is a process warning', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const [n1, n2] = cluster.nodes as [FakeNode, FakeNode];
  n2.clusterId = 'elsewhere';
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  const client = await cluster.client();
  await n1.stop();
  const put = client.put('k', 'v', { timeoutMs: 500 }).catch(() => {});
  await until(() => warnings.some((w) => w.name === 'PalisadeTrustWarning'), 'a PalisadeTrustWarning');
  assert.equal((warnings.find((w) => w.name === 'PalisadeTrustWarning') as Error & { code?: string }).code, 'PALISADE_CLUSTER_MISMATCH');
  await put;
});
