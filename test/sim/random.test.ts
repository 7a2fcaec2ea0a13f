// The random simulation set: hundreds of seeded runs of a 3- or 5-node cluster under faults,
// with the five safety properties checked after every step and liveness once faults stop.
// SIM_SEEDS / SIM_START widen or move the range; a failure prints the command that replays it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_STEPS, nodesFor, replayCommand, runSeed, type SimResult } from './cluster.js';

const SEEDS = Number(process.env.SIM_SEEDS ?? 300);
const START = Number(process.env.SIM_START ?? 0);
const CHUNKS = 4;

const all: SimResult[] = [];

for (let k = 0; k < CHUNKS; k++) {
  const lo = START + Math.floor((SEEDS * k) / CHUNKS);
  const hi = START + Math.floor((SEEDS * (k + 1)) / CHUNKS);
  test(`seeds ${lo}..${hi - 1}: no safety or liveness violation`, () => {
    const failures: string[] = [];
    for (let seed = lo; seed < hi; seed++) {
      const r = runSeed({ seed, nodes: nodesFor(seed), steps: DEFAULT_STEPS });
      all.push(r);
      if (r.violation) failures.push(`${r.violation}\n    replay: ${replayCommand(r, DEFAULT_STEPS)}`);
    }
    assert.deepEqual(failures, []);
  });
}

test('the runs did real work: elections, commits, reads, snapshots, membership changes', (t) => {
  const sum = (f: (r: SimResult) => number) => all.reduce((a, r) => a + f(r), 0);
  const calm = all.flatMap((r) => (r.calmCommitTicks === null ? [] : [r.calmCommitTicks])).sort((a, b) => a - b);
  t.diagnostic(
    `${all.length} seeds: ${sum((r) => r.elections)} elections, ${sum((r) => r.proposalsCommitted)} proposals committed, ` +
      `${sum((r) => r.readsServed)} reads served, ${sum((r) => r.snapshotsInstalled)} snapshots installed, ` +
      `${sum((r) => r.confChanges)} membership changes, ${sum((r) => r.crashes)} crashes; ` +
      `calm commit ticks median ${calm[Math.floor(calm.length / 2)]}, worst ${calm[calm.length - 1]}`,
  );
  assert.equal(all.length, SEEDS);
  assert.ok(all.every((r) => r.calmCommitTicks !== null || r.violation));
  assert.ok(sum((r) => r.elections) > SEEDS);
  assert.ok(sum((r) => r.proposalsCommitted) > 50 * SEEDS);
  assert.ok(sum((r) => r.readsServed) > 5 * SEEDS);
  assert.ok(sum((r) => r.snapshotsInstalled) > SEEDS);
  assert.ok(sum((r) => r.confChanges) > SEEDS / 2);
  assert.ok(sum((r) => r.crashes) > SEEDS);
});
