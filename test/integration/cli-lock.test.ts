// `palisade lock` and `palisade elect` as a user runs them: real CLI processes against a
// real cluster.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, sleep, until } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';
import { palisadeAt } from '../support/cli-process.js';

let c: TestCluster;
before(async () => {
  c = await TestCluster.started();
});
after(() => c?.stop());

function palisade(args: string[]) {
  return palisadeAt(c.endpoints, args);
}

test('palisade lock runs the command with the lock name and token, releases it, and exits with its status', async () => {
  const r = await palisade(['lock', 'cli/job', '--wait', '5000', '--', 'sh', '-c', 'echo "$PALISADE_LOCK_NAME $PALISADE_FENCING_TOKEN"; exit 7']).done;
  assert.equal(r.code, 7, r.err);
  const [name, token] = r.out.trim().split(' ');
  assert.equal(name, 'cli/job');
  assert.ok(Number(token) > 0);
  const client = await RawClient.connect(c.endpoints[0]!);
  try {
    const info = await client.ok({ op: 'get', name: 'cli/job' });
    assert.deepEqual(info.holders, [], 'released after the command exited');
  } finally {
    client.close();
  }
});

test('palisade lock waits for a held lock and gives up after --wait with its documented code', async () => {
  const holder = palisade(['lock', 'cli/busy', '--', 'sleep', '5']);
  await until(() => holder.errors().includes('acquired'), 10_000, 'the first holder');
  const r = await palisade(['lock', 'cli/busy', '--wait', '300', '--', 'true']).done;
  assert.equal(r.code, 74, r.err);
  holder.p.kill('SIGTERM');
  await holder.done;
});

test('when the lease is lost while the command runs, the command is terminated and palisade lock exits 75', async () => {
  const run = palisade(['lock', 'cli/lease', '--ttl', '1000', '--grace', '500', '--', 'sh', '-c', 'trap "echo got-term; exit 0" TERM; while true; do sleep 0.05; done']);
  await until(() => run.errors().includes('acquired'), 10_000, 'acquire');
  // Pause palisade itself (not the command) past its TTL: its keepalives stop.
  run.p.kill('SIGSTOP');
  await sleep(2500);
  run.p.kill('SIGCONT');
  const r = await run.done;
  assert.equal(r.code, 75, `stderr: ${r.err}`);
  assert.match(r.out, /got-term/);
  assert.match(r.err, /lease lost/);
});

test('palisade elect prints the token and runs the command as leader; a second campaigner leads after the first resigns', async () => {
  const first = palisade(['elect', 'cli/svc', 'a', '--', 'sleep', '1.5']);
  await until(() => first.output().trim().length > 0, 10_000, 'first leader');
  const t1 = Number(first.output().trim());
  const second = palisade(['elect', 'cli/svc', 'b', '--', 'true']);
  const r1 = await first.done;
  assert.equal(r1.code, 0, r1.err);
  const r2 = await second.done;
  assert.equal(r2.code, 0, r2.err);
  assert.ok(Number(r2.out.trim()) > t1, 'the next leader has a larger token');
});
