// A planted member, on real processes: an admin adds a member whose client URL is a fake
// node (test/support/fake-member.ts) that answers for another cluster, or copies the real
// cluster's id and grants token 1. Then every real node is paused (SIGSTOP), so a client that
// had been working fails over to whatever it knows, and resumed (SIGCONT).
//
// - Planted as a learner (what addMember alone makes): no hello lists it, so no client dials
//   it at all.
// - Planted as a voter: the real cluster promotes a member whose peer side is a real node
//   (it holds the cluster secret and catches up) while its recorded client URL is the fake.
//   Clients learn it, dial it while the real nodes are paused, and give it neither their
//   token (it cannot prove it holds the token's digest) nor their session.
// - With auth off there is no token to withhold and the fake is given the session: its grant
//   (token 1) is refused as TOKEN_REGRESSION.
// In each case, once the real nodes resume, the client is served by them again.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockClient, TokenRegressionError, type Lock, type TrustViolation } from '../../src/client/index.js';
import { rpc, RpcError, type RpcCredentials } from '../../src/protocol/rpc.js';
import type { HelloResult, RequestBody } from '../../src/protocol/client-protocol.js';
import type { Op, ResultOf } from '../../src/protocol/ops.js';
import { TestCluster, freePort, sleep, until } from '../support/cluster.js';
import { FakeMember } from '../support/fake-member.js';
import { within } from '../support/within.js';

const CLUSTER_ID = 'palisade-test'; // the harness's
const ADMIN = 'admin-token-0123456789abcdef';
const JOBS = 'jobs-token-0123456789abcdef';
const AUTH = {
  auth: {
    tokens: [
      { name: 'ops', token: ADMIN, admin: true },
      { name: 'jobs', token: JOBS, prefixes: ['jobs/'] },
    ],
  },
};

/** An admin request to any running node, retried while a membership change is in progress. */
async function admin<O extends Op>(c: TestCluster, body: RequestBody & { readonly op: O }): Promise<ResultOf<O>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const id of c.procs.keys()) {
      try {
        return await rpc<O>(c.node(id).clientUrl, body, 5_000, c.credentials);
      } catch (e) {
        if (e instanceof RpcError && (e.code === 'UNAUTHENTICATED' || e.code === 'PERMISSION_DENIED' || e.code === 'INVALID_ARGUMENT')) throw e;
        if (Date.now() > deadline) throw e;
      }
    }
    await sleep(100);
  }
}

/** What a hello says to a client with `credentials`. */
async function helloOf(c: TestCluster, credentials: RpcCredentials): Promise<HelloResult> {
  return rpc(c.endpoints[0]!, { op: 'hello', version: 1, ...(credentials.token ? { token: credentials.token } : {}) }, 5_000, credentials);
}

/** Adds `id` as a learner whose client URL is `fake`'s (and, with `peerOf`, whose peer URL
 *  is that real node's, so that it catches up and is promoted). */
async function plant(c: TestCluster, id: string, fake: FakeMember, peerUrl: string): Promise<void> {
  await admin(c, { op: 'addMember', member: id, peerUrl, clientUrl: fake.url });
}

/** Plants `id` as a voter: a real node joins under that id, its recorded client URL the fake's. */
async function plantVoter(c: TestCluster, id: string, fake: FakeMember): Promise<void> {
  const spec = await c.addNodeSpec(id);
  await plant(c, id, fake, spec.peerUrl);
  await c.start(id, { join: c.endpoints.slice(0, 3) });
  await until(async () => (await admin(c, { op: 'members' })).some((m) => m.id === id && m.voter), 20_000, `${id} promoted`);
}

async function pauseAll(c: TestCluster): Promise<() => Promise<void>> {
  const ids = [...c.procs.keys()];
  for (const id of ids) await c.signal(id, 'SIGSTOP');
  return async () => {
    for (const id of ids) await c.signal(id, 'SIGCONT');
  };
}

/** Clients still open; closed after each suite, also when a test failed half-way (an open
 *  client would keep the test process alive). */
const clients = new Set<LockClient>();
async function closeClients(): Promise<void> {
  await Promise.all([...clients].map((client) => client.close().catch(() => {})));
  clients.clear();
}

/** A client of the real cluster that has taken a few locks: its floor is their last token. */
async function workingClient(c: TestCluster, token: string | undefined, violations: TrustViolation[]): Promise<{ client: LockClient; floor: number }> {
  const client = await LockClient.connect({
    endpoints: c.endpoints.slice(0, 3),
    ...(token ? { authToken: token } : {}),
    ttlMs: 30_000,
    requestTimeoutMs: 30_000,
    onTrustViolation: (v) => violations.push(v),
  });
  clients.add(client);
  let floor = 0;
  for (let i = 0; i < 3; i++) {
    const lock = await client.acquire(`jobs/warm-${i}`);
    floor = lock.token;
    await lock.release();
  }
  return { client, floor };
}

/** The fake saw hellos only, and never a token. */
function assertKeptOut(fake: FakeMember, what: string): void {
  assert.deepEqual(fake.tokensReceived, [], `${what}: no token was sent to it`);
  assert.deepEqual(fake.frames.map((f) => f.op).filter((op) => op !== 'hello'), [], `${what}: nothing but hello (no attach, no acquire)`);
}

/** The planted members stay set aside this long after the real nodes pause, so that a client
 *  that would dial them has had time to, many times over: the link gives a silent node up
 *  within 0.7 s and then dials every endpoint it knows. Waiting for something not to happen
 *  has no event to wait for. */
const OUTAGE_MS = 3_000;

describe('a member planted with addMember', () => {
  let c: TestCluster | undefined;
  const fakes: FakeMember[] = [];
  after(async () => {
    await closeClients();
    await c?.stop();
    await Promise.all(fakes.map((f) => f.close()));
  });

  test('auth on: as a learner nobody is told of it; as a voter it is dialled but given no token and no session; the client comes back to the real nodes', async () => {
    c = await TestCluster.started({ extraConfig: AUTH, credentials: { token: ADMIN } });
    const fake = async (nodeId: string, clusterId: string): Promise<FakeMember> => {
      const f = await FakeMember.start({ nodeId, clusterId, grantToken: 1 });
      fakes.push(f);
      return f;
    };

    // --- as learners -------------------------------------------------------------------------
    const learnerForeign = await fake('planted-a', 'another-cluster');
    const learnerCopy = await fake('planted-b', CLUSTER_ID);
    await plant(c, 'planted-a', learnerForeign, `ws://127.0.0.1:${await freePort()}`);
    await plant(c, 'planted-b', learnerCopy, `ws://127.0.0.1:${await freePort()}`);
    const members = await admin(c, { op: 'members' });
    assert.deepEqual(members.filter((m) => !m.voter).map((m) => m.id).sort(), ['planted-a', 'planted-b'], 'the admin planted two learners');
    const listed = (await helloOf(c, { token: JOBS })).members.map((m) => m.id).sort();
    assert.deepEqual(listed, ['n1', 'n2', 'n3'], "a jobs/ token's hello lists the voters only");

    const violations: TrustViolation[] = [];
    const first = await workingClient(c, JOBS, violations);
    let resume = await pauseAll(c);
    let pending: Promise<Lock>;
    try {
      pending = first.client.acquire('jobs/during-outage');
      pending.catch(() => {});
      await sleep(OUTAGE_MS);
    } finally {
      await resume();
    }
    let lock = await within(pending, 20_000, () => 'the acquire sent during the outage to be granted once the nodes resumed');
    assert.ok(lock.token > first.floor, `granted by the real cluster above the floor (${lock.token} > ${first.floor})`);
    await lock.release();
    assert.equal(learnerForeign.connections + learnerCopy.connections, 0, 'no client dialled a learner');
    assert.equal(violations.length, 0, `nothing to report: ${JSON.stringify(violations)}`);
    await first.client.close();

    // --- as voters ------------------------------------------------------------------------------
    const voterForeign = await fake('n4', 'another-cluster');
    const voterCopy = await fake('n5', CLUSTER_ID);
    await plantVoter(c, 'n4', voterForeign);
    await plantVoter(c, 'n5', voterCopy);
    const advertised = (await helloOf(c, { token: JOBS })).members;
    assert.deepEqual(
      advertised.filter((m) => m.id === 'n4' || m.id === 'n5').map((m) => m.clientUrl),
      [voterForeign.url, voterCopy.url],
      'promoted, the planted URLs are listed to clients',
    );

    const second = await workingClient(c, JOBS, violations);
    resume = await pauseAll(c);
    try {
      pending = second.client.acquire('jobs/during-outage');
      pending.catch(() => {});
      await until(() => voterForeign.sent('hello').length > 0 && voterCopy.sent('hello').length > 0, 15_000, 'the client to dial both planted voters');
    } finally {
      await resume();
    }
    lock = await within(pending, 20_000, () => 'the acquire sent during the outage to be granted once the nodes resumed');
    assert.ok(lock.token > second.floor, `granted by the real cluster above the floor (${lock.token} > ${second.floor})`);
    assert.ok(c.endpoints.slice(0, 3).includes(second.client.connectedUrl ?? ''), `served by a real node (${second.client.connectedUrl})`);
    await lock.release();
    assertKeptOut(voterForeign, 'the voter of another cluster');
    assertKeptOut(voterCopy, 'the voter with the copied cluster id');
    assert.ok(voterCopy.sent('hello').every((f) => f.challenge !== undefined), 'every hello to it was a challenge hello');
    assert.deepEqual(
      violations.map((v) => [v.kind, v.url]).sort(),
      [
        ['CLUSTER_MISMATCH', voterForeign.url],
        ['UNPROVEN_NODE', voterCopy.url],
      ].sort(),
    );
    await second.client.close();
  });
});

describe('a member planted with addMember in a cluster without auth', () => {
  let c: TestCluster | undefined;
  let fake: FakeMember | undefined;
  after(async () => {
    await closeClients();
    await c?.stop();
    await fake?.close();
  });

  test('its grant below the floor is refused as TOKEN_REGRESSION, and the client comes back to the real nodes', async () => {
    c = await TestCluster.started();
    fake = await FakeMember.start({ nodeId: 'n4', clusterId: CLUSTER_ID, grantToken: 1 });
    await plantVoter(c, 'n4', fake);
    const violations: TrustViolation[] = [];
    const { client, floor } = await workingClient(c, undefined, violations);
    const resume = await pauseAll(c);
    let outcome: unknown;
    try {
      outcome = await within(
        client.acquire('jobs/during-outage').then(
          (lock) => lock,
          (e: unknown) => e,
        ),
        15_000,
        () => `the acquire to fail over to the planted voter (frames it got: ${fake!.frames.map((f) => f.op).join(',')})`,
      );
    } finally {
      await resume();
    }
    assert.ok(outcome instanceof TokenRegressionError, `refused as TOKEN_REGRESSION, not ${String(outcome)}`);
    assert.deepEqual([outcome.token, outcome.floor, outcome.url], [1, floor, fake.url]);
    assert.ok(fake.sent('acquire').length > 0, 'the planted voter answered the acquire');
    assert.deepEqual(violations.map((v) => [v.kind, v.url]), [['TOKEN_REGRESSION', fake.url]]);
    const lock = await client.acquire('jobs/during-outage');
    assert.ok(lock.token > floor, `granted by the real cluster above the floor (${lock.token} > ${floor})`);
    assert.ok(c.endpoints.slice(0, 3).includes(client.connectedUrl ?? ''), `served by a real node (${client.connectedUrl})`);
    await lock.release();
    await client.close();
  });
});
