// The seed scenario, end to end with real processes: a holder paused past its TTL comes
// back and writes with its old token; the fenced resource rejects it, and its lock.signal
// is already aborted by the time it can act.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster } from '../support/cluster.js';
import { runStory } from '../../examples/paused-holder/story.js';

let c: TestCluster;
before(async () => {
  c = await TestCluster.started();
});
after(() => c?.stop());

test('a holder paused past its TTL is fenced out by the resource and told its lease is gone', async () => {
  const lines: string[] = [];
  const out = await runStory(c.endpoints, { ttlMs: 1500, log: (l) => lines.push(l) });
  assert.ok(out.tokenB > out.tokenA, 'B got a larger token');
  assert.equal(out.bWrite.status, 200, "B's write was accepted");
  assert.equal(out.aResumed.signalAborted, true, "A's lock.signal was aborted by the time A could act");
  assert.equal(out.aWrite.status, 409, "A's write was rejected");
  assert.equal(out.aWrite.body.accepted, false);
  assert.equal(out.finalValue, 'written by B');
  assert.equal(out.finalFence, String(out.tokenB));
});
