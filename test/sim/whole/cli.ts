// npm run sim -- --whole [--seeds N] [--start S] [--seed N] [--nodes 3|5] [--ms N] [--plant BUG] [--rolling]
//   --seeds N   run seeds S .. S+N-1 (default 100) and print a summary
//   --seed N    replay one seed exactly, printing its trace
//   --ms N      virtual milliseconds of the faulty phase (default 10000)
//   --plant     run with a deliberately wrong piece of production code (plants.ts):
//               localSettings, forwardTwice, leaseWallClock
//   --rolling   give every seed nodes with different files (default: every third seed)
import { runWholeSeed, type WholeResult } from './run.js';
import { WHOLE_PLANTS, type WholePlant } from './plants.js';

export function wholeReplayCommand(seed: number, ms: number, plant?: WholePlant): string {
  return `npm run sim -- --whole --seed ${seed} --ms ${ms}${plant ? ` --plant ${plant}` : ''}`;
}

export async function wholeMain(arg: (name: string) => string | undefined, num: (name: string) => number | undefined, flags: ReadonlySet<string>): Promise<void> {
  const one = num('seed');
  const start = one ?? num('start') ?? 0;
  const count = one !== undefined ? 1 : (num('seeds') ?? 100);
  const ms = num('ms') ?? 10_000;
  const nodes = num('nodes');
  if (nodes !== undefined && nodes !== 3 && nodes !== 5) throw new Error('--nodes must be 3 or 5');
  const plantArg = arg('plant');
  if (plantArg !== undefined && !WHOLE_PLANTS.includes(plantArg as WholePlant)) throw new Error(`--plant must be one of ${WHOLE_PLANTS.join(', ')}`);
  const plant = plantArg as WholePlant | undefined;
  const t0 = performance.now();
  const results: WholeResult[] = [];
  for (let seed = start; seed < start + count; seed++) {
    const r = await runWholeSeed({
      seed,
      durationMs: ms,
      ...(nodes ? { nodes: nodes as 3 | 5 } : {}),
      ...(flags.has('--rolling') ? { rollingConfig: true } : {}),
      ...(plant ? { plant } : {}),
      ...(one !== undefined ? { trace: (line: string) => console.log(line) } : {}),
    });
    results.push(r);
    if (r.violation) {
      console.log(`VIOLATION seed ${seed}: ${r.violation}`);
      console.log(`  replay: ${wholeReplayCommand(seed, ms, plant)}`);
    }
    if (count >= 100 && (seed - start + 1) % Math.max(1, Math.floor(count / 20)) === 0) {
      console.error(`  ... ${seed - start + 1}/${count} seeds, ${results.filter((x) => x.violation).length} violations, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  }
  const sum = (f: (r: WholeResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const bad = results.filter((r) => r.violation);
  console.log('');
  console.log(`whole-node seeds run:    ${results.length} (${start}..${start + count - 1}; ${ms} ms of faults each; ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  console.log(`violations:              ${bad.length}${bad.length ? ` (seeds ${bad.map((r) => r.seed).join(', ')})` : ''}`);
  console.log(`grants / uses / acknowledged writes / timed-out acquires: ${sum((r) => r.grants)} / ${sum((r) => r.uses)} / ${sum((r) => r.writes)} / ${sum((r) => r.timeouts)}`);
  console.log(`faults injected:         ${sum((r) => r.faults)}; nodes with a checkpoint digest at the end: ${sum((r) => r.checkpointsCompared)}`);
  console.log(`simulated events:        ${sum((r) => r.steps)}`);
  process.exitCode = bad.length ? 1 : 0;
}
