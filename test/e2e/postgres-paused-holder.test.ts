// The seed scenario against a real database (issue 13): holder A, a separate process, takes
// a lock from a real 3-node cluster and is paused (SIGSTOP) past its TTL; B takes the lock
// and writes the row with its larger token through PostgresFence.write; A resumes and
// writes through PostgresFence.write with its old token. A's transaction is refused with
// StaleTokenError and the row holds B's value.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { TestCluster } from '../support/cluster.js';
import { poolFor, usePostgres } from '../support/postgres.js';
import { runStory } from '../../examples/paused-holder/story.js';
import { postgresResource } from '../../examples/paused-holder/postgres-resource.js';
import { PostgresFence } from '../../src/fence/postgres.js';

let c: TestCluster;
let pool: pg.Pool;
const db = usePostgres({
  setup: async (server) => {
    pool = poolFor(server);
  },
  teardown: () => pool.end(),
});
before(async () => {
  c = await TestCluster.create();
  await c.startAll();
  await c.waitForLeader();
});
after(() => c.stop());

test('a holder paused past its TTL is refused by PostgreSQL with StaleTokenError; the row keeps the new holder value', async () => {
  const resource = await postgresResource({ connectionString: db.server.connectionString, table: 'report_row', resource: 'report' });
  const lines: string[] = [];
  try {
    const out = await runStory(c.endpoints, { ttlMs: 1500, lock: 'e2e/pg-report', resource, log: (l) => lines.push(l) });
    const story = lines.join('\n');
    assert.ok(out.tokenB > out.tokenA, `B got a larger token\n${story}`);
    assert.equal(out.bWrite.status, 200, `B's fenced write committed\n${story}`);
    assert.equal(out.aWrite.body.accepted, false, `A's write was refused\n${story}`);
    assert.equal(out.aWrite.body.errorName, 'StaleTokenError', `A's transaction was refused as stale\n${story}`);
    assert.equal(out.aWrite.status, 409);
    assert.equal(out.aWrite.body.fence, String(out.tokenB), 'the fence A ran into is B\'s token');
  } finally {
    await resource.close();
  }
  // Read the row and the fence ourselves, not through the story's resource.
  const row = await pool.query<{ value: string }>('SELECT value FROM report_row WHERE id = $1', ['report']);
  assert.deepEqual(row.rows, [{ value: 'written by B' }]);
  const fence = await new PostgresFence(pool).current('report');
  assert.ok(fence !== null && fence > 0n);
  const story = lines.join('\n');
  assert.match(story, /rejected by the resource with StaleTokenError/);
});
