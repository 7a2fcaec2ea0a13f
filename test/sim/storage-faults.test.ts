// Storage faults in the simulator: a node restarts with a shorter log than it acknowledged,
// or with no data at all. With the server's protection modelled (the watermark and the
// storage identity make such a node refuse to start) no safety invariant breaks; without it
// the simulator finds the violation the protection exists for (a checker that never fires
// proves nothing). SIM_STORAGE_SEEDS widens the range (10,000 was run by hand: see
// docs/internals.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_STEPS, nodesFor, replayCommand, runSeed } from './cluster.js';

const SEEDS = Number(process.env.SIM_STORAGE_SEEDS ?? 200);

test(`protected: ${SEEDS} seeds with storage faults keep every safety and liveness property`, () => {
  const failures: string[] = [];
  let damaged = 0;
  for (let seed = 0; seed < SEEDS; seed++) {
    const r = runSeed({ seed, nodes: nodesFor(seed), steps: DEFAULT_STEPS, storageFaults: 'protected' });
    damaged += r.storageFaults;
    if (r.violation) failures.push(`${r.violation}\n    replay: ${replayCommand(r, DEFAULT_STEPS, undefined, 'protected')}`);
  }
  assert.deepEqual(failures, []);
  assert.ok(damaged > SEEDS / 5, `storage faults happened (${damaged})`);
});

test('unprotected: a node that comes back wiped or with a shorter log breaks safety', () => {
  // seed 256: n3 is wiped (it had acknowledged up to 51) and its vote elects a leader
  // without the committed entry 49; seed 148: n1 restarts with its log cut to 190 after
  // acknowledging 192, and a leader without the committed entry 192 is elected with its vote.
  const wiped = runSeed({ seed: 256, nodes: 3, steps: DEFAULT_STEPS, storageFaults: 'unprotected' });
  assert.equal(wiped.storageFaults, 1);
  assert.match(wiped.violation ?? '', /Leader Completeness: .* lacks committed entry 49/);
  const shorter = runSeed({ seed: 148, nodes: 3, steps: DEFAULT_STEPS, storageFaults: 'unprotected' });
  assert.equal(shorter.storageFaults, 1);
  assert.match(shorter.violation ?? '', /Leader Completeness: .* lacks committed entry 192/);
  // The same runs with the protection: the damaged node refuses to start, nothing breaks.
  for (const seed of [256, 148]) {
    const r = runSeed({ seed, nodes: 3, steps: DEFAULT_STEPS, storageFaults: 'protected' });
    assert.equal(r.refusedStarts, 1);
    assert.equal(r.violation, null);
  }
});
