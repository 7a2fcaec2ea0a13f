// Property tests over random command sequences. Every step is checked by the independent
// InvariantChecker (checker.ts); see workload.ts for how steps become commands.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LockMachine } from '../../src/lockfsm/index.js';
import { steps, Workload, WORKLOAD_CONFIG } from './workload.js';

const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
const params = (numRuns: number): fc.Parameters<unknown> => (seed === undefined ? { numRuns } : { numRuns, seed });

describe('properties over random command sequences', () => {
  it('safety invariants hold at every index (locks, tokens, FIFO, fences, ledger, retries)', () => {
    fc.assert(
      fc.property(steps(120), fc.boolean(), (all, viaBytes) => {
        new Workload(viaBytes).run(all);
      }),
      params(700),
    );
  });

  it('ledger- and fence-heavy sequences: run at most once per key, done answers the result', () => {
    fc.assert(
      fc.property(steps(120, 6), (all) => {
        new Workload(false).run(all);
      }),
      params(500),
    );
  });

  it('snapshot -> restore -> apply the rest gives the same results, events and state', () => {
    fc.assert(
      fc.property(steps(100, 2), fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), (all, picks) => {
        const w = new Workload(false);
        const cuts = new Set(picks.map((p) => p % (all.length + 1)));
        const snaps = new Map<number, Uint8Array>();
        all.forEach((step, i) => {
          if (cuts.has(i)) snaps.set(w.log.length, w.m.snapshot());
          w.step(step);
        });
        if (cuts.has(all.length)) snaps.set(w.log.length, w.m.snapshot());
        for (const [at, snap] of snaps) {
          const r = LockMachine.restore(snap, WORKLOAD_CONFIG);
          for (const entry of w.log.slice(at)) {
            assert.deepEqual(r.apply(entry.index, entry.cmd), entry.applied, `entry ${entry.index}`);
          }
          assert.deepEqual(r.snapshot(), w.m.snapshot());
          assert.deepEqual(r.stats(), w.m.stats());
        }
      }),
      params(300),
    );
  });

  it('determinism: the same log through bytes or objects, on two machines, gives identical output', () => {
    fc.assert(
      fc.property(steps(100, 2), (all) => {
        const w = new Workload(false);
        w.run(all);
        const other = new Workload(true).m;
        for (const entry of w.log) {
          assert.deepEqual(other.apply(entry.index, entry.cmd), entry.applied);
        }
        assert.deepEqual(other.snapshot(), w.m.snapshot());
      }),
      params(250),
    );
  });
});

describe('the snapshot encoder', () => {
  it('a snapshot encoded a slice at a time while the machine goes on applying is the snapshot at its start, byte for byte', () => {
    fc.assert(
      fc.property(steps(100, 2), fc.nat(), fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 40 }), (all, pick, budgets) => {
        const w = new Workload(false);
        const cut = pick % (all.length + 1);
        all.slice(0, cut).forEach((step) => w.step(step));
        const expected = w.m.snapshot();
        const encoder = w.m.snapshotEncoder();
        // The rest of the history is applied between the encoder's steps.
        const rest = all.slice(cut);
        let i = 0;
        for (;;) {
          const done = encoder.step(budgets[i % budgets.length]!);
          if (i < rest.length) w.step(rest[i]!);
          i++;
          if (done) break;
        }
        rest.slice(i).forEach((step) => w.step(step));
        assert.deepEqual(encoder.bytes(), expected);
        assert.deepEqual(LockMachine.restore(encoder.bytes(), WORKLOAD_CONFIG).snapshot(), expected);
      }),
      params(300),
    );
  });

  it('tables longer than an array-16 header encode the same in one step and in many', () => {
    const w = new Workload(false);
    for (let i = 0; i < 70_000; i++) w.m.apply(i + 1, { type: 'openSession', ttlMs: 5_000, label: `host-${i % 97}` });
    const whole = w.m.snapshot();
    const once = w.m.snapshotEncoder();
    assert.equal(once.step(Number.MAX_SAFE_INTEGER), true);
    const sliced = w.m.snapshotEncoder();
    let steps = 1;
    while (!sliced.step(4_999)) steps++;
    assert.equal(steps, 15);
    assert.deepEqual(once.bytes(), whole);
    assert.deepEqual(sliced.bytes(), whole);
  });
});
