// npm run bench [-- --quick] [--only uncontended,contended] [--duration S] [--abba [REF]] ...
//
// For each figure: a fresh 3-node cluster of real `palisade serve` processes (bench/cluster.ts),
// a separate client process running the workload through the public SDK or the raw protocol
// (bench/worker.ts), a fixed window after a warm-up, and the nodes' own counters and CPU at
// the window's edges. Prints one table and writes the same figures as JSON to
// bench/results/bench-<timestamp>.json and bench/results/latest.json. With --abba, the same
// figures for another commit's build and this one alternately (bench/abba.ts), compared in
// a table of ratios, written to bench/results/abba-<timestamp>.json and abba-latest.json.
// docs/benchmarks.md says what each workload measures.
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { runAbba } from './abba.js';
import { renderAbba, type AbbaReport } from './abba-report.js';
import { ensureBuilt } from './build-check.js';
import { BENCH_LIMITS, CLI, ROOT, projectTiming } from './cluster.js';
import { epochMs } from './lib/clock.js';
import { gitOrNull } from './lib/git.js';
import { parseOptions, USAGE, type BenchOptions } from './lib/options.js';
import { planCases } from './plan.js';
import { renderCases, writeReport, type CaseOutcome } from './report.js';
import { runCase } from './run-case.js';
import { TARGETS } from './targets.js';

const log = (line: string): void => console.log(`[bench] ${line}`);

function machine(): Record<string, unknown> {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryBytes: totalmem(),
    node: process.version,
    loadAvgAtStart: loadavg(),
    commit: gitOrNull(ROOT, ['rev-parse', '--short', 'HEAD']),
    // Uncommitted changes to the product's source: the figures are of the working tree.
    srcModified: (gitOrNull(ROOT, ['status', '--porcelain', '--', 'src']) ?? '').split('\n').filter(Boolean).length,
  };
}

/** Every case once, on this checkout's build. */
async function plainRun(o: BenchOptions): Promise<CaseOutcome[]> {
  const outcomes: CaseOutcome[] = [];
  for (const c of planCases(o)) {
    const outcome = await runCase(c, o, ROOT, log);
    outcomes.push(outcome);
    log(`${c.label}: done in ${outcome.seconds.toFixed(1)} s`);
  }
  return outcomes;
}

async function main(): Promise<number> {
  const parsed = parseOptions(process.argv.slice(2));
  if (parsed === 'help') {
    console.log(USAGE);
    return 0;
  }
  const o = parsed;
  if (o.build) ensureBuilt(ROOT, CLI, log);
  const startedAt = new Date();
  const t0 = epochMs();
  const m = machine();
  const load = loadavg()[0]!;
  const commit = `${String(m['commit'])}${m['srcModified'] ? ` + ${String(m['srcModified'])} modified files in src/` : ''}`;
  log(`${o.quick ? 'quick' : 'full'} run: ${o.only.join(', ')}; window ${o.durationMs / 1000} s after ${o.warmupMs / 1000} s warm-up`);
  log(`machine: ${cpus().length} cores, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}${load > cpus().length ? ' (BUSY: the figures will be low)' : ''}`);
  let cases: CaseOutcome[] = [];
  let abba: AbbaReport | undefined;
  if (o.abba) {
    log(`ABBA: ${o.abba.ref} (A) against this working tree (B), ${o.abba.rounds} round${o.abba.rounds === 1 ? '' : 's'}`);
    abba = await runAbba(planCases(o), o, o.abba, commit, log);
  } else {
    cases = await plainRun(o);
  }
  const wallSeconds = (epochMs() - t0) / 1000;
  const path = writeReport(resolve(ROOT, o.outDir), {
    startedAt: startedAt.toISOString(),
    wallSeconds,
    mode: o.quick ? 'quick' : 'full',
    options: { ...o },
    machine: { ...m, loadAvgAtEnd: loadavg() },
    cluster: { nodes: 3, fsync: true, ...projectTiming(), limits: BENCH_LIMITS },
    targets: TARGETS,
    cases,
    ...(abba ? { abba } : {}),
  });
  console.log('');
  console.log(abba ? renderAbba(abba) : renderCases(cases));
  console.log('');
  console.log(
    `load average ${(m['loadAvgAtStart'] as number[]).map((x) => x.toFixed(2)).join(' ')} at start, ${loadavg().map((x) => x.toFixed(2)).join(' ')} at end ` +
      `(${cpus().length} cores); commit ${commit}`,
  );
  console.log(`wall time ${wallSeconds.toFixed(0)} s; JSON: ${path}`);
  // Figures, however bad, and an ABBA ratio, however far from ×1, never fail the run; a
  // figure that could not be produced at all does.
  const all = abba ? abba.runs.flatMap((r) => r.cases) : cases;
  return all.some((x) => x.error !== null) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(2);
  },
);
