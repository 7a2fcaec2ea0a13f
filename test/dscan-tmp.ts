import { fuzzTargets, runTarget } from './support/fuzz-targets.js';
const from = Number(process.argv[2]), to = Number(process.argv[3]);
const targets = fuzzTargets();
for (let seed = from; seed < to; seed++) {
  for (const t of targets) {
    const started = performance.now();
    process.stdout.write(`${seed} ${t.name}\r`);
    const s = runTarget(t, 400, seed);
    const ms = performance.now() - started;
    if (s.failure !== null || s.maxMs > 500 || ms > 3000) console.log(`\nseed ${seed} ${t.name}: failure=${s.failure?.slice(0, 300)} maxMs=${s.maxMs.toFixed(0)} total=${ms.toFixed(0)}`);
  }
}
console.log('\ndone');
