// AddressBench: an address benched for `ms` is refused until then, by the clock it is given;
// others are not; benching again never shortens it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AddressBench } from '../../src/transport/address-bench.js';

describe('AddressBench', () => {
  test('refuses a benched address until its time is over, and no other', () => {
    let now = 1_000;
    const bench = new AddressBench(() => now);
    assert.equal(bench.benched('10.0.0.1'), false);
    bench.bench('10.0.0.1', 1_000);
    assert.equal(bench.benched('10.0.0.1'), true);
    assert.equal(bench.benched('10.0.0.2'), false);
    now = 1_500;
    bench.bench('10.0.0.1', 10); // shorter than what is left: the longer stands
    now = 1_999;
    assert.equal(bench.benched('10.0.0.1'), true);
    now = 2_000;
    assert.equal(bench.benched('10.0.0.1'), false);
  });

  test('many addresses at once: the expired ones are dropped, the benched stay benched', () => {
    let now = 0;
    const bench = new AddressBench(() => now);
    for (let i = 0; i < 10_000; i++) bench.bench(`a${i}`, 10);
    now = 20;
    bench.bench('late', 1_000);
    assert.equal(bench.benched('late'), true);
    assert.equal(bench.benched('a0'), false);
  });
});
