// `npm run bench -- --abba [REF] [--rounds N]`: the chosen figures measured on REF's build (A)
// and on this working tree's (B), in the order A B B A per round, each case on a fresh
// cluster as in a plain run. The client processes are this checkout's for both sides, and so
// is the cluster config (BenchCluster.create): only the nodes' build differs.
import { compare, abbaSchedule, type Run } from './lib/abba.js';
import type { AbbaOptions, BenchOptions } from './lib/options.js';
import { ROOT } from './cluster.js';
import { figuresOf } from './figures.js';
import type { BenchCase } from './plan.js';
import { buildRef } from './ref-build.js';
import { RATIO, SPREAD, type AbbaReport } from './abba-report.js';
import type { CaseOutcome } from './report.js';
import { runCase } from './run-case.js';

/** `bCommit`: how the report names this working tree (its commit, and whether src/ was modified). */
export async function runAbba(cases: readonly BenchCase[], o: BenchOptions, abba: AbbaOptions, bCommit: string, log: (line: string) => void): Promise<AbbaReport> {
  const a = buildRef(ROOT, abba.ref, log);
  try {
    const schedule = abbaSchedule(abba.rounds);
    const runs: { side: 'A' | 'B'; cases: CaseOutcome[] }[] = [];
    for (const [i, side] of schedule.entries()) {
      const runLog = (line: string): void => log(`${i + 1}/${schedule.length} ${side}: ${line}`);
      const outcomes: CaseOutcome[] = [];
      for (const c of cases) {
        const outcome = await runCase(c, o, side === 'A' ? a.root : ROOT, runLog);
        outcomes.push(outcome);
        runLog(`${c.label}: done in ${outcome.seconds.toFixed(1)} s`);
      }
      runs.push({ side, cases: outcomes });
    }
    const forCompare: Run[] = runs.map((r) => ({ side: r.side, figures: r.cases.flatMap(figuresOf) }));
    return {
      ref: abba.ref,
      commits: { A: a.commit, B: bCommit },
      order: schedule.join(' '),
      ratio: RATIO,
      spread: SPREAD,
      figures: compare(forCompare),
      runs,
    };
  } finally {
    a.dispose();
  }
}
