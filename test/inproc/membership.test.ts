// Membership changes and compaction on an in-process cluster, under a client that keeps
// acquiring and releasing: grow 3 -> 5 and shrink back, replace a killed node, catch a node up by
// snapshot after it was down past compaction, remove the current leader. No acknowledged
// operation is lost, tokens keep increasing, and the client sees no error.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeStatus, RequestBody } from '../../src/protocol/client-protocol.js';
import type { Op, ResultOf } from '../../src/protocol/ops.js';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';

let c: InProcessCluster;
before(async () => {
  c = await InProcessCluster.start({ config: { snapshot: { entries: 200, keepTail: 20 } }, keepLogs: true });
});
after(() => c?.stop());

/** Ask the running members (any of them forwards to the leader). */
async function admin<O extends Op>(body: RequestBody & { readonly op: O }): Promise<ResultOf<O>> {
  let last: unknown;
  for (let attempt = 0; attempt < 40; attempt++) {
    for (const id of c.procs.keys()) {
      try {
        return await c.rpc<O>(id, body, 10_000);
      } catch (e) {
        last = e;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw last;
}

async function voters(): Promise<string[]> {
  const ms = await admin({ op: 'members' });
  return ms.filter((m) => m.voter).map((m) => m.id).sort();
}

async function waitVoters(expected: string[]): Promise<void> {
  await until(async () => JSON.stringify(await voters()) === JSON.stringify([...expected].sort()), 20_000, `voters ${expected.join(',')}`);
}

test('the cluster grows, shrinks, replaces nodes and removes its leader while a client keeps working', async () => {
  const extra = [c.addNodeSpec('n4'), c.addNodeSpec('n5'), c.addNodeSpec('n6')];
  const client = await c.client({ endpoints: [...c.endpoints], ttlMs: 10_000 });
  const tokens: number[] = [];
  const errors: string[] = [];
  let stop = false;
  const work = (async () => {
    while (!stop) {
      try {
        const l = await client.acquire('membership/work');
        tokens.push(l.token);
        await l.release();
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
  })();
  const founding = ['n1', 'n2', 'n3'];
  try {
    // Grow 3 -> 5: new nodes start with an empty data directory and --join.
    await c.start('n4', { join: c.endpoints.slice(0, 3) });
    await waitVoters([...founding, 'n4']);
    await c.start('n5', { join: c.endpoints.slice(0, 3) });
    await waitVoters([...founding, 'n4', 'n5']);

    // Shrink back: removed nodes stop by themselves.
    await admin({ op: 'removeMember', member: 'n5' });
    await admin({ op: 'removeMember', member: 'n4' });
    await waitVoters(founding);
    await until(() => !c.procs.has('n4') && !c.procs.has('n5'), 10_000, 'removed nodes to stop');

    // Replace a node killed with SIGKILL.
    await c.signal('n3', 'SIGKILL');
    await admin({ op: 'removeMember', member: 'n3' });
    await c.start('n6', { join: [c.node('n1').clientUrl, c.node('n2').clientUrl] });
    await waitVoters(['n1', 'n2', 'n6']);

    // A follower down past compaction catches up by snapshot.
    const leader = await c.waitForLeader(10_000);
    const follower = ['n1', 'n2', 'n6'].find((id) => id !== leader)!;
    await c.signal(follower, 'SIGKILL');
    const before = tokens.length;
    await until(() => tokens.length >= before + 250, 60_000, 'entries beyond a compaction');
    await admin({ op: 'snapshot' }); // compact wherever the request lands, besides the automatic ones
    await c.start(follower);
    await until(async () => {
      const s = await c.status(follower);
      const l = await c.status(leader);
      return s && l && s.appliedIndex >= l.commitIndex - 5;
    }, 20_000, 'the restarted follower to catch up');
    assert.match(c.logOf(follower), /installed snapshot from leader/);

    // Remove the current leader: it steps down and stops; the others elect a new one.
    const current = await c.waitForLeader(10_000);
    await admin({ op: 'removeMember', member: current });
    await until(() => !c.procs.has(current), 10_000, 'the removed leader to stop');
    const rest = ['n1', 'n2', 'n6'].filter((id) => id !== current);
    await waitVoters(rest);
    const n = tokens.length;
    await until(() => tokens.length >= n + 20, 20_000, 'progress after the leader left');
  } finally {
    stop = true;
    await work;
    await client.close().catch(() => {});
    void extra;
  }
  assert.deepEqual(errors, [], 'the client saw no error');
  assert.ok(tokens.length > 300, `only ${tokens.length} cycles`);
  for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${tokens[i]} after ${tokens[i - 1]}`);
  const statuses = (await c.statuses()).filter((s): s is NodeStatus => s !== null);
  assert.equal(statuses.length, 2);
});
