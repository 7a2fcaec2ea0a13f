// A removal is idempotent: its retry, after the first attempt was applied but its answer was
// lost (the removed leader stops, taking the connection with it), is answered as done, not
// with CONFLICT "is not a member". A removal of a node that never was a member still fails.
// (This was the flaky "n2 is not a member" in membership.test.ts under load.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';

let c: InProcessCluster;
before(async () => {
  c = await InProcessCluster.start();
});
after(() => c?.stop());

test('a retried removal answers done; an unknown member is still refused', async () => {
  const leader = await c.waitForLeader();
  const victim = c.nodes.map((n) => n.id).find((id) => id !== leader)!;
  const via = c.nodes.map((n) => n.id).find((id) => id !== victim)!;
  const first = await c.rpc(c.node(via).clientUrl, { op: 'removeMember', member: victim }, 10_000);
  assert.ok(first.index > 0);
  await until(() => !c.procs.has(victim), 10_000, 'the removed node to stop');
  for (const id of c.nodes.map((n) => n.id).filter((x) => x !== victim)) {
    const again = await c.rpc(c.node(id).clientUrl, { op: 'removeMember', member: victim }, 10_000);
    assert.deepEqual(again, { index: 0, already: true });
  }
  await assert.rejects(c.rpc(c.node(via).clientUrl, { op: 'removeMember', member: 'never-a-member' }, 10_000), (e: unknown) => (e as { code?: string }).code === 'CONFLICT');
});
