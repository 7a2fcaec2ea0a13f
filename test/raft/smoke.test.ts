import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster } from './harness.js';

test('three nodes elect a leader and replicate a proposal', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.tickUntilLeader();
  const r = l.propose(new TextEncoder().encode('x'));
  assert.ok(r.ok);
  c.settle();
  for (const id of ['a', 'b', 'c']) {
    const datas = c.applied.get(id)!.filter((e) => e.data.length > 0);
    assert.equal(datas.length, 1, `node ${id} applied the proposal`);
  }
});
