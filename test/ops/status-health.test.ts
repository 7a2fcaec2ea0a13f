// `palisade status --json` and `palisade health` against a real 3-node cluster, as scripts,
// cron jobs and load balancers use them: the JSON object names the leader, the term and the
// quorum; health exits 0 with every node up, 1 with one down (writes go on, no failure to
// spare), 2 with two down (no quorum).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { palisadeAt } from '../support/cli-process.js';
import { TestCluster, until } from '../support/cluster.js';

interface StatusJson {
  nodes: { id: string; role: string; term: number | null; error?: string }[];
  leader: string | null;
  term: number | null;
  quorum: { up: number; total: number; needed: number; tolerates: number; state: string };
  summary: string;
}

describe('status --json and health', () => {
  let c: TestCluster;

  before(async () => {
    c = await TestCluster.started();
  });

  after(async () => {
    await c?.stop();
  });

  const status = async (): Promise<{ code: number | null; json: StatusJson }> => {
    const r = await palisadeAt(c.endpoints, ['status', '--json']).done;
    return { code: r.code, json: JSON.parse(r.out) as StatusJson };
  };
  const health = async (): Promise<{ code: number | null; out: string }> => {
    const r = await palisadeAt(c.endpoints, ['health']).done;
    return { code: r.code, out: r.out };
  };

  test('all up: healthy, exit 0; one down: degraded, exit 1; two down: no quorum, exit 2', async () => {
    const leader = await c.waitForLeader();
    const all = await status();
    assert.equal(all.code, 0);
    assert.equal(all.json.leader, leader);
    assert.equal(typeof all.json.term, 'number');
    assert.deepEqual(all.json.quorum, { up: 3, total: 3, needed: 2, tolerates: 1, state: 'healthy' });
    assert.deepEqual(all.json.nodes.map((n) => n.id).sort(), ['n1', 'n2', 'n3']);
    assert.deepEqual(await health(), { code: 0, out: 'healthy: 3 of 3 up: survives 1 failure\n' });
    const json = JSON.parse((await palisadeAt(c.endpoints, ['health', '--json']).done).out) as StatusJson['quorum'];
    assert.equal(json.state, 'healthy');

    const follower = c.nodes.find((n) => n.id !== leader)!.id;
    await c.signal(follower, 'SIGKILL');
    const one = await status();
    assert.deepEqual(one.json.quorum, { up: 2, total: 3, needed: 2, tolerates: 0, state: 'degraded' });
    assert.equal(one.json.nodes.find((n) => n.id === follower)!.role, 'unreachable');
    const h1 = await health();
    assert.equal(h1.code, 1, h1.out);
    assert.match(h1.out, /^degraded: 2 of 3 up: one more failure stops writes/);

    await c.signal(leader, 'SIGKILL');
    const two = await until(async () => {
      const s = await status();
      return s.json.quorum.state === 'lost' ? s : null;
    }, 10_000, 'the survivor to report no quorum');
    assert.equal(two.code, 0, 'status itself exits 0 while a node answers');
    assert.deepEqual([two.json.quorum.up, two.json.quorum.tolerates], [1, 0]);
    const h2 = await health();
    assert.equal(h2.code, 2, h2.out);
    assert.match(h2.out, /^lost: 1 of 3 up: no quorum/);

    // No node answers at all: still a definite 2.
    await c.signal(c.nodes.find((n) => n.id !== leader && n.id !== follower)!.id, 'SIGKILL');
    assert.equal((await health()).code, 2);
  });
});
