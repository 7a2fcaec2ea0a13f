// The in-process cluster runs the production node: a client takes locks through it, the
// leader's crash hands leadership over, and tokens keep growing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LockClient } from '../../src/client/index.js';
import { InProcessCluster } from '../support/in-process-cluster.js';

describe('in-process cluster', () => {
  let c: InProcessCluster;
  let client: LockClient;
  before(async () => {
    c = await InProcessCluster.start();
    client = await c.client({ ttlMs: 3_000 });
  });
  after(() => c.stop());

  test('acquire, release, and a higher token after the leader crashes', async () => {
    const first = await client.acquire('L');
    await first.release();
    const leader = await c.waitForLeader();
    await c.crash(leader);
    const next = await c.waitForLeader(10_000, [leader]);
    assert.notEqual(next, leader);
    const second = await client.acquire('L', { waitMs: 10_000 });
    assert.ok(second.token > first.token);
    await second.release();
    await c.startNode(leader);
    await c.waitForLeader();
  });
});
