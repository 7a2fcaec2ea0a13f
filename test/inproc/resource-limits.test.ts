// Per-connection and cluster-wide bounds on sessions and subscriptions (issue 18, findings
// 7 and 9), against an in-process node (the gate counts them, whatever the transport):
// pipelined opens cannot get past the per-connection limit (sessions are counted when
// requested, not when answered), the cluster-wide session cap is enforced by the lock
// machine, and watches/observes per connection are bounded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InProcessCluster } from '../support/in-process-cluster.js';

const CLUSTER_CAP = 100;

describe('session and watch bounds', () => {
  let c: InProcessCluster;
  let url: string;

  before(async () => {
    c = await InProcessCluster.start({
      nodes: 1,
      // The per-address session bound (by default half the cluster's cap here) is raised out
      // of the way: these tests are about the per-connection and cluster-wide ones.
      config: {
        sessions: { maxSessions: CLUSTER_CAP },
        limits: { maxSessionsPerConnection: 64, maxWatchesPerConnection: 50, requestsPerSecond: 0, maxSessionsPerAddress: 10_000 },
      },
    });
    url = c.endpoints[0]!;
  });

  after(async () => {
    await c?.stop();
  });

  test('1,000 pipelined opens on one connection with a limit of 64: exactly 64 succeed', async () => {
    const conn = await c.wireClient(url);
    try {
      const replies = await Promise.all(Array.from({ length: 1000 }, () => conn.fire({ op: 'openSession', ttlMs: 60_000 })));
      const ok = replies.filter((r) => r.ok);
      assert.equal(ok.length, 64);
      for (const r of replies) if (!r.ok) assert.equal(r.error.code, 'LIMIT_EXCEEDED', r.error.message);
      // Closing one makes room for exactly one more.
      const first = ok[0]!.ok ? (ok[0]!.result.session as number) : 0;
      assert.ok((await conn.call({ op: 'closeSession', session: first, seq: 1 })).ok);
      const again = await Promise.all(Array.from({ length: 10 }, () => conn.fire({ op: 'openSession', ttlMs: 60_000 })));
      assert.equal(again.filter((r) => r.ok).length, 1);
    } finally {
      conn.close();
    }
  });

  test('the cluster-wide cap (sessions.maxSessions) holds across connections', async () => {
    const conns = await Promise.all(Array.from({ length: 3 }, () => c.wireClient(url)));
    try {
      const open = (await c.status('n1')) as unknown as { sessions: number };
      const replies = (await Promise.all(conns.map((conn) => Promise.all(Array.from({ length: 64 }, () => conn.fire({ op: 'openSession', ttlMs: 60_000 })))))).flat();
      const ok = replies.filter((r) => r.ok).length;
      assert.equal(ok, CLUSTER_CAP - open.sessions, `${open.sessions} were open before`);
      const refusal = replies.find((r) => !r.ok);
      assert.ok(refusal && !refusal.ok && refusal.error.code === 'LIMIT_EXCEEDED' && /sessions\.maxSessions/.test(refusal.error.message));
    } finally {
      for (const conn of conns) conn.close();
    }
  });

  test('watches and observes per connection are bounded; an over-long prefix is refused; unwatch makes room', async () => {
    const conn = await c.wireClient(url);
    try {
      const replies = await Promise.all(
        Array.from({ length: 200 }, (_, i) => conn.fire(i % 2 === 0 ? { op: 'watch', prefix: `p${i}/` } : { op: 'observe', election: `e${i}` })),
      );
      assert.equal(replies.filter((r) => r.ok).length, 50);
      for (const r of replies) if (!r.ok) assert.equal(r.error.code, 'LIMIT_EXCEEDED');
      const again = await conn.call({ op: 'watch', prefix: 'p0/' });
      assert.ok(again.ok, 'a prefix already watched is not counted twice');
      const long = await conn.call({ op: 'unwatch', prefix: 'p0/' }).then(() => conn.call({ op: 'watch', prefix: 'x'.repeat(4000) }));
      assert.ok(!long.ok && long.error.code === 'INVALID_ARGUMENT', JSON.stringify(long));
      assert.ok((await conn.call({ op: 'watch', prefix: 'fresh/' })).ok, 'the unwatch made room');
      assert.ok(!(await conn.call({ op: 'watch', prefix: 'one-more/' })).ok);
    } finally {
      conn.close();
    }
  });
});
