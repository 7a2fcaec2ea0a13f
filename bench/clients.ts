// Latency of one acquire + release through each client library -- the TypeScript SDK
// (websocket), the Python and the Go clients (HTTP/JSON) -- in one sitting against the same
// fresh 3-node cluster, every client talking to the leader. Each round runs every client's
// conformance runner in bench mode (test/conformance/README.md) for `pairs` pairs, one at a
// time, the order rotating between rounds; the first tenth of each run warms up. A client
// whose language is missing here (no python3, no go) is left out, and said so.
//   node --import tsx bench/clients.ts [pairs per round] [rounds]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { captured } from '../test/support/captured.js';
import { goEnv, haveGo } from '../test/support/go.js';
import { BenchCluster, ROOT } from './cluster.js';

const pairs = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'palisade-bench-clients-'));
const havePython = spawnSync('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)']).status === 0;

interface Runner {
  readonly name: string;
  readonly command: string;
  readonly args: string[];
  readonly cwd: string;
  readonly env: (base: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
}

const runners: Runner[] = [
  { name: 'typescript (websocket)', command: process.execPath, args: ['--import', 'tsx', 'test/conformance/runner.ts', '--bench', String(pairs)], cwd: ROOT, env: (e) => e },
  ...(havePython ? [{ name: 'python (http)', command: 'python3', args: ['clients/python/tests/conformance.py', '--bench', String(pairs)], cwd: ROOT, env: (e: NodeJS.ProcessEnv) => e }] : []),
  ...(haveGo ? [{ name: 'go (http)', command: 'go', args: ['run', './cmd/conformance', '--bench', String(pairs)], cwd: join(ROOT, 'clients/go'), env: (e: NodeJS.ProcessEnv) => goEnv(dir, e as Record<string, string>) }] : []),
];
if (!havePython) console.log('python3 >= 3.9 missing: the Python client is left out');
if (!haveGo) console.log('go missing: the Go client is left out');

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const c = await BenchCluster.launch(ROOT);
try {
  const leader = await c.waitForLeader();
  const env = { ...process.env, PALISADE_ENDPOINTS: c.clientUrl(leader).replace(/^ws/, 'http') };
  const samples = new Map<string, number[]>(runners.map((r) => [r.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < runners.length; i++) {
      const r = runners[(i + round) % runners.length]!;
      const run = await captured(r.command, r.args, { cwd: r.cwd, env: r.env(env) });
      if (run.code !== 0) throw new Error(`${r.name}: exit ${run.code}\n${run.out}`);
      const line = run.out.trim().split('\n').pop()!;
      samples.get(r.name)!.push(...(JSON.parse(line) as { ms: number[] }).ms);
    }
  }
  const table = runners.map((r) => {
    const xs = samples.get(r.name)!;
    return { client: r.name, pairs: xs.length, p50Ms: Number(pct(xs, 50).toFixed(2)), p99Ms: Number(pct(xs, 99).toFixed(2)) };
  });
  console.log(`acquire + release, one at a time, on the leader of a fresh 3-node cluster (${rounds} rounds of ${pairs}, first tenth of each dropped)`);
  for (const t of table) console.log(`${t.client.padEnd(24)} p50 ${t.p50Ms.toFixed(2).padStart(6)} ms   p99 ${t.p99Ms.toFixed(2).padStart(7)} ms   (${t.pairs} pairs)`);
  console.log(JSON.stringify({ bench: 'clients', rounds, pairsPerRound: pairs, results: table }));
} finally {
  await c.stop();
  rmSync(dir, { recursive: true, force: true });
}
