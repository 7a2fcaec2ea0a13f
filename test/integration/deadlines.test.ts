// Deadlines are promises (docs/protocol.md, "Deadlines"): a call with a deadline settles
// within it plus 100 ms whatever the cluster does. The hardest case is a leader that is
// paused (SIGSTOP): its TCP connections stay open and silent, so nothing tells the client
// it is gone. And LockTimeoutError must still mean that nothing stays held or queued: what
// the paused leader may apply later is withdrawn by the SDK.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../support/cluster.js';
import { LockClient, LockTimeoutError, TimeoutError, UnavailableError } from '../../src/client/index.js';

const BOUND_MS = 100;

describe('SDK deadlines while the leader is paused', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started();
  });
  after(() => c?.stop());

  /**
   * A client talking to the leader, and the leader's id. It is given the leader's URL only
   * (it learns the others from the hello), as a client configured with one seed node is.
   */
  async function clientOnLeader(options: { requestTimeoutMs?: number; attemptTimeoutMs?: number } = {}): Promise<{ client: LockClient; leader: string }> {
    const leader = await c.waitForLeader();
    const client = await LockClient.connect({ endpoints: [c.node(leader).clientUrl], ttlMs: 10_000, ...options });
    assert.equal(client.connectedUrl, c.node(leader).clientUrl, 'the client moved to the leader');
    return { client, leader };
  }

  test('acquire with waitMs 1000 on a free lock settles within 1.1 s; a timeout leaves nothing held or queued', async () => {
    const { client: a, leader } = await clientOnLeader();
    const b = await LockClient.connect({ endpoints: c.endpoints.filter((u) => u !== c.node(leader).clientUrl), ttlMs: 10_000 });
    const name = 'deadline/free';
    let outcome: { granted: number } | { timedOut: LockTimeoutError };
    let elapsed: number;
    await c.signal(leader, 'SIGSTOP');
    try {
      const started = performance.now();
      try {
        const lock = await a.acquire(name, { waitMs: 1_000 });
        outcome = { granted: lock.token };
      } catch (e) {
        if (!(e instanceof LockTimeoutError)) throw e;
        outcome = { timedOut: e };
      }
      elapsed = performance.now() - started;
    } finally {
      await c.signal(leader, 'SIGCONT');
    }
    assert.ok(elapsed <= 1_000 + BOUND_MS, `acquire settled after ${Math.round(elapsed)} ms`);
    try {
      if ('granted' in outcome) {
        const info = await b.get(name, { timeoutMs: 5_000 });
        assert.deepEqual(
          info.holders.map((h) => [h.session, h.token]),
          [[a.sessionId, outcome.granted]],
          'granted: held by this client only',
        );
      } else {
        // Whatever the paused leader does with the acquire once it runs again, the SDK takes
        // it back: the lock ends up free of a's session, and stays so.
        await until(
          async () => {
            const info = await b.get(name, { timeoutMs: 2_000 }).catch(() => null);
            return info !== null && info.holders.length === 0 && info.waiters.length === 0 ? info : null;
          },
          10_000,
          'the timed-out acquire to be withdrawn',
        );
        const lock = await b.acquire(name, { waitMs: 5_000 });
        const info = await b.get(name, { timeoutMs: 5_000 });
        assert.deepEqual(info.holders.map((h) => h.session), [b.sessionId], 'only b holds it');
        assert.deepEqual(info.waiters, [], 'a does not wait for it');
        await lock.release();
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('with no quorum either, the acquire times out on time and the SDK withdraws it once the cluster is back', async () => {
    const { client: a, leader } = await clientOnLeader();
    const follower = c.nodes.map((n) => n.id).find((id) => id !== leader)!;
    const third = c.nodes.map((n) => n.id).find((id) => id !== leader && id !== follower)!;
    const name = 'deadline/no-quorum';
    let error: unknown = null;
    let elapsed: number;
    await c.signal(leader, 'SIGSTOP');
    await c.signal(follower, 'SIGSTOP');
    try {
      const started = performance.now();
      try {
        await a.acquire(name, { waitMs: 1_000 });
      } catch (e) {
        error = e;
      }
      elapsed = performance.now() - started;
    } finally {
      await c.signal(leader, 'SIGCONT');
      await c.signal(follower, 'SIGCONT');
    }
    const b = await LockClient.connect({ endpoints: [c.node(third).clientUrl], ttlMs: 10_000 });
    try {
      assert.ok(elapsed <= 1_000 + BOUND_MS, `acquire settled after ${Math.round(elapsed)} ms`);
      assert.ok(error instanceof LockTimeoutError, `expected LockTimeoutError, got ${String(error)}`);
      // The next acquire of the name in this client waits for the background withdrawal,
      // then gets a grant of its own; the lock is free once it is released.
      const again = await a.acquire(name, { waitMs: 10_000 });
      const held = await b.get(name, { timeoutMs: 5_000 });
      assert.deepEqual(held.holders.map((h) => [h.session, h.token]), [[a.sessionId, again.token]]);
      assert.deepEqual(held.waiters, []);
      await again.release();
      const info = await b.get(name, { timeoutMs: 5_000 });
      assert.deepEqual([info.holders, info.waiters], [[], []], 'nothing held or queued');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a silent leader is given up at the cluster pace (liveness pings), not after the attempt timeout', async () => {
    // With a 5 s attempt timeout only the pings can move the client on: it must find the
    // new leader and be served well before the attempt would have given up.
    const { client, leader } = await clientOnLeader({ attemptTimeoutMs: 5_000, requestTimeoutMs: 20_000 });
    let elapsed: number;
    await c.signal(leader, 'SIGSTOP');
    try {
      const started = performance.now();
      await client.put('deadline/liveness', 'v');
      elapsed = performance.now() - started;
    } finally {
      await c.signal(leader, 'SIGCONT');
      await client.close().catch(() => {});
    }
    assert.ok(elapsed < 4_000, `served after ${Math.round(elapsed)} ms`);
  });

  test('put with requestTimeoutMs 1000 settles within 1.1 s', async () => {
    const { client, leader } = await clientOnLeader({ requestTimeoutMs: 1_000 });
    let elapsed: number;
    let error: unknown = null;
    await c.signal(leader, 'SIGSTOP');
    try {
      const started = performance.now();
      try {
        await client.put('deadline/key', 'v');
      } catch (e) {
        error = e;
      }
      elapsed = performance.now() - started;
    } finally {
      await c.signal(leader, 'SIGCONT');
      await client.close().catch(() => {});
    }
    assert.ok(elapsed <= 1_000 + BOUND_MS, `put settled after ${Math.round(elapsed)} ms`);
    if (error !== null) assert.ok(error instanceof TimeoutError || error instanceof UnavailableError, `unexpected ${String(error)}`);
  });
});
