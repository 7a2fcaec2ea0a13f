// Sessions kept alive only through a follower: the follower sends its clients' keepalives
// to the leader in batches (src/server/replication/keepalive-batch.ts), and the leader must renew every
// session in a batch. If it renewed none, or only some, those sessions would run out their
// TTL on the leader and the next keepalive would be answered UNKNOWN_SESSION. The same for
// one keepAlives frame naming many sessions.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InProcessCluster } from '../support/in-process-cluster.js';
import { RawSession, type Reply } from '../support/raw-client.js';

const SESSIONS = 40;
const TTL_MS = 1_500;

describe('keepalives through a follower', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c.stop());

  /** A raw client on a follower, and SESSIONS sessions opened through it. */
  async function onAFollower() {
    const leader = await c.waitForLeader();
    const follower = c.nodes.find((n) => n.id !== leader)!;
    const client = await c.rawClient(follower.clientUrl);
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => RawSession.open(client, TTL_MS)));
    return { client, sessions };
  }

  test('renew every session of a batch, for several TTLs, without the client ever reaching the leader', async () => {
    const { client, sessions } = await onAFollower();
    try {
      const answers: Reply[] = [];
      // Three TTLs, a keepalive of every session every TTL/3, all sent together.
      for (let round = 0; round < 9; round++) {
        const started = Date.now();
        answers.push(...(await Promise.all(sessions.map((s) => client.call({ op: 'keepAlive', session: s.id })))));
        await new Promise((r) => setTimeout(r, Math.max(0, TTL_MS / 3 - (Date.now() - started))));
      }
      const refused = answers.filter((a) => !a.ok);
      assert.deepEqual(refused, [], 'every keepalive through the follower was acknowledged');
      assert.ok(answers.every((a) => a.ok && (a.result as { ttlMs: number }).ttlMs === TTL_MS));
      assert.deepEqual(client.events.filter((e) => e.event === 'sessionExpired'), []);
      const status = await client.ok({ op: 'status' });
      const { keepAliveBatches, keepAlivesBatched } = status.transport as Record<string, number>;
      assert.ok(keepAlivesBatched! >= answers.length, `the follower relayed ${keepAlivesBatched} keepalives`);
      assert.ok(keepAliveBatches! < keepAlivesBatched!, `${keepAlivesBatched} keepalives went in ${keepAliveBatches} batches`);
    } finally {
      client.close();
    }
  });

  test('one keepAlives frame renews many sessions, through a follower, for several TTLs', async () => {
    const { client, sessions } = await onAFollower();
    try {
      const ids = sessions.map((s) => s.id);
      const gone = Math.max(...ids) + 1_000_000; // never opened: null, and the rest still renewed
      for (let round = 0; round < 9; round++) {
        const started = Date.now();
        const r = await client.call({ op: 'keepAlives', sessions: [...ids, gone] });
        assert.ok(r.ok, JSON.stringify(r));
        assert.deepEqual((r.result as { ttls: unknown[] }).ttls, [...ids.map(() => TTL_MS), null], `round ${round}`);
        await new Promise((r) => setTimeout(r, Math.max(0, TTL_MS / 3 - (Date.now() - started))));
      }
      assert.deepEqual(client.events.filter((e) => e.event === 'sessionExpired'), []);
    } finally {
      client.close();
    }
  });
});
