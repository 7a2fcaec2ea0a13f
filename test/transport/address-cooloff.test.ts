// AddressCoolOff: an address cooling off for `ms` is refused until then, by the clock it is given;
// others are not; cooling it off again never shortens it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AddressCoolOff } from '../../src/transport/address-cooloff.js';

describe('AddressCoolOff', () => {
  test('refuses a cooling off address until its time is over, and no other', () => {
    let now = 1_000;
    const box = new AddressCoolOff(() => now);
    assert.equal(box.isCoolingOff('10.0.0.1'), false);
    box.coolOff('10.0.0.1', 1_000);
    assert.equal(box.isCoolingOff('10.0.0.1'), true);
    assert.equal(box.isCoolingOff('10.0.0.2'), false);
    now = 1_500;
    box.coolOff('10.0.0.1', 10); // shorter than what is left: the longer stands
    now = 1_999;
    assert.equal(box.isCoolingOff('10.0.0.1'), true);
    now = 2_000;
    assert.equal(box.isCoolingOff('10.0.0.1'), false);
  });

  test('many addresses at once: the expired ones are dropped, the cooling off stay cooling off', () => {
    let now = 0;
    const box = new AddressCoolOff(() => now);
    for (let i = 0; i < 10_000; i++) box.coolOff(`a${i}`, 10);
    now = 20;
    box.coolOff('late', 1_000);
    assert.equal(box.isCoolingOff('late'), true);
    assert.equal(box.isCoolingOff('a0'), false);
  });
});
