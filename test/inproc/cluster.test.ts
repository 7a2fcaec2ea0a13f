// A 3-node cluster of production nodes in this process (test/support/in-process-cluster.ts):
// one leader everyone agrees on, tokens that are log indexes, typed errors, a killed leader's
// sessions and locks carried over, a whole-cluster restart from what the disks held, pushed
// events, and session expiry. What is tested is the node's logic; LevelDB's restarts are
// storage-faults.test.ts's, real sockets test/transport's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';
import { RawSession } from '../support/raw-client.js';

async function followerOf(c: InProcessCluster, leader: string): Promise<string> {
  return c.nodes.find((n) => n.id !== leader)!.id;
}

describe('a 3-node cluster', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  test('elects one leader, and every node reports the same leader and term', async () => {
    const leader = await c.waitForLeader();
    const ss = await c.statuses();
    assert.equal(ss.filter((s) => s?.role === 'leader').length, 1);
    for (const s of ss) {
      assert.ok(s);
      assert.equal(s.leader, leader);
      assert.deepEqual([...s.members].sort(), ['n1', 'n2', 'n3']);
      assert.equal(typeof s.pid, 'number');
    }
  });

  test('an acquire through a follower is granted with the log index of the granting entry as token', async () => {
    const leader = await c.waitForLeader();
    const follower = await followerOf(c, leader);
    const client = await c.rawClient(c.node(follower).clientUrl);
    try {
      const s = await RawSession.open(client, 5000);
      const r = await s.call({ op: 'acquire', name: 'it/token', mode: 'exclusive', wait: false });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.result.status, 'granted');
      assert.equal(r.result.token, r.result.index, 'token is the index of the entry that granted it');
      // The entry is committed: every node's commit index reaches it, and it is the
      // acquire itself (the session was opened by an earlier entry).
      assert.ok(r.result.token > s.id);
      await until(async () => (await c.statuses()).every((st) => st && st.appliedIndex >= r.result.token), 5000, 'apply everywhere');
      const info = await client.ok({ op: 'get', name: 'it/token' });
      assert.deepEqual(info.holders, [{ session: s.id, token: r.result.token, mode: 'exclusive' }]);
      // A second session cannot take it; a retry of the same seq answers the same grant.
      const s2 = await RawSession.open(client, 5000);
      const busy = await s2.call({ op: 'acquire', name: 'it/token', mode: 'exclusive', wait: false });
      assert.ok(busy.ok);
      assert.equal(busy.result.status, 'busy');
      const again = await client.call({ op: 'acquire', session: s.id, seq: 1, name: 'it/token', mode: 'exclusive', wait: false });
      assert.ok(again.ok);
      assert.equal(again.result.token, r.result.token);
    } finally {
      client.close();
    }
  });

  test('unknown sessions and bad arguments get typed errors, not a crash', async () => {
    const client = await c.rawClient(c.endpoints[0]!);
    try {
      const r1 = await client.call({ op: 'acquire', session: 999999, seq: 1, name: 'x', mode: 'exclusive', wait: false });
      assert.equal(r1.ok, false);
      assert.equal(!r1.ok && r1.error.code, 'UNKNOWN_SESSION');
      const r2 = await client.call({ op: 'openSession', ttlMs: 1 });
      assert.equal(!r2.ok && r2.error.code, 'INVALID_ARGUMENT');
      const r3 = await client.call({ op: 'acquire', session: 1, seq: 1, name: '', mode: 'exclusive', wait: false });
      assert.equal(!r3.ok && r3.error.code, 'INVALID_ARGUMENT');
      const r4 = await client.call({ op: 'nope' });
      assert.equal(!r4.ok && r4.error.code, 'UNKNOWN_OP');
      assert.ok((await client.ok({ op: 'status' })).id);
    } finally {
      client.close();
    }
  });
});

describe('leader failure', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  test('SIGKILL of the leader: a new leader, the session and its lock survive, new tokens are larger; the node catches up on restart', async () => {
    const leader = await c.waitForLeader();
    const follower = await followerOf(c, leader);
    const client = await c.rawClient(c.node(follower).clientUrl);
    try {
      const s = await RawSession.open(client, 3000);
      const held = await s.call({ op: 'acquire', name: 'it/held', mode: 'exclusive', wait: false });
      assert.ok(held.ok);
      const token = held.result.token as number;
      // Keep the session alive through the failover, as the SDK would (every TTL/3).
      const ka = setInterval(() => void client.call({ op: 'keepAlive', session: s.id }).catch(() => {}), 1000);
      try {
        await c.signal(leader, 'SIGKILL');
        const newLeader = await c.waitForLeader(10_000);
        assert.notEqual(newLeader, leader);
        // Longer than the TTL: the lease must have been carried by keepalives.
        await new Promise((r) => setTimeout(r, 4000));
        const info = await client.ok({ op: 'get', name: 'it/held' });
        assert.deepEqual(info.holders, [{ session: s.id, token, mode: 'exclusive' }]);
        const other = await s.call({ op: 'acquire', name: 'it/other', mode: 'exclusive', wait: false });
        assert.ok(other.ok, JSON.stringify(other));
        assert.ok(other.result.token > token, 'tokens grow across leaders');

        await c.start(leader);
        await until(async () => {
          const ss = await c.statuses();
          const mine = ss.find((x) => x?.id === leader);
          const others = ss.filter((x) => x && x.id !== leader);
          return mine && others.every((o) => o!.appliedIndex <= mine.appliedIndex) && mine.appliedIndex >= other.result.token;
        }, 10_000, 'the restarted node to catch up');
      } finally {
        clearInterval(ka);
      }
    } finally {
      client.close();
    }
  });
});

describe('whole-cluster restart', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  test('locks, sessions (with a fresh TTL) and the token sequence carry on after all three restart', async () => {
    await c.waitForLeader();
    let client = await c.rawClient(c.endpoints[0]!);
    const s = await RawSession.open(client, 5000);
    const a = await s.call({ op: 'acquire', name: 'it/persist', mode: 'exclusive', wait: false });
    assert.ok(a.ok);
    client.close();
    for (const n of c.nodes) await c.signal(n.id, 'SIGTERM');
    await c.startAll();
    await c.waitForLeader();
    client = await c.rawClient(c.endpoints[1]!);
    try {
      const info = await client.ok({ op: 'get', name: 'it/persist' });
      assert.deepEqual(info.holders, [{ session: s.id, token: a.result.token, mode: 'exclusive' }]);
      // The session is still known (keepalive accepted) ...
      const ka = await client.call({ op: 'keepAlive', session: s.id });
      assert.ok(ka.ok, JSON.stringify(ka));
      // ... and new grants continue the token sequence.
      const s2 = await RawSession.open(client, 5000);
      const b = await s2.call({ op: 'acquire', name: 'it/persist2', mode: 'exclusive', wait: false });
      assert.ok(b.ok);
      assert.ok(b.result.token > a.result.token);
    } finally {
      client.close();
    }
  });
});

describe('events', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  test('what an answer already says is not pushed again; a waiter\'s grant is', async () => {
    const leader = await c.waitForLeader();
    const conn = await c.rawClient(c.node(leader).clientUrl);
    try {
      const holder = await RawSession.open(conn, 10_000);
      const waiter = await RawSession.open(conn, 10_000);
      const g = await holder.call({ op: 'acquire', name: 'it/echo', mode: 'exclusive', wait: false });
      assert.ok(g.ok && g.result.status === 'granted');
      const q = await waiter.call({ op: 'acquire', name: 'it/echo', mode: 'exclusive', wait: true });
      assert.ok(q.ok && q.result.status === 'queued');
      const r = await holder.call({ op: 'release', name: 'it/echo', token: g.result.token });
      assert.ok(r.ok, JSON.stringify(r));
      const granted = await conn.nextEvent((e) => e.event === 'granted' && e.session === waiter.id, 10_000);
      assert.ok(granted.event === 'granted' && granted.token > g.result.token);
      const mine = conn.events.filter((e) => 'name' in e && e.name === 'it/echo');
      assert.deepEqual(
        mine.map((e) => [e.event, 'session' in e ? e.session : null]),
        [['granted', waiter.id]],
        'no event for the holder\'s own immediate grant or its own release',
      );
    } finally {
      conn.close();
    }
  });
});

describe('session expiry', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  test('a session whose keepalives stop expires after its TTL, not before, and its lock goes to the next waiter with a larger token', async () => {
    await c.waitForLeader();
    const holderConn = await c.rawClient(c.endpoints[0]!);
    const waiterConn = await c.rawClient(c.endpoints[1]!);
    try {
      const ttl = 1500;
      const holder = await RawSession.open(holderConn, ttl);
      const g = await holder.call({ op: 'acquire', name: 'it/expiry', mode: 'exclusive', wait: false });
      assert.ok(g.ok);
      const lastKeepAlive = performance.now();
      const kaReply = await holderConn.call({ op: 'keepAlive', session: holder.id });
      assert.ok(kaReply.ok);
      const waiter = await RawSession.open(waiterConn, 10_000);
      const ka = setInterval(() => void waiterConn.call({ op: 'keepAlive', session: waiter.id }).catch(() => {}), 1000);
      try {
        const q = await waiter.call({ op: 'acquire', name: 'it/expiry', mode: 'exclusive', wait: true });
        assert.ok(q.ok);
        assert.equal(q.result.status, 'queued');
        const granted = await waiterConn.nextEvent((e) => e.event === 'granted' && e.session === waiter.id, 10_000);
        const after = performance.now() - lastKeepAlive;
        assert.ok(after >= ttl, `expired after ${after.toFixed(0)} ms, before its TTL of ${ttl} ms`);
        assert.ok(granted.event === 'granted' && granted.token > g.result.token);
        const expired = await holderConn.nextEvent((e) => e.event === 'sessionExpired' && e.session === holder.id, 2000);
        assert.ok(expired);
        const r = await holderConn.call({ op: 'keepAlive', session: holder.id });
        assert.equal(!r.ok && r.error.code, 'UNKNOWN_SESSION');
      } finally {
        clearInterval(ka);
      }
    } finally {
      holderConn.close();
      waiterConn.close();
    }
  });
});
