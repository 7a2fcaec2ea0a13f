// Storage faults against real `palisade serve` processes with real LevelDB: each case either
// refuses to start with a message that says what to do, or recovers with every acknowledged
// write readable through every node and every new fencing token above every earlier one.
import assert from 'node:assert/strict';
import { readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { TestCluster, until } from './cluster-harness.js';
import { RawClient, RawSession } from './raw-client.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Acknowledged writes: `keys` puts and `grants` grants of lock L; returns the highest token. */
async function write(c: TestCluster, via: string, keys: number, grants: number): Promise<number> {
  const client = await RawClient.connect(c.node(via).clientUrl);
  try {
    let s = await RawSession.open(client, 10_000);
    for (let i = 0; i < keys; i++) {
      // A session holds at most 128 unacknowledged requests: a fresh one every 100.
      if (i > 0 && i % 100 === 0) s = await RawSession.open(client, 10_000);
      const r = await s.call({ op: 'put', key: `k${i}`, value: enc(`v${i}`) });
      assert.ok(r.ok, JSON.stringify(r));
    }
    s = await RawSession.open(client, 10_000);
    let top = 0;
    for (let i = 0; i < grants; i++) {
      const r = await s.call({ op: 'acquire', name: 'L', mode: 'exclusive', wait: false });
      assert.ok(r.ok && r.result.status === 'granted', JSON.stringify(r));
      top = Math.max(top, r.result.token as number);
      const rel = await s.call({ op: 'release', name: 'L', token: r.result.token });
      assert.ok(rel.ok, JSON.stringify(rel));
    }
    return top;
  } finally {
    client.close();
  }
}

/** Every key is readable through `via` (a linearizable read served by that node). */
async function allReadable(c: TestCluster, via: string, keys: number): Promise<void> {
  const client = await RawClient.connect(c.node(via).clientUrl);
  try {
    for (let i = 0; i < keys; i++) {
      const r = await client.call({ op: 'kvGet', key: `k${i}` });
      assert.ok(r.ok, `${via}: ${JSON.stringify(r)}`);
      assert.ok(r.result, `${via}: k${i} is gone`);
      assert.equal(new TextDecoder().decode(r.result.value), `v${i}`);
    }
  } finally {
    client.close();
  }
}

async function newToken(c: TestCluster, via: string): Promise<number> {
  const client = await RawClient.connect(c.node(via).clientUrl);
  try {
    const s = await RawSession.open(client, 10_000);
    const r = await s.call({ op: 'acquire', name: 'L', mode: 'exclusive', wait: false });
    assert.ok(r.ok && r.result.status === 'granted', JSON.stringify(r));
    return r.result.token as number;
  } finally {
    client.close();
  }
}

/** The newest LevelDB write-ahead log of a data directory. */
function newestLog(dir: string): string {
  const logs = readdirSync(dir).filter((f) => f.endsWith('.log') && f !== 'LOG');
  logs.sort((a, b) => statSync(join(dir, b)).mtimeMs - statSync(join(dir, a)).mtimeMs || b.localeCompare(a));
  assert.ok(logs.length > 0, `no .log in ${dir}`);
  return join(dir, logs[0]!);
}

async function exited(c: TestCluster, id: string, timeoutMs = 15_000): Promise<void> {
  await until(() => !c.procs.has(id), timeoutMs, `${id} to stop`);
}

describe('storage faults', () => {
  const clusters: TestCluster[] = [];
  after(async () => {
    await Promise.all(clusters.map((c) => c.stop()));
  });

  test('finding 1: a wiped founding member restarted without --join is refused, and nothing acknowledged is lost', async () => {
    const c = await TestCluster.started();
    clusters.push(c);
    const KEYS = 60;
    await c.signal('n3', 'SIGKILL');
    await c.waitForLeader(10_000);
    const top = await write(c, 'n1', KEYS, 10);
    await c.signal('n1', 'SIGKILL');
    await c.signal('n2', 'SIGKILL');
    rmSync(c.node('n1').dataDir, { recursive: true, force: true });
    // n1 comes back empty (it founds itself anew), n3 comes back stale: together they are a
    // majority, and without the storage identity n1 would vote n3 in without the writes.
    await c.start('n1');
    await c.start('n3').catch(() => undefined);
    await exited(c, 'n1');
    const log = c.logOf('n1');
    assert.match(log, /n3 refuses this node: n3 knew n1 with storage id [0-9a-f-]+, and n1 now presents [0-9a-f-]+/);
    assert.match(log, /palisade member remove n1/);
    assert.match(log, /serve --join/);
    // n3 alone has no quorum and must not have made itself leader on n1's vote.
    assert.notEqual((await c.status('n3'))?.role, 'leader');
    await c.start('n2');
    const leader = await c.waitForLeader(15_000);
    assert.ok(leader === 'n2' || leader === 'n3');
    for (const via of ['n2', 'n3']) await allReadable(c, via, KEYS);
    assert.ok((await newToken(c, 'n3')) > top, 'a new token is above every earlier one');
  });

  test('finding 2: a follower whose newest .log was truncated refuses to start and says how many entries are gone', async () => {
    const c = await TestCluster.started();
    clusters.push(c);
    const leader = await c.waitForLeader();
    const victim = c.nodes.map((n) => n.id).find((id) => id !== leader)!;
    await write(c, leader, 120, 5);
    await until(async () => (await c.status(victim))?.appliedIndex ?? 0, 5_000, 'the follower to apply');
    await c.signal(victim, 'SIGKILL');
    const file = newestLog(c.node(victim).dataDir);
    truncateSync(file, Math.floor(statSync(file).size / 2));
    await c.start(victim).catch(() => undefined);
    await exited(c, victim);
    const log = c.logOf(victim);
    assert.match(log, /the log ends at entry \d+, but this node had written \(and may have acknowledged\) entries up to \d+: \d+ entries are gone/);
    assert.match(log, /member remove/);
  });

  for (const cut of [0.1, 0.5, 0.9]) {
    test(`the newest .log truncated at ${cut * 100}% (a follower): refused with a clear message, or recovered intact`, async () => {
      const c = await TestCluster.started();
      clusters.push(c);
      const leader = await c.waitForLeader();
      const victim = c.nodes.map((n) => n.id).find((id) => id !== leader)!;
      const top = await write(c, leader, 40, 3);
      await c.signal(victim, 'SIGKILL');
      const file = newestLog(c.node(victim).dataDir);
      truncateSync(file, Math.floor(statSync(file).size * cut));
      await c.start(victim).catch(() => undefined);
      await until(async () => !c.procs.has(victim) || (await c.status(victim)) !== null, 15_000, `${victim} to refuse or run`);
      if (!c.procs.has(victim)) {
        console.log(`# cut at ${cut}: refused: ${c.logOf(victim).split('\n').find((l) => l.includes('storage')) ?? ''}`.slice(0, 400));
        assert.match(c.logOf(victim), /storage .*: (the log ends at entry|the log has a gap|corrupt|cannot)/);
        return;
      }
      console.log(`# cut at ${cut}: recovered`);
      await allReadable(c, victim, 40);
      assert.ok((await newToken(c, victim)) > top);
    });
  }
});
