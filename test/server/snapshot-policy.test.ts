import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SNAPSHOT_LOG_RATIO, SnapshotPolicy } from '../../src/server/snapshots/snapshot-policy.js';

test('the first snapshot comes after the configured number of entries', () => {
  const p = new SnapshotPolicy(100, { index: 0, bytes: 0 });
  for (let i = 1; i < 100; i++) p.applied(10);
  assert.equal(p.due(99), false);
  p.applied(10);
  assert.equal(p.due(100), true);
});

test('the next waits until the log since the last one is the ratio times its size, however many entries that is', () => {
  const p = new SnapshotPolicy(100, { index: 0, bytes: 0 });
  p.taken(100, 10_000);
  let index = 100;
  const apply = (n: number) => {
    for (let i = 0; i < n; i++) p.applied(10), index++;
  };
  apply(100);
  assert.equal(p.due(index), false, '100 entries but only 1,000 bytes since a 10,000-byte snapshot');
  apply(SNAPSHOT_LOG_RATIO * 1_000 - 101);
  assert.equal(p.due(index), false);
  apply(1);
  assert.equal(p.due(index), true);
});

test('entries applied while a snapshot was written count towards the next', () => {
  const p = new SnapshotPolicy(10, { index: 0, bytes: 0 });
  for (let i = 0; i < 10; i++) p.applied(100);
  const before = p.pending;
  p.applied(300); // applied while the snapshot was being stored
  p.taken(10, 100, p.pending - before);
  assert.equal(p.pending, 300);
  for (let i = 0; i < 9; i++) p.applied(10);
  assert.equal(p.due(20), false, '390 bytes since a 100-byte snapshot: below 4 x 100');
  p.applied(10);
  assert.equal(p.due(21), true, '400 bytes, counting the 300 applied while it was written');
});
