// npm run sim -- [--seeds N] [--start S] [--seed N] [--nodes 3|5] [--steps N] [--trace] [--plant BUG]
//   --seeds N   run seeds S .. S+N-1 (default 100) and print a summary
//   --seed N    replay one seed exactly, printing its trace
//   --nodes     cluster size (default: 3 for even seeds, 5 for odd ones)
//   --steps     simulated steps of the faulty phase (default 4000)
//   --trace     print each run's events (elections, partitions, crashes, commits)
//   --plant     run a deliberately wrong RaftDriver (acksBeforeWrite: acknowledgements sent
//               before the write) to see the checker catch it
//   --storage-faults protected|unprotected   a restarted node may come back with a shorter
//               log than it acknowledged or no data; protected: it refuses to start
//   --whole     the whole-node simulator instead: production nodes, disks, networks and SDK
//               clients (test/sim/whole/cli.ts lists its options)
import { DEFAULT_STEPS, nodesFor, replayCommand, runSeed, type PlantedBug, type SimResult } from './cluster.js';
import { repairScenario } from './diverge.js';
import { Prng } from '../support/prng.js';
import { wholeMain } from './whole/cli.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function num(name: string): number | undefined {
  const v = arg(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} needs a non-negative integer, got ${v}`);
  return n;
}

function stats(xs: number[], seeds?: number[]): string {
  if (xs.length === 0) return 'n/a';
  const order = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]!);
  const at = (q: number) => xs[order[Math.min(order.length - 1, Math.floor(q))]!]!;
  const worst = order[order.length - 1]!;
  return (
    `median ${fmt(at((order.length - 1) / 2))}, p99 ${fmt(at(order.length * 0.99))}, worst ${fmt(xs[worst]!)}` +
    (seeds ? ` (seed ${seeds[worst]})` : '')
  );
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}

function main(): void {
  const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
  if (flags.has('--whole')) {
    void wholeMain(arg, num, flags);
    return;
  }
  const nodesArg = num('nodes');
  if (nodesArg !== undefined && nodesArg !== 3 && nodesArg !== 5) throw new Error('--nodes must be 3 or 5');
  const steps = num('steps') ?? DEFAULT_STEPS;
  const one = num('seed');
  const trace = flags.has('--trace') || one !== undefined;
  const start = one ?? num('start') ?? 0;
  const count = one !== undefined ? 1 : (num('seeds') ?? 100);
  const plantArg = arg('plant');
  if (plantArg !== undefined && plantArg !== 'acksBeforeWrite') throw new Error(`--plant must be acksBeforeWrite, got ${plantArg}`);
  const plant: PlantedBug | undefined = plantArg;
  const sf = arg('storage-faults');
  if (sf !== undefined && sf !== 'protected' && sf !== 'unprotected') throw new Error('--storage-faults must be protected or unprotected');
  const storageFaults = sf as 'protected' | 'unprotected' | undefined;

  const t0 = Date.now();
  const results: SimResult[] = [];
  const failures: SimResult[] = [];
  for (let seed = start; seed < start + count; seed++) {
    const nodes = nodesArg ?? nodesFor(seed);
    if (trace) console.log(`--- seed ${seed}, ${nodes} nodes, ${steps} steps ---`);
    const r = runSeed({ seed, nodes, steps, trace, ...(plant ? { plant } : {}), ...(storageFaults ? { storageFaults } : {}) });
    results.push(r);
    if (r.violation) {
      failures.push(r);
      console.log(`VIOLATION seed ${seed}: ${r.violation}`);
      console.log(`  replay: ${replayCommand(r, steps, plant, storageFaults)}`);
    }
    if (!trace && count >= 100 && (seed - start + 1) % Math.max(1, Math.floor(count / 20)) === 0) {
      console.error(`  ... ${seed - start + 1}/${count} seeds, ${failures.length} violations, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    }
  }

  // The dedicated scenario: a follower whose log diverged over several old terms.
  const repair: number[] = [];
  const rng = new Prng(start ^ 0x5eed);
  const repairRuns = Math.min(200, Math.max(20, count));
  let repairEntries = 0;
  for (let i = 0; i < repairRuns; i++) {
    const r = repairScenario(rng);
    repair.push(r.rejections);
    repairEntries += r.conflicting;
  }

  const sum = (f: (r: SimResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const ok = results.filter((r) => !r.violation);
  console.log('');
  console.log(`seeds run:               ${results.length} (${start}..${start + count - 1}; ${steps} steps each; ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  console.log(`violations:              ${failures.length}${failures.length ? ` (seeds ${failures.map((f) => f.seed).join(', ')})` : ''}`);
  const measured = (f: (r: SimResult) => number | null): [number[], number[]] => {
    const rs = ok.filter((r) => f(r) !== null);
    return [rs.map((r) => f(r)!), rs.map((r) => r.seed)];
  };
  console.log(`ticks to elect (cold):   ${stats(...measured((r) => r.coldElectTicks))}  (fresh cluster to first leader with a committed no-op; election timeout 10 ticks)`);
  console.log(`ticks to elect (calm):   ${stats(...measured((r) => r.calmElectTicks))}  (from the end of faults; 0 when a leader survived them)`);
  console.log(`ticks to commit (calm):  ${stats(...measured((r) => r.calmCommitTicks))}  (bound: 100)`);
  console.log(`repair of a diverged follower: rejections ${stats(repair)} (round trips = rejections + 1; ${repairRuns} runs, avg ${Math.round(repairEntries / repairRuns)} conflicting entries from 1-4 old terms)`);
  console.log(`proposals committed:     ${sum((r) => r.proposalsCommitted)}`);
  console.log(`reads served / dropped:  ${sum((r) => r.readsServed)} / ${sum((r) => r.readsDropped)}`);
  console.log(`elections (terms with a leader): ${sum((r) => r.elections)}; crashes: ${sum((r) => r.crashes)}`);
  console.log(`snapshots sent / installed: ${sum((r) => r.snapshotsSent)} / ${sum((r) => r.snapshotsInstalled)}; membership changes proposed: ${sum((r) => r.confChanges)}`);
  if (storageFaults) console.log(`storage faults (${storageFaults}): ${sum((r) => r.storageFaults)} damaged restarts, ${sum((r) => r.refusedStarts)} refused to start`);
  console.log(`simulated steps:         ${sum((r) => r.steps)} (${sum((r) => r.virtualTicks)} ticks)`);
  process.exitCode = failures.length ? 1 : 0;
}

main();
