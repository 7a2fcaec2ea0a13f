// Request dispatch in process: what a node answers before anything reaches the log, and
// what it sends elsewhere. The core's parts the tested paths do not touch are absent, so a
// path that reached for them would fail the test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { DEFAULT_MACHINE_CONFIG, LockMachine } from '../../src/lockfsm/index.js';
import type { RaftNode } from '../../src/raft/index.js';
import { validateConfig } from '../../src/config/cluster-config.js';
import type { Forwarder } from '../../src/server/replication/forwarding.js';
import type { LeaseAnswer } from '../../src/server/replication/lease-batch.js';
import { KeepAliveBatcher } from '../../src/server/replication/keepalive-batch.js';
import { LeaseKeeper } from '../../src/server/leases/lease-keeper.js';
import { MemberDirectory } from '../../src/storage/members.js';
import { ProposalTracker } from '../../src/server/replication/proposals.js';
import { AppliedWaiters, ReadUnavailable, type ReadIndexBatcher } from '../../src/server/replication/read-barrier.js';
import { RequestDispatcher } from '../../src/server/api/request-dispatch.js';
import { Subscriptions } from '../../src/server/api/subscriptions.js';
import type { Answer } from '../../src/protocol/ops.js';
import type { HelloResult, MemberInfo, NodeStatus, Request } from '../../src/protocol/client-protocol.js';
import type { MembershipAdmin } from '../../src/server/membership/membership-admin.js';
import { ClientGate } from '../../src/server/api/client-gate.js';
import { proofMatches, tokenDigest, tokenIdOf } from '../../src/protocol/node-proof.js';
import { activateAll } from '../support/leases.js';

const rawConfig = {
  clusterId: 'dispatch',
  secret: 'a-secret-of-this-test-0123456789',
  nodes: ['n1', 'n2'].map((id, i) => ({ id, peerUrl: `ws://127.0.0.1:${7101 + i}`, clientUrl: `ws://127.0.0.1:${7001 + i}`, dataDir: id })),
};
const cfg = validateConfig(rawConfig, '.');

function setup(opts: { role: 'leader' | 'follower'; stopping?: boolean; readFails?: boolean; leaderBatches?: boolean; members?: MemberInfo[] }) {
  const forwarded: Request[] = [];
  const batches: number[][] = [];
  const leaseBatch = new KeepAliveBatcher(async (sessions) => (batches.push([...sessions]), { ok: true, result: { ttls: sessions.map((s) => (s === 404 ? null : 5_000)) } }), 1);
  const leases = new LeaseKeeper(600);
  const confState = { voters: ['n1', 'n2'], learners: [] };
  const raft = { role: opts.role, leader: opts.role === 'leader' ? 'n1' : 'n2', confState } as unknown as RaftNode;
  const members = new MemberDirectory([['n2', { peerUrl: 'ws://127.0.0.1:7102', clientUrl: 'ws://127.0.0.1:7002' }]]);
  const reads = {
    request: async () => {
      if (opts.readFails) throw new ReadUnavailable('no quorum');
      return 0;
    },
  } as unknown as ReadIndexBatcher;
  const d = new RequestDispatcher({
    id: 'n1',
    cfg,
    log: pino({ level: 'silent' }),
    leases,
    applied: new AppliedWaiters(),
    proposals: new ProposalTracker(1_000),
    subs: new Subscriptions(),
    raft: () => raft,
    machine: () => new LockMachine(DEFAULT_MACHINE_CONFIG),
    proposer: () => assert.fail('nothing is proposed in these tests'),
    stamp: () => 0,
    members: () => members,
    reads: () => reads,
    admin: () => (opts.members ? ({ memberList: () => opts.members } as unknown as MembershipAdmin) : assert.fail('no admin op in these tests')),
    forwarder: () =>
      ({
        forward: async (req: Request): Promise<Answer> => (forwarded.push(req), { ok: true, result: 'forwarded' } as unknown as Answer),
        batchesFor: () => opts.leaderBatches ?? true,
      }) as unknown as Forwarder,
    leaseBatch: () => leaseBatch,
    ops: () => null,
    status: () => ({ id: 'n1' }) as NodeStatus,
    stopping: () => opts.stopping ?? false,
    kick: () => assert.fail('nothing is proposed in these tests'),
    now: () => 0,
  });
  return { d, forwarded, batches, leases };
}

const code = (a: Answer | LeaseAnswer) => (a.ok ? 'ok' : a.error.code);

test('a stopping node refuses every request as UNAVAILABLE', async () => {
  const { d } = setup({ role: 'leader', stopping: true });
  assert.equal(code(await d.handle({ id: 1, op: 'status' }, null)), 'UNAVAILABLE');
});

test('a hello of another protocol version is refused, naming both', async () => {
  const { d } = setup({ role: 'leader' });
  const a = await d.handle({ id: 1, op: 'hello', version: 999 } as Request, null);
  assert.equal(code(a), 'INVALID_ARGUMENT');
  assert.match(a.ok ? '' : a.error.message, /999.*\d/);
});

test('a follower forwards writes to the leader, and its keepalives in one batch', async () => {
  const { d, forwarded, batches } = setup({ role: 'follower' });
  await d.handle({ id: 1, op: 'openSession', ttlMs: 5_000 } as Request, null, 'jobs');
  const answers = await Promise.all([4, 404, 5].map((session, i) => d.handle({ id: 2 + i, op: 'keepAlive', session }, null)));
  assert.deepEqual(forwarded.map((r) => r.op), ['openSession']);
  assert.deepEqual(batches, [[4, 404, 5]]);
  assert.deepEqual(answers.map(code), ['ok', 'UNKNOWN_SESSION', 'ok']);
  assert.deepEqual(answers[0], { ok: true, result: { ttlMs: 5_000 } });
});

test('a follower whose leader does not serve batches (an older release) forwards each keepalive as before', async () => {
  const { d, forwarded, batches } = setup({ role: 'follower', leaderBatches: false });
  await Promise.all([4, 5].map((session, i) => d.handle({ id: 1 + i, op: 'keepAlive', session }, null)));
  assert.deepEqual(forwarded.map((r) => r.op), ['keepAlive', 'keepAlive']);
  assert.deepEqual(batches, []);
});

test("the leader renews a batch after one confirmed round: each known session's TTL, null for one it does not keep", async () => {
  const { d, leases } = setup({ role: 'leader' });
  activateAll(leases, 0, [{ session: 4, ttlMs: 7_000 }, { session: 6, ttlMs: 9_000 }]);
  assert.deepEqual(await d.renewLeases([6, 5, 4]), { ok: true, result: { ttls: [9_000, null, 7_000] } });
  assert.deepEqual(await d.handle({ id: 1, op: 'keepAlive', session: 5 }, null), { ok: false, error: { code: 'UNKNOWN_SESSION', message: 'session 5 is not open (never opened, closed or expired)' } });
});

test('a batch no round confirms is UNAVAILABLE as a whole, and so is one that reaches a follower', async () => {
  const leader = setup({ role: 'leader', readFails: true });
  activateAll(leader.leases, 0, [{ session: 4, ttlMs: 7_000 }]);
  assert.equal(code(await leader.d.renewLeases([4])), 'UNAVAILABLE');
  assert.equal(code(await setup({ role: 'follower' }).d.renewLeases([4])), 'UNAVAILABLE');
});

test('a read no leader can confirm is UNAVAILABLE with a hint where the leader is', async () => {
  const { d } = setup({ role: 'follower', readFails: true });
  const a = await d.handle({ id: 1, op: 'get', name: 'x' } as Request, null);
  assert.equal(code(a), 'UNAVAILABLE');
  assert.deepEqual(a.ok ? null : a.error.leaderHint, { id: 'n2', clientUrl: 'ws://127.0.0.1:7002' });
});

test('an op nobody knows is UNKNOWN_OP', async () => {
  const { d } = setup({ role: 'leader' });
  assert.equal(code(await d.handle({ id: 1, op: 'frobnicate' } as unknown as Request, null)), 'UNKNOWN_OP');
});

test('a hello lists the voters, never a learner: an admin token alone makes a learner of any URL', async () => {
  const members: MemberInfo[] = [
    { id: 'n1', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', voter: true },
    { id: 'n2', peerUrl: 'ws://127.0.0.1:7102', clientUrl: 'ws://127.0.0.1:7002', voter: true },
    { id: 'planted', peerUrl: 'ws://127.0.0.1:9', clientUrl: 'ws://127.0.0.1:6666', voter: false },
  ];
  const { d } = setup({ role: 'leader', members });
  const a = await d.handle({ id: 1, op: 'hello', version: 1 }, null);
  assert.deepEqual(a.ok ? a.result.members : null, [
    { id: 'n1', clientUrl: 'ws://127.0.0.1:7001' },
    { id: 'n2', clientUrl: 'ws://127.0.0.1:7002' },
  ]);
});

test('a challenge hello is answered with the proof of the token digest for this node\'s own client URL and authenticates nothing', async () => {
  const token = 'jobs-token-0123456789abcdef';
  const authed = validateConfig({ ...rawConfig, auth: { tokens: [{ name: 'jobs', token, prefixes: ['jobs/'] }] } }, '.');
  const { d } = setup({ role: 'leader' });
  const conn = new ClientGate(authed, pino({ level: 'silent' }), () => ({}) as never).open({ id: 1, remoteAddress: '127.0.0.1' });
  const digest = tokenDigest(token);
  const nonce = new Uint8Array(16).fill(7);
  const challenged = await d.serve(conn, { id: 1, op: 'hello', version: 1, challenge: { tokenId: tokenIdOf(digest), nonce } }, null);
  assert.ok(challenged.ok, 'answered');
  const hello = challenged.result as HelloResult;
  assert.deepEqual([hello.clusterId, hello.leader, hello.members], ['dispatch', null, []], 'names no leader and no member before authentication');
  assert.ok(proofMatches(hello.proof, digest, 'dispatch', 'ws://127.0.0.1:7001', nonce), "the proof is n1's, for n1's client URL");
  assert.ok(!proofMatches(hello.proof, digest, 'dispatch', 'ws://127.0.0.1:7002', nonce), 'and for no other URL');
  assert.equal(conn.who, null, 'the challenge hello authenticated nothing');
  const unknown = await d.serve(conn, { id: 2, op: 'hello', version: 1, challenge: { tokenId: tokenIdOf(tokenDigest('another-token-0123456789')), nonce } }, null);
  assert.equal(code(unknown), 'UNAUTHENTICATED');
  // With auth off there is no token to prove anything with.
  const open = new ClientGate(cfg, pino({ level: 'silent' }), () => ({}) as never).open({ id: 2, remoteAddress: '127.0.0.1' });
  const bare = await d.serve(open, { id: 3, op: 'hello', version: 1, challenge: { tokenId: tokenIdOf(digest), nonce } }, null);
  assert.equal(bare.ok && (bare.result as HelloResult).proof, undefined);
});
