// The nemesis's plan is what makes a failing seed replay: same seed, same faults.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../support/prng.js';
import { bridge, cutBetween, FAULT_KINDS, oneWay, planFaults, splitHalves } from './nemesis.js';

const IDS3 = ['n1', 'n2', 'n3'];
const IDS5 = ['n1', 'n2', 'n3', 'n4', 'n5'];

describe('nemesis plan', () => {
  it('is a function of the seed', () => {
    const a = planFaults({ seed: 42, runMs: 60_000, ttlMs: 3_000 });
    const b = planFaults({ seed: 42, runMs: 60_000, ttlMs: 3_000 });
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, planFaults({ seed: 43, runMs: 60_000, ttlMs: 3_000 }));
  });

  it('runs faults one at a time, all ended by the end of the run', () => {
    for (let seed = 0; seed < 50; seed++) {
      const plan = planFaults({ seed, runMs: 60_000, ttlMs: 3_000 });
      assert.ok(plan.length >= 4, `seed ${seed}: only ${plan.length} faults`);
      let free = 0;
      for (const step of plan) {
        assert.ok(step.atMs >= free, `seed ${seed}: faults overlap`);
        free = step.atMs + step.durationMs;
      }
      assert.ok(free <= 60_000);
    }
  });

  it('pauses clients for longer than the session TTL', () => {
    for (let seed = 0; seed < 50; seed++) {
      for (const step of planFaults({ seed, runMs: 60_000, ttlMs: 3_000 })) {
        if (step.kind === 'pause-client') assert.ok(step.durationMs > 3_000);
      }
    }
  });

  it('uses every kind of fault across a few seeds', () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 20; seed++) for (const s of planFaults({ seed, runMs: 60_000, ttlMs: 3_000 })) seen.add(s.kind);
    assert.deepEqual([...seen].sort(), [...FAULT_KINDS].sort());
  });
});

describe('partition shapes', () => {
  it('halves leave a strict majority on one side', () => {
    for (const ids of [IDS3, IDS5]) {
      for (let seed = 0; seed < 20; seed++) {
        const { minority, majority } = splitHalves(ids, new Prng(seed));
        assert.ok(minority.length >= 1 && majority.length > ids.length / 2);
        assert.deepEqual([...minority, ...majority].sort(), ids);
      }
    }
  });

  it('a bridge node keeps both sides, which do not see each other', () => {
    for (const ids of [IDS3, IDS5]) {
      const b = bridge(ids, new Prng(7));
      assert.ok(b.left.length >= 1 && b.right.length >= 1);
      const cuts = new Set(b.cuts);
      for (const x of b.left) {
        for (const y of b.right) assert.ok(cuts.has(`${x}>${y}`) && cuts.has(`${y}>${x}`));
        assert.ok(!cuts.has(`${x}>${b.bridge}`) && !cuts.has(`${b.bridge}>${x}`));
      }
    }
  });

  it('cuts both ways between groups, one way for mute and deaf', () => {
    assert.deepEqual(cutBetween(['n1'], ['n2', 'n3']).sort(), ['n1>n2', 'n1>n3', 'n2>n1', 'n3>n1']);
    assert.deepEqual(oneWay('n2', IDS3, 'mute'), ['n2>n1', 'n2>n3']);
    assert.deepEqual(oneWay('n2', IDS3, 'deaf'), ['n1>n2', 'n3>n2']);
  });
});
