// Losing a quorum for good: two of three nodes SIGKILLed and never back. `palisade recover`
// makes a new single-member cluster from the survivor's data directory; a new member joins
// it; the survivor's keys are there, and the new holder's token exceeds every old one, so a
// fenced register that accepted the old holder accepts the new one and refuses the old.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { LockClient } from '../../src/client/index.js';
import { FencedRegister, StaleTokenError } from '../../src/fence/index.js';
import { rpc } from '../../src/protocol/rpc.js';
import { CLI, TestCluster, until } from '../support/cluster.js';

const run = promisify(execFile);
let old: TestCluster;
let fresh: TestCluster;

before(async () => {
  old = await TestCluster.started();
  fresh = await TestCluster.create({ extraConfig: { clusterId: 'palisade-recovered' } });
});
after(async () => {
  await old?.stop();
  await fresh?.stop();
});

test('recover from one survivor: keys kept, new tokens above the old, the fence takes the new holder', async () => {
  const register = new FencedRegister<string>('', 'accounts');
  // Left open: its session and lock are in the log when the cluster dies.
  const client = await LockClient.connect({ endpoints: old.endpoints, ttlMs: 30_000, requestTimeoutMs: 2_000 });
  let oldToken: number;
  {
    for (let i = 0; i < 20; i++) await client.put(`key/${i}`, `v${i}`);
    // Lock cycles move the tokens on; the last holder keeps its lock when the cluster dies.
    for (let i = 0; i < 10; i++) {
      const l = await client.acquire('accounts');
      register.write(l.token, `write ${i}`);
      await l.release();
    }
    const last = await client.acquire('accounts');
    register.write(last.token, 'last old write');
    oldToken = last.token;
  }

  // The survivor: a follower that has applied everything (the others die with the leader).
  const leader = await old.waitForLeader();
  const commit = (await old.status(leader))!.commitIndex;
  const survivor = old.nodes.find((n) => n.id !== leader)!;
  await until(async () => ((await old.status(survivor.id))?.appliedIndex ?? 0) >= commit, 10_000, 'the survivor applied the commit');
  for (const n of old.nodes) if (n.id !== survivor.id) await old.signal(n.id, 'SIGKILL');
  await old.signal(survivor.id, 'SIGTERM'); // its process stops; its directory is what survives

  // Same cluster id: refused. A new one: a single-member cluster others join.
  await assert.rejects(run(process.execPath, [CLI, 'recover', '--from', survivor.dataDir, '--config', old.configPath, '--id', 'n3']), /new clusterId/);
  const r = await run(process.execPath, [CLI, 'recover', '--from', survivor.dataDir, '--config', fresh.configPath, '--id', 'n1']);
  const floor = Number(/token floor (\d+)/.exec(r.stdout)?.[1]);
  assert.ok(floor > oldToken, `floor ${floor} above the old token ${oldToken}`);
  assert.match(r.stdout, /kept 20 keys; ended 1 sessions \(1 holds freed\)/);

  await fresh.start('n1');
  await fresh.waitForLeader();
  await fresh.start('n2', { join: [fresh.node('n1').clientUrl] });
  await until(
    async () => (await rpc(fresh.node('n1').clientUrl, { op: 'members' })).filter((m) => m.voter).length === 2,
    15_000,
    'n2 joined as a voter',
  );

  const next = await LockClient.connect({ endpoints: fresh.endpoints.slice(0, 2), ttlMs: 30_000 });
  try {
    for (let i = 0; i < 20; i++) assert.equal(new TextDecoder().decode((await next.kvGet(`key/${i}`))!.value), `v${i}`);
    const lock = await next.tryAcquire('accounts');
    assert.ok(lock, 'the old holder\'s lock was freed with its session');
    assert.ok(lock.token > floor && lock.token > oldToken, `new token ${lock.token} above ${oldToken}`);
    register.write(lock.token, 'new holder');
    assert.equal(register.value, 'new holder');
    assert.throws(() => register.write(oldToken, 'old holder, late'), StaleTokenError);
    assert.equal(register.value, 'new holder');
  } finally {
    await next.close();
    await client.close().catch(() => undefined);
  }
});
