// Ctrl-C and SIGTERM at every phase of the commands that open a session, through the real
// CLI against a real cluster: the command must end its wait and close its session before it
// exits (130 / 143). A process that died with its wait still queued would be granted the lock
// when the holder released it, and hold it, dead, until its TTL ran out.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';
import { palisadeAt } from '../support/cli-process.js';

let c: TestCluster;
let raw: RawClient;
before(async () => {
  c = await TestCluster.started();
  raw = await RawClient.connect(c.endpoints[0]!);
});
after(async () => {
  raw?.close();
  await c?.stop();
});

// A TTL far longer than the test: a session left behind would outlive it.
const TTL = ['--ttl', '60000'];

function palisade(args: string[]) {
  return palisadeAt(c.endpoints, args);
}

type Info = { holders: { session: number }[]; waiters: { session: number }[] };
const lockInfo = (name: string): Promise<Info> => raw.ok({ op: 'get', name });

/** Sessions waiting to lead an election, as the leader's status page shows it. */
async function candidates(election: string): Promise<number> {
  const leader = await c.waitForLeader();
  const res = await fetch(`${c.node(leader).httpUrl}/api/elections`);
  const { rows } = (await res.json()) as { rows: { name: string; candidates: number }[] };
  return rows.find((r) => r.name === election)?.candidates ?? 0;
}

async function holding(name: string) {
  const holder = palisade(['lock', name, ...TTL, '--', 'sleep', '60']);
  await until(() => holder.errors().includes('acquired'), 15_000, `${name}: the holder`);
  return holder;
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  const code = sig === 'SIGINT' ? 130 : 143;

  test(`${sig} while palisade lock waits in line: the wait is withdrawn, and the lock is free once the holder releases`, async () => {
    const name = `sig/wait-${sig}`;
    const holder = await holding(name);
    const waiter = palisade(['lock', name, ...TTL, '--', 'echo', 'must-not-run']);
    await until(async () => (await lockInfo(name)).waiters.length === 1, 15_000, 'the waiter queued');
    waiter.p.kill(sig);
    const w = await waiter.done;
    assert.equal(w.code, code, w.err);
    assert.doesNotMatch(w.out, /must-not-run/);
    holder.p.kill('SIGTERM');
    await holder.done;
    const info = await lockInfo(name);
    assert.deepEqual(info.holders, [], 'nobody holds it: the dead waiter was not granted it');
    assert.deepEqual(info.waiters, []);
  });

  test(`${sig} while palisade lock runs its command: the command gets it, and the lock is released`, async () => {
    const name = `sig/run-${sig}`;
    const run = palisade(['lock', name, ...TTL, '--', 'sh', '-c', 'trap "echo stopped; exit 9" INT TERM; echo ready; sleep 60 & wait']);
    await until(() => run.output().includes('ready'), 15_000, 'the command running');
    run.p.kill(sig);
    const r = await run.done;
    assert.equal(r.code, 9, r.err);
    assert.match(r.out, /stopped/);
    assert.deepEqual((await lockInfo(name)).holders, []);
  });

  test(`${sig} while palisade elect campaigns, then while it leads: the candidacy is withdrawn and the leader resigns`, async () => {
    const name = `sig/elect-${sig}`;
    const leader = palisade(['elect', name, 'a', ...TTL]);
    await until(() => leader.output().trim().length > 0, 15_000, 'the first leader');
    const candidate = palisade(['elect', name, 'b', ...TTL]);
    await until(() => candidate.errors().includes('campaigning'), 15_000, 'the candidate');
    await until(async () => (await candidates(name)) === 1, 15_000, 'the candidate queued');
    candidate.p.kill(sig);
    const cr = await candidate.done;
    assert.equal(cr.code, code, cr.err);
    assert.equal(cr.out, '', 'the candidate never led');
    leader.p.kill(sig);
    const lr = await leader.done;
    assert.equal(lr.code, code, lr.err);
    const now = (await raw.ok({ op: 'leader', election: name })) as { leader: number | null };
    assert.equal(now.leader, null, 'no leader: the dead candidate did not take over');
  });

  test(`${sig} while palisade put --lock waits for the lock: the wait is withdrawn`, async () => {
    const name = `sig/kv-${sig}`;
    const holder = await holding(name);
    const put = palisade(['put', `${name}/key`, 'v', '--lock', name]);
    await until(async () => (await lockInfo(name)).waiters.length === 1, 15_000, 'the put queued');
    put.p.kill(sig);
    const r = await put.done;
    assert.equal(r.code, code, r.err);
    holder.p.kill('SIGTERM');
    await holder.done;
    assert.deepEqual(await lockInfo(name), { ...(await lockInfo(name)), holders: [], waiters: [] });
  });
}
