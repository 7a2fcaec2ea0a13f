// A follower whose leader was killed holds its clients' requests until the next leader is
// elected (forwarding.ts). A request whose client closed its connection meanwhile (the SDK
// moved to the new leader, or gave up at its deadline and withdrew the request there) must
// not be forwarded later: applied after the client's retry or withdrawal, it would change
// state nobody waits for. The follower learns of the kill as its links to the crashed node drop.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';
import { RawSession } from '../support/raw-client.js';

describe('requests a follower holds for the next leader', () => {
  let c: InProcessCluster;
  before(async () => {
    c = await InProcessCluster.start();
  });
  after(() => c?.stop());

  test('a write held while the leader is dead is dropped once its client has closed the connection', async () => {
    const leader = await c.waitForLeader();
    const follower = c.nodes.find((n) => n.id !== leader)!.id;
    const setup = await c.rawClient(c.node(follower).clientUrl);
    const session = await RawSession.open(setup, 20_000);
    setup.close();

    await c.signal(leader, 'SIGKILL');
    // The follower still names the dead node leader (no election yet) and has no link to it.
    const gone = await c.rawClient(c.node(follower).clientUrl);
    const held = new RawSession(gone, session.id);
    void held.call({ op: 'put', key: 'held/abandoned', value: new Uint8Array([1]) }).catch(() => {});
    gone.close();

    const next = await c.waitForLeader(10_000, [leader]);
    await until(async () => (await c.status(follower))?.leader === next, 5_000, 'the follower to know the new leader');
    // A write sent through the follower now goes after whatever it still held (one link,
    // proposed in arrival order): once it is applied, a forwarded held write would be too.
    const later = await c.rawClient(c.node(follower).clientUrl);
    try {
      const next2 = new RawSession(later, session.id);
      (next2 as unknown as { seq: number }).seq = 1; // seq 1 went to the held write
      const r = await next2.call({ op: 'put', key: 'held/later', value: new Uint8Array([2]) });
      assert.ok(r.ok, `the later put: ${JSON.stringify(r)}`);
      const abandoned = await later.ok({ op: 'kvGet', key: 'held/abandoned' });
      assert.equal(abandoned, null, 'the write whose client had left was applied');
    } finally {
      later.close();
    }
  });
});
