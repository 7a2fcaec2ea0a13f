// `npm run test:chaos`: Jepsen-style fault runs against real clusters, checked for
// linearizability. See docs/chaos.md.
//
//   npm run test:chaos                                  one run, a random seed, 3 nodes, 60 s
//   npm run test:chaos -- --seed N --nodes 3 --duration S   replay one run
//   npm run test:chaos -- --seeds N [--seed FIRST] [--nodes K] --duration S   a campaign
//   npm run test:chaos -- --ci                           the fixed CI set (about 10 minutes)
//   npm run test:chaos -- --check FILE                   re-check a saved history
//   npm run test:chaos -- --self-test                    plant a lease bug in the clients; the run
//                                                        passes only if the checker catches it
//
// The last line is always "N passed, M failed"; the exit status is non-zero on any failure.
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { check, formatReport } from './checker/index.js';
import { CLI, ROOT } from '../support/cluster.js';
import { FAULT_KINDS, type FaultKind } from './nemesis.js';
import { readRunHistory } from './recorder.js';
import { replayCommand, runOnce, type RunResult } from './single-run.js';
import { seconds, table, windowContext } from './summary.js';
import { outageRows } from './outage.js';

/** The CI set: 3- and 5-node clusters, fixed seeds, about 75 s each with setup and checks. */
const CI_RUNS: readonly { seed: number; nodes: number }[] = [
  { seed: 1, nodes: 3 },
  { seed: 2, nodes: 5 },
  { seed: 3, nodes: 3 },
  { seed: 4, nodes: 5 },
  { seed: 5, nodes: 3 },
  { seed: 6, nodes: 5 },
];
const CI_DURATION_S = 60;

interface Plan {
  readonly runs: readonly { seed: number; nodes: number }[];
  readonly durationMs: number;
  readonly selfTest: boolean;
}

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: npm run test:chaos -- [--ci] [--seed N] [--seeds COUNT] [--nodes 3|5] [--duration SECONDS] [--keep-logs] [--check FILE] [--self-test]\n`);
  process.exit(2);
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) usage(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return n;
}

function planFromArgs(values: Record<string, string | boolean | undefined>): Plan {
  if (values['ci'] === true) return { runs: CI_RUNS, durationMs: CI_DURATION_S * 1000, selfTest: false };
  const seed = positiveInt(values['seed'] as string | undefined, 'seed');
  const count = positiveInt(values['seeds'] as string | undefined, 'seeds');
  const nodes = positiveInt(values['nodes'] as string | undefined, 'nodes');
  if (nodes !== undefined && nodes < 3) usage('--nodes must be at least 3');
  const selfTest = values['self-test'] === true;
  const durationS = positiveInt(values['duration'] as string | undefined, 'duration') ?? (selfTest ? 30 : 60);
  if (durationS < 5) usage('--duration must be at least 5 seconds');
  const first = seed ?? (count === undefined && !selfTest ? Math.floor(Math.random() * 1_000_000) : 1);
  const runs = Array.from({ length: count ?? 1 }, (_, i) => ({ seed: first + i, nodes: nodes ?? (count === undefined || i % 2 === 0 ? 3 : 5) }));
  return { runs, durationMs: durationS * 1000, selfTest };
}

async function recheck(file: string): Promise<number> {
  const { ops, faults, notes } = await readRunHistory(file);
  const result = check(ops);
  console.log(formatReport(ops, result));
  if (result.valid === false) console.log(`\n${windowContext(result.window, faults, notes)}`);
  const passed = result.valid === true ? 1 : 0;
  console.log(`${passed} passed, ${1 - passed} failed`);
  return passed === 1 ? 0 : 1;
}

function campaignSummary(results: readonly RunResult[]): string {
  const rows: string[][] = [['seed', 'nodes', 'ops', 'ok', 'fail', 'unknown', 'faults', 'stale refused', 'unavailable', 'recovery', 'verdict']];
  const faults = new Map<FaultKind, number>();
  for (const r of results) {
    let n = 0;
    for (const [kind, c] of r.faults) {
      faults.set(kind, (faults.get(kind) ?? 0) + c);
      n += c;
    }
    rows.push([
      String(r.seed),
      String(r.nodes),
      String(r.operations),
      String(r.outcomes.ok),
      String(r.outcomes.fail),
      String(r.outcomes.unknown),
      String(n),
      String(r.fencedRejected),
      r.availability === null ? '-' : seconds(r.availability.unavailableMs),
      r.recoveryMs === null ? '-' : seconds(r.recoveryMs),
      r.passed ? 'pass' : 'FAIL',
    ]);
  }
  const sum = (f: (r: RunResult) => number): string => String(results.reduce((s, r) => s + f(r), 0));
  rows.push(['all', '', sum((r) => r.operations), sum((r) => r.outcomes.ok), sum((r) => r.outcomes.fail), sum((r) => r.outcomes.unknown), String([...faults.values()].reduce((a, b) => a + b, 0)), sum((r) => r.fencedRejected), '', '', '']);
  const faultLine = FAULT_KINDS.map((k) => `${k} ${faults.get(k) ?? 0}`).join(', ');
  const perFault = results.flatMap((r) => r.outages?.perFault ?? []);
  const longest = Math.max(0, ...results.map((r) => r.outages?.longestGapMs ?? 0));
  const overruns = results.flatMap((r) => r.heartbeat?.overruns ?? []);
  const heartbeat = [
    '',
    `heartbeat, all runs: longest gap ${Math.round(longest)} ms; deadline overruns ${overruns.length}${overruns.length ? ` (worst ${Math.round(Math.max(...overruns))} ms)` : ''}`,
    table(outageRows(perFault)),
  ];
  const failures = results.filter((r) => !r.passed).map((r) => `  ${replayCommand(r.seed, r.nodes, r.durationMs)}   # ${r.problems[0] ?? ''}`);
  return [table(rows), '', `faults: ${faultLine}`, ...heartbeat, ...(failures.length > 0 ? ['', 'failed runs:', ...failures] : [])].join('\n');
}

/**
 * The nodes run a copy of dist/ taken now, so that a rebuild during a long campaign neither
 * breaks a node's restart half-way through writing files nor mixes two versions in one
 * cluster. It sits inside the repository so that its imports still find node_modules.
 */
function snapshotBuild(resultsDir: string): string {
  const builds = join(resultsDir, '.build');
  // Copies left by campaigns that were killed (their pid is gone).
  for (const entry of existsSync(builds) ? readdirSync(builds) : []) {
    if (!isAlive(Number(entry))) rmSync(join(builds, entry), { recursive: true, force: true });
  }
  const copy = join(builds, `${process.pid}`);
  // dist/ reads these from one folder up (the package's layout): version, config schema, pages.
  for (const part of ['dist', 'web', 'package.json', 'config.schema.json']) {
    cpSync(join(ROOT, part), join(copy, part), { recursive: true });
  }
  process.on('exit', () => rmSync(copy, { recursive: true, force: true }));
  return join(copy, 'dist', 'cli', 'main.js');
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      ci: { type: 'boolean' },
      seed: { type: 'string' },
      seeds: { type: 'string' },
      nodes: { type: 'string' },
      duration: { type: 'string' },
      'keep-logs': { type: 'boolean' },
      check: { type: 'string' },
      'self-test': { type: 'boolean' },
    },
    strict: true,
  });
  if (typeof values.check === 'string') return recheck(values.check);
  if (!existsSync(CLI)) usage(`${CLI} is missing: run \`npm run build\` first (the chaos runs start real nodes from dist/)`);
  const plan = planFromArgs(values);
  const resultsDir = join(ROOT, 'test-results', 'chaos');
  const cli = snapshotBuild(resultsDir);
  const results: RunResult[] = [];
  for (const [i, run] of plan.runs.entries()) {
    console.log(`\n=== run ${i + 1}/${plan.runs.length}: ${replayCommand(run.seed, run.nodes, plan.durationMs, plan.selfTest)}`);
    results.push(
      await runOnce({
        ...run,
        durationMs: plan.durationMs,
        resultsDir,
        cli,
        keepLogs: values['keep-logs'] === true,
        log: (line) => console.log(line),
        plantOptimisticLeases: plan.selfTest,
      }),
    );
  }
  if (results.length > 1) console.log(`\n=== campaign\n${campaignSummary(results)}`);
  const failed = results.filter((r) => !r.passed).length;
  console.log(`\nresults under ${resolve(resultsDir)}`);
  console.log(`${results.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    console.log('0 passed, 1 failed');
    process.exit(1);
  },
);
