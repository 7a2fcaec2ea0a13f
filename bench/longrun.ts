// A cluster that runs for months, compressed: N acquire/release operations with compaction
// on, then the log and LevelDB sizes and each node's memory (they must stay bounded, not grow
// with operations); then 100,000 locks held and the time for a new node to join.
//
//   node --import tsx bench/longrun.ts [--ops 1000000] [--clients 64] [--locks 100000]
// Prints a table and writes bench/results/longrun.json.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LockClient } from '../src/client/index.js';
import { rpc } from '../src/protocol/rpc.js';
import type { NodeStatus } from '../src/protocol/client-protocol.js';
import { TestCluster, until } from '../test/support/cluster.js';
import { SessionPool } from './lib/session-pool.js';
import { rssBytesOf } from './lib/node-sampler.js';
import { ensureBuilt } from './build-check.js';
import { BENCH_LIMITS, CLI, ROOT } from './cluster.js';

const { values } = parseArgs({
  options: {
    ops: { type: 'string', default: '1000000' },
    clients: { type: 'string', default: '64' },
    locks: { type: 'string', default: '100000' },
  },
});
const OPS = Number(values.ops);
const CLIENTS = Number(values.clients);
const LOCKS = Number(values.locks);
const log = (s: string) => process.stdout.write(`${s}\n`);

function du(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir]).toString().split('\t')[0]);
}

async function statusOf(c: TestCluster, id: string): Promise<NodeStatus & { lastIndex: number; snapshotIndex: number }> {
  const s = await rpc(c.node(id).clientUrl, { op: 'status' }, 5000);
  // This product's nodes always send both (src/server/ops/node-status.ts).
  return { ...s, lastIndex: s.lastIndex ?? 0, snapshotIndex: s.snapshotIndex ?? 0 };
}

async function sizes(c: TestCluster, ids: string[]) {
  return Promise.all(
    ids.map(async (id) => {
      const s = await statusOf(c, id);
      return {
        id,
        role: s.role,
        appliedIndex: s.appliedIndex,
        logEntries: s.lastIndex - s.snapshotIndex,
        snapshotIndex: s.snapshotIndex,
        diskBytes: du(c.node(id).dataDir),
        rssBytes: rssBytesOf(c.pid(id)),
      };
    }),
  );
}

ensureBuilt(ROOT, CLI, log);
const c = await TestCluster.create({ sessions: { defaultTtlMs: 30_000, maxTtlMs: 600_000 }, extraConfig: { limits: BENCH_LIMITS } });
await c.startAll();
await c.waitForLeader();
const ids = c.nodes.map((n) => n.id);
const result: Record<string, unknown> = { ops: OPS, clients: CLIENTS };
try {
  // 1. N operations with compaction on (snapshot every 20,000 entries, 5,000 kept).
  log(`phase 1: ${OPS.toLocaleString()} acquire/release operations from ${CLIENTS} clients`);
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => LockClient.connect({ endpoints: c.endpoints, ttlMs: 30_000 })));
  let done = 0;
  const t0 = performance.now();
  const samples: { ops: number; sizes: Awaited<ReturnType<typeof sizes>> }[] = [];
  let nextSample = OPS / 4;
  await Promise.all(
    clients.map(async (client, w) => {
      while (done < OPS) {
        const l = await client.acquire(`longrun/${w}`);
        await l.release();
        done += 2;
        if (done >= nextSample) {
          nextSample += OPS / 4;
          samples.push({ ops: done, sizes: await sizes(c, ids) });
          log(`  ${done.toLocaleString()} ops: ${JSON.stringify(samples.at(-1)!.sizes.map((s) => [s.id, s.logEntries, s.diskBytes, s.rssBytes]))}`);
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(clients.map((cl) => cl.close()));
  result['phase1'] = { seconds, opsPerSec: OPS / seconds, samples, final: await sizes(c, ids) };

  // 2. Hold LOCKS locks, then a new node joins with an empty data directory.
  log(`phase 2: ${LOCKS.toLocaleString()} locks held, then a new node joins`);
  const leader = await c.waitForLeader();
  const sessions = Math.max(1, Math.round(LOCKS / 100));
  const pool = await SessionPool.open([c.node(leader).clientUrl], Math.ceil(sessions / 100), 600_000, sessions);
  await pool.openSessions(sessions, 256);
  let granted = 0;
  await Promise.all(
    pool.sessions.map(async (s, i) => {
      for (let j = 0; j < LOCKS / sessions; j++) {
        const r = await pool.write(s, { op: 'acquire', name: `longrun/held/${i}/${j}`, mode: 'exclusive', wait: false });
        if (r.ok) granted++;
      }
    }),
  );
  pool.startKeepAlive();
  const n4 = await c.addNodeSpec('n4');
  const tJoin = performance.now();
  await c.start('n4', { join: c.endpoints.slice(0, 3) });
  await until(async () => {
    const ms = await rpc(c.node(leader).clientUrl, { op: 'members' }, 5000).catch(() => []);
    const me = ms.find((m) => m.id === 'n4');
    if (!me?.voter) return false;
    const [l, j] = await Promise.all([statusOf(c, leader), statusOf(c, 'n4').catch(() => null)]);
    return j !== null && j.appliedIndex >= l.commitIndex;
  }, 600_000, 'the new node to join and catch up');
  const joinSeconds = (performance.now() - tJoin) / 1000;
  result['phase2'] = { locksHeld: granted, joinSeconds, joinedVia: c.logOf('n4').includes('installed snapshot') ? 'snapshot' : 'log', afterJoin: await sizes(c, [...ids, n4.id]) };
  await pool.stopKeepAlive();
  pool.close();
} finally {
  await c.stop();
}

const p1 = result['phase1'] as { seconds: number; opsPerSec: number; final: Awaited<ReturnType<typeof sizes>> };
const p2 = result['phase2'] as { locksHeld: number; joinSeconds: number; joinedVia: string };
log('');
log(`| node | log entries | LevelDB on disk | RSS |`);
log(`|---|---|---|---|`);
for (const s of p1.final) log(`| ${s.id} (${s.role}) | ${s.logEntries.toLocaleString()} | ${(s.diskBytes / 1e6).toFixed(1)} MB | ${((s.rssBytes ?? 0) / 1e6).toFixed(0)} MB |`);
log(`after ${OPS.toLocaleString()} operations in ${p1.seconds.toFixed(0)} s (${p1.opsPerSec.toFixed(0)} ops/s)`);
log(`new node joined a cluster holding ${p2.locksHeld.toLocaleString()} locks in ${p2.joinSeconds.toFixed(2)} s (via ${p2.joinedVia})`);
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/longrun.json'), JSON.stringify(result, null, 2));
process.exit(0);
