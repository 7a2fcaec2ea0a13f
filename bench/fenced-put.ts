// Fenced puts per second through a real cluster: a fresh 3-node cluster of `palisade serve`
// processes (dist/, so `npm run build` first) on 127.0.0.1 with LevelDB in a temp dir and
// fsync on (every Ready that carries entries is one synchronous batch), and clients that
// each hold their own lock and write their own key with lock.put — a fenced put, one Raft
// entry each. Measured for 1 client and for 64 clients; the same puts without a fence are
// measured alongside, for what the fence itself costs. Prints a table and writes
// bench/results/fenced-put.json.
//
//   node --import tsx bench/fenced-put.ts [--seconds 5] [--clients 1,64] [--kinds fenced,plain] [--value-bytes 64]
//
// Each client is a LockClient with its own connection and session, connected to the
// leader. The per-connection request rate limit is lifted for the run (limits.
// requestsPerSecond: 0): it is there to protect a node from one client, not to be measured.
// Everything runs on this machine: the three nodes and the clients share its CPUs, so
// compare figures taken on the same machine, at rest.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { LockClient, type Lock } from '../src/client/index.js';
import { TestCluster } from '../test/support/cluster.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const SECONDS = Number(arg('seconds', '5'));
const CLIENTS = arg('clients', '1,64').split(',').map(Number);
const VALUE_BYTES = Number(arg('value-bytes', '64'));
const WARMUP_MS = 500;
type Kind = 'fenced' | 'plain';
const KINDS = arg('kinds', 'fenced,plain').split(',') as Kind[];

interface Cell {
  kind: Kind;
  clients: number;
  puts: number;
  seconds: number;
  putsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

const round = (x: number, digits = 2): number => Number(x.toFixed(digits));

async function measure(endpoints: string[], kind: Kind, n: number, run: number, seconds = SECONDS): Promise<Cell> {
  const clients = await Promise.all(Array.from({ length: n }, () => LockClient.connect({ endpoints })));
  try {
    const locks: Lock[] = await Promise.all(clients.map((c, i) => c.acquire(`bench/${run}/lock/${i}`)));
    const value = 'v'.repeat(VALUE_BYTES);
    const latencies: number[] = [];
    let errors = 0;
    const start = performance.now();
    const measureFrom = start + WARMUP_MS;
    const end = measureFrom + seconds * 1000;
    let counted = 0;
    await Promise.all(
      clients.map(async (client, i) => {
        const key = `bench/${run}/key/${i}`;
        const lock = locks[i]!;
        for (;;) {
          const t0 = performance.now();
          if (t0 >= end) return;
          try {
            if (kind === 'fenced') await lock.put(key, value);
            else await client.put(key, value);
          } catch {
            errors++;
            if (kind === 'fenced' && !lock.held) return; // a lost lock ends this client's run
            continue;
          }
          const t1 = performance.now();
          if (t0 >= measureFrom && t1 <= end) {
            latencies.push(t1 - t0);
            counted++;
          }
        }
      }),
    );
    await Promise.all(locks.map((l) => l.release().catch(() => {})));
    latencies.sort((a, b) => a - b);
    return {
      kind,
      clients: n,
      puts: counted,
      seconds,
      putsPerSecond: Math.round(counted / seconds),
      p50Ms: round(percentile(latencies, 0.5)),
      p99Ms: round(percentile(latencies, 0.99)),
      maxMs: round(latencies.at(-1) ?? 0),
      errors,
    };
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
  }
}

function table(cells: Cell[]): string {
  const head = ['put', 'clients', 'puts', 'puts/s', 'p50 ms', 'p99 ms', 'max ms', 'errors'];
  const rows = cells.map((c) => [c.kind, c.clients, c.puts, c.putsPerSecond, c.p50Ms, c.p99Ms, c.maxMs, c.errors].map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const loadBefore = loadavg();
const cluster = await TestCluster.create();
// Lift the per-connection rate limit (see the top of the file).
const config = JSON.parse(readFileSync(cluster.configPath, 'utf8')) as Record<string, unknown>;
writeFileSync(cluster.configPath, JSON.stringify({ ...config, limits: { requestsPerSecond: 0 } }, null, 2));
const cells: Cell[] = [];
try {
  await cluster.startAll();
  const leader = await cluster.waitForLeader();
  console.log(`3-node cluster up (leader ${leader}); ${SECONDS} s per cell after ${WARMUP_MS} ms of warm-up, ${VALUE_BYTES}-byte values\n`);
  // A discarded round first: JIT, connections and LevelDB warm up before any cell counts.
  await measure(cluster.endpoints, 'fenced', 8, -1, 2);
  let run = 0;
  for (const n of CLIENTS) {
    for (const kind of KINDS) {
      cells.push(await measure(cluster.endpoints, kind, n, run++));
      console.log(table(cells.slice(-1)).split('\n').at(-1));
    }
  }
} finally {
  await cluster.stop();
}
const loadAfter = loadavg();

console.log(`\n${table(cells)}`);
const loadNote = `load average ${loadBefore[0]!.toFixed(1)} before, ${loadAfter[0]!.toFixed(1)} after, on ${cpus().length} CPUs`;
console.log(`\n${loadNote}${loadBefore[0]! > cpus().length ? ' — the machine was busy: expect noisy figures' : ''}`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const out = new URL('./results/fenced-put.json', import.meta.url);
writeFileSync(
  out,
  `${JSON.stringify(
    {
      benchmark: 'fenced-put',
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      loadAverage: { before: loadBefore.map((x) => round(x)), after: loadAfter.map((x) => round(x)) },
      cluster: { nodes: 3, fsync: true, host: '127.0.0.1', raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 } },
      secondsPerCell: SECONDS,
      warmupMs: WARMUP_MS,
      valueBytes: VALUE_BYTES,
      cells,
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${out.pathname}`);
process.exit(0);
