// Three nodes whose files disagree on sessions.* (as during any rolling config change) must
// still apply every entry alike: the settings that decide an entry are the cluster's, not a
// node's. Before settings were replicated, a node with `maxSessions 6` refused opens the
// others applied, and once it led it granted a lock that the others still showed held (two
// holders); one with `lockDelayMs 0` granted a waiter at another entry than the others, so
// the holder's token depended on who was asked.
//
// The test drives opens past the smaller bound, a lock held by a session that only some
// files would admit, an expiry under lock-delay, and leadership moved to each node in turn.
// After each move a fresh client tries the held lock (it must be busy) and every node's
// linearizable view of both locks must be the same. At the end the members' checkpoint
// digests must agree, and each node whose file disagrees with the cluster says so.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LockClient } from '../../src/client/index.js';
import type { NodeStatus } from '../../src/protocol/client-protocol.js';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';

const MANY = 8;

describe('nodes whose files disagree on sessions.* apply every entry alike', () => {
  let c: InProcessCluster;
  const connect = (url?: string): Promise<LockClient> => c.client({ endpoints: url ? [url] : c.endpoints, ttlMs: 3_000 });
  const get = (id: string, name: string) => c.rpc(id, { op: 'get', name }, 5_000);
  const transferTo = async (id: string) => {
    const leader = await c.waitForLeader();
    if (leader !== id) await c.rpc(leader, { op: 'transferLeader', to: id }, 10_000);
    await until(async () => (await c.waitForLeader()) === id, 10_000, `${id} to lead`);
  };

  before(async () => {
    c = await InProcessCluster.start({
      config: { sessions: { lockDelayMs: 4_000, maxSessions: 1_000, minTtlMs: 600 }, snapshot: { entries: 25 } },
      perNode: { n3: { sessions: { lockDelayMs: 0, maxSessions: 6, minTtlMs: 2_000 } } },
    });
  });
  after(() => c?.stop());

  test('one holder, one token and one state on every node, whoever leads', async () => {
    await transferTo('n1');

    // A session that expires while holding D, with a waiter: lock-delay decides the entry
    // that grants the waiter, and so the waiter's token.
    const lease = await c.rpc('n1', { op: 'openSession', ttlMs: 2_000 }, 5_000);
    const first = await c.rpc(
      'n1',
      { op: 'acquire', session: lease.session, seq: 1, name: 'D', mode: 'exclusive', wait: false },
      5_000,
    );
    assert.equal(first.status, 'granted');
    // Opens past n3's bound: all nodes refuse (or accept) the same ones.
    const opened: LockClient[] = [];
    for (let i = 0; i < MANY; i++) {
      try {
        opened.push(await connect(c.node('n1').clientUrl));
      } catch (e) {
        assert.match(String(e), /LIMIT_EXCEEDED|sessions are open/, 'only the cluster-wide bound refuses an open');
      }
    }

    // The last session opened holds M: under n3's file it would not exist.
    const holder = opened.at(-1)!;
    const held = await holder.acquire('M');

    const waiter = opened[0]!;
    const waiting = waiter.acquire('D', { waitMs: 30_000 });
    waiting.catch(() => {}); // awaited below; a failure before then must not be unhandled

    // Room for one more session under every bound (the strangers below open one each).
    await opened[1]!.close();

    for (const id of ['n3', 'n2', 'n1', 'n3']) {
      await transferTo(id);
      const stranger = await connect(c.node(id).clientUrl);
      const grabbed = await stranger.tryAcquire('M');
      assert.equal(grabbed, null, `with ${id} leading, M is still held by session ${held.session} (token ${held.token}): no second holder`);
      await stranger.close();
      const views = await Promise.all(['n1', 'n2', 'n3'].map((n) => get(n, 'M')));
      for (const v of views) assert.deepEqual(v.holders, views[0]!.holders, `every node shows M's holders alike with ${id} leading`);
      assert.deepEqual(views[0]!.holders.map((h) => h.token), [held.token]);
    }

    // What the cluster's settings are: the first leader's file seeded them.
    const settings = await c.rpc('n2', { op: 'config' }, 5_000);
    assert.equal(settings.configured, true, 'the first leader seeded the settings');
    const maxSessions = settings.settings['sessions.maxSessions']!;
    assert.equal(opened.length, Math.min(MANY, maxSessions - 1), `the cluster's maxSessions (${maxSessions}, one taken by D's holder) decided how many opened`);

    const granted = await waiting;
    const dViews = await Promise.all(['n1', 'n2', 'n3'].map((n) => get(n, 'D')));
    for (const v of dViews) assert.deepEqual(v.holders.map((h) => h.token), [granted.token], "every node gives D's waiter the token it was granted with");
    assert.ok(granted.token > first.token, "the waiter's token is above the expired holder's");
    const lockDelay = settings.settings['sessions.lockDelayMs']!;

    // The members' digests of the same checkpoint agree, and nobody saw a mismatch.
    const statuses = await until(async () => {
      const ss = (await Promise.all(['n1', 'n2', 'n3'].map((n) => c.status(n)))) as (NodeStatus | null)[];
      if (ss.some((s) => s?.stateDigest === undefined)) return null;
      const idx = new Set(ss.map((s) => s!.stateDigest!.index));
      return idx.size === 1 ? (ss as NodeStatus[]) : null;
    }, 20_000, 'the nodes to report one checkpoint digest');
    const digests = new Set(statuses.map((s) => s.stateDigest!.digest));
    assert.equal(digests.size, 1, `equal state at checkpoint ${statuses[0]!.stateDigest!.index}: ${JSON.stringify(statuses.map((s) => s.stateDigest))}`);
    for (const s of statuses) assert.ok(!(s.warnings ?? []).some((w) => w.includes('state differs')), `${s.id}: no divergence alarm`);

    // Each node whose file disagrees with the cluster says which setting and what applies.
    const fileSaysDelay = { n1: 4_000, n2: 4_000, n3: 0 } as Record<string, number>;
    for (const s of statuses) {
      const disagrees = fileSaysDelay[s.id] !== lockDelay;
      const noted = (s.warnings ?? []).some((w) => w.startsWith('sessions.lockDelayMs is'));
      assert.equal(noted, disagrees, `${s.id}: warns of sessions.lockDelayMs exactly when its file disagrees (${JSON.stringify(s.warnings)})`);
    }
  });
});
