// The harness that starts real nodes must not itself make tests fail or hang: a port handed
// to two suites at once killed a node at start-up with EADDRINUSE in CI, and the nodes of
// that cluster which did start were never stopped, so the file ran until its timeout.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TestCluster } from './cluster.js';
import { claimPort } from './port-claims.js';
import { ROOT, freePorts, settleAll, startNode } from './node-process.js';

/** Pids of live processes whose command line mentions `text` (a cluster's config path). */
function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // gone between the listing and the read
    }
  }
  return pids;
}

// Below the default range (20,000-32,000), so that no other suite's claims can interfere.
const low = 10_000 + Math.floor(Math.random() * 900) * 10;
const range = { low, high: low + 10 };

test('ports claimed by another process are never handed out, and its claims end with it, even on SIGKILL', async () => {
  const taken = Array.from({ length: 9 }, (_, i) => low + i);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('./test/support/port-claims.ts').then(async ({ claimPort }) => {
         for (const p of ${JSON.stringify(taken)}) if (!(await claimPort(p))) throw new Error('could not claim ' + p);
         console.log('claimed');
         setInterval(() => {}, 1000);
       });`,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  after(() => child.kill('SIGKILL'));
  const [first] = (await once(child.stdout, 'data')) as [Buffer];
  assert.equal(first.toString().trim(), 'claimed');

  for (const p of taken) assert.equal(await claimPort(p), false, `port ${p} is the other process's`);
  // One port of the ten is left: freePorts must find it, whichever it draws first.
  assert.deepEqual(await freePorts(1, range), [low + 9]);
  await assert.rejects(freePorts(1, range), /no 1 free ports/, 'the last port is now this process\'s own claim');

  child.kill('SIGKILL');
  await once(child, 'exit');
  for (const p of taken) assert.equal(await claimPort(p), true, `port ${p} is free again once its claimant is dead`);
});

test('settleAll rejects with the first failure, but only once every start has settled', async () => {
  const events: string[] = [];
  const slow = new Promise<string>((resolve) => setImmediate(() => resolve('slow'))).then((v) => {
    events.push('slow settled');
    return v;
  });
  const fast = Promise.reject(new Error('fast failed'));
  await assert.rejects(
    settleAll([slow, fast]).finally(() => events.push('settleAll settled')),
    /fast failed/,
  );
  assert.deepEqual(events, ['slow settled', 'settleAll settled']);
  assert.deepEqual(await settleAll([Promise.resolve(1), Promise.resolve(2)]), [1, 2]);
});

test('a cluster whose start fails leaves none of its nodes running after stop', async () => {
  const c = await TestCluster.create();
  // n1's start fails before its process exists (its log file cannot be opened), while n2 and
  // n3 are still starting: the order that, in CI, left two nodes running after the cleanup.
  mkdirSync(join(c.dir, 'n1.log'));
  try {
    await assert.rejects(c.startAll(), /EISDIR/);
  } finally {
    await c.stop();
  }
  assert.deepEqual(processesMentioning(c.configPath), [], 'no node of the failed cluster is left');
});

test('a node that does not answer within its start time is killed, not left behind', async () => {
  const c = await TestCluster.create();
  after(() => c.stop());
  const n1 = c.node('n1');
  await assert.rejects(
    startNode({ id: 'n1', configPath: c.configPath, logPath: join(c.dir, 'n1.log'), clientUrl: n1.clientUrl, startTimeoutMs: 0 }),
    /killed\) did not answer status within 0 ms/,
  );
  assert.deepEqual(processesMentioning(c.configPath), []);
});
