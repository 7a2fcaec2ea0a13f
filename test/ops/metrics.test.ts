// /metrics on a real 3-node cluster: the text parses as Prometheus exposition format and
// carries the series operators alert on, with values that follow what the test did.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rpc, RpcError } from '../../src/protocol/rpc.js';
import { LockClient } from '../../src/client/index.js';
import { TestCluster, until } from '../support/cluster.js';
import { find, metricsOf, value, type Exposition } from './helpers.js';

let cluster: TestCluster;
let leader: string;
let client: LockClient;

before(async () => {
  cluster = await TestCluster.create({ sessions: { minTtlMs: 600 } });
  await cluster.startAll();
  leader = await cluster.waitForLeader();
  client = await LockClient.connect({ endpoints: [cluster.node(leader).clientUrl], ttlMs: 30_000, preferLeader: true });
});

after(async () => {
  await client?.close().catch(() => {});
  await cluster?.stop();
});

test('metrics: the leader exports raft, storage, lock and client series', async () => {
  const url = cluster.node(leader).clientUrl;
  const lock = await client.acquire('metrics/held');
  // A waiter, queued behind the held lock, from a second long-lived session.
  const waiter = await rpc(url, { op: 'openSession', ttlMs: 30_000 });
  const queued = await rpc(url, { op: 'acquire', session: waiter.session, seq: 1, name: 'metrics/held', mode: 'exclusive', wait: true });
  assert.equal(queued.status, 'queued');
  // A request the node refuses, to count by its error code.
  await assert.rejects(rpc(url, { op: 'keepAlive', session: 987_654_321 }), (e: RpcError) => e.code === 'UNKNOWN_SESSION');

  const m = await metricsOf(cluster.node(leader).httpUrl);
  assert.equal(m.types.get('palisade_raft_role'), 'gauge');
  assert.equal(m.types.get('palisade_raft_proposal_commit_seconds'), 'histogram');
  assert.equal(m.types.get('palisade_storage_fsync_seconds'), 'histogram');
  assert.equal(m.types.get('palisade_raft_leader_changes_total'), 'counter');

  assert.equal(value(m, 'palisade_raft_role', { role: 'leader', node: leader }), 1);
  assert.equal(value(m, 'palisade_raft_role', { role: 'follower' }), 0);
  assert.ok(value(m, 'palisade_raft_term') >= 1);
  assert.equal(value(m, 'palisade_raft_has_leader'), 1);
  assert.ok(value(m, 'palisade_raft_leader_changes_total') >= 1);
  const commit = value(m, 'palisade_raft_commit_index');
  assert.ok(commit >= 4, `commit index ${commit}`);
  assert.ok(value(m, 'palisade_raft_applied_index') <= commit);
  assert.ok(value(m, 'palisade_raft_proposals_total', { outcome: 'committed' }) >= 3);
  assert.equal(value(m, 'palisade_raft_proposals_total', { outcome: 'lost' }), 0);
  assert.ok(value(m, 'palisade_raft_proposal_commit_seconds_count') >= 3);
  assert.ok(value(m, 'palisade_raft_proposal_commit_seconds_bucket', { le: '+Inf' }) >= 3);
  assert.ok(value(m, 'palisade_storage_fsync_seconds_count') >= 1);
  assert.ok(value(m, 'palisade_storage_bytes_written_total') > 0);

  const peers = cluster.nodes.map((n) => n.id).filter((id) => id !== leader);
  for (const peer of peers) {
    assert.ok(value(m, 'palisade_raft_peer_replication_lag_entries', { peer }) >= 0);
    assert.ok(value(m, 'palisade_raft_peer_match_index', { peer }) >= 1);
    assert.ok(value(m, 'palisade_raft_peer_rtt_seconds_count', { peer }) >= 1, `no heartbeat round trip measured to ${peer}`);
  }
  assert.equal(find(m, 'palisade_raft_peer_replication_lag_entries', { peer: leader }).length, 0, 'the leader does not report itself as a peer');

  assert.ok(value(m, 'palisade_sessions') >= 2);
  assert.ok(value(m, 'palisade_locks_held') >= 1);
  assert.ok(value(m, 'palisade_lock_waiters') >= 1);
  assert.ok(value(m, 'palisade_lock_grants_total', { mode: 'exclusive' }) >= 1);
  assert.ok(value(m, 'palisade_client_connections') >= 1, 'the SDK connection');
  assert.ok(value(m, 'palisade_client_requests_total', { op: 'acquire' }) >= 2);
  assert.ok(value(m, 'palisade_client_requests_total', { op: 'openSession' }) >= 1);
  assert.ok(value(m, 'palisade_client_requests_rejected_total', { code: 'UNKNOWN_SESSION', op: 'keepAlive' }) >= 1);
  assert.equal(value(m, 'palisade_build_info', { nodejs: process.versions.node }), 1);
  assert.match(find(m, 'palisade_build_info')[0]!.labels['version']!, /^\d+\.\d+\.\d+/);
  assert.equal(value(m, 'palisade_client_frames_rejected_total', { reason: 'bad_frame' }), 0);
  // Process metrics, labelled with the node like every series.
  assert.ok(value(m, 'process_cpu_user_seconds_total', { node: leader }) >= 0);
  await lock.release();
});

test('metrics: the leader times lock waits (queued to granted) and holds (granted to released)', async () => {
  const url = cluster.node(leader).clientUrl;
  const before = await metricsOf(cluster.node(leader).httpUrl);
  const waits0 = value(before, 'palisade_lock_wait_seconds_count');
  const holds0 = value(before, 'palisade_lock_hold_seconds_count');
  const a = await rpc(url, { op: 'openSession', ttlMs: 30_000 });
  const b = await rpc(url, { op: 'openSession', ttlMs: 30_000 });
  const got = await rpc(url, { op: 'acquire', session: a.session, seq: 1, name: 'metrics/timed', mode: 'exclusive', wait: false });
  assert.equal(got.status, 'granted');
  const queued = await rpc(url, { op: 'acquire', session: b.session, seq: 1, name: 'metrics/timed', mode: 'exclusive', wait: true });
  assert.equal(queued.status, 'queued');
  await rpc(url, { op: 'release', session: a.session, seq: 2, ackedSeq: 1, name: 'metrics/timed', token: got.token });
  const m = await until(async () => {
    const e = await metricsOf(cluster.node(leader).httpUrl);
    return value(e, 'palisade_lock_wait_seconds_count') >= waits0 + 2 ? e : null;
  }, 5_000, 'two waits timed (one immediate, one queued)');
  assert.ok(value(m, 'palisade_lock_hold_seconds_count') >= holds0 + 1);
  assert.ok(value(m, 'palisade_lock_hold_seconds_sum') > 0);
  assert.equal(m.types.get('palisade_lock_wait_seconds'), 'histogram');
});

test('metrics: expirations and lock-delays count on every node; followers report no peers', async () => {
  const url = cluster.node(leader).clientUrl;
  const s = await rpc(url, { op: 'openSession', ttlMs: 600 });
  const got = await rpc(url, { op: 'acquire', session: s.session, seq: 1, name: 'metrics/expiring', mode: 'exclusive', wait: false, lockDelayMs: 200 });
  assert.equal(got.status, 'granted');
  // Nobody keeps the session alive: the leader proposes its expiry after 600 ms.
  const expired = (e: Exposition) => value(e, 'palisade_session_expirations_total') >= 1 && value(e, 'palisade_lock_delays_total') >= 1;
  await until(async () => expired(await metricsOf(cluster.node(leader).httpUrl)), 10_000, 'the leader to count an expiry and a lock-delay');
  const follower = cluster.nodes.find((n) => n.id !== leader)!;
  const f = await until(async () => {
    const e = await metricsOf(follower.httpUrl);
    return expired(e) ? e : null;
  }, 5_000, 'a follower to count the same');
  assert.ok(value(f, 'palisade_lock_releases_total', { reason: 'expire' }) >= 1);
  assert.equal(value(f, 'palisade_raft_role', { role: 'follower' }), 1);
  assert.equal(find(f, 'palisade_raft_peer_replication_lag_entries').length, 0);
  assert.equal(value(f, 'palisade_raft_has_leader'), 1);
});

test('metrics: a leader that hands over leadership drops its peer round-trip series', async () => {
  const before = await metricsOf(cluster.node(leader).httpUrl);
  assert.ok(find(before, 'palisade_raft_peer_rtt_seconds_count').length > 0, 'the leader measures round trips');
  const to = cluster.nodes.find((n) => n.id !== leader)!.id;
  await rpc(cluster.node(leader).clientUrl, { op: 'transferLeader', to }, 10_000);
  const old = leader;
  leader = await cluster.waitForLeader(10_000, [old]);
  const after = await until(async () => {
    const e = await metricsOf(cluster.node(old).httpUrl);
    return value(e, 'palisade_raft_role', { role: 'follower' }) === 1 ? e : null;
  }, 10_000, 'the old leader to follow');
  assert.equal(find(after, 'palisade_raft_peer_rtt_seconds_count').length, 0);
  assert.equal(find(after, 'palisade_raft_peer_rtt_seconds_bucket').length, 0);
});
