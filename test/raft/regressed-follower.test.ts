// A follower whose log went backwards (a truncated or lost disk): the leader must not keep
// believing the match it once had. A rejection at or below match resets that follower's
// progress and probing resumes from its hint; otherwise the follower never catches up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster, enc } from './harness.js';

test('a follower that restarts with a shorter log than it acknowledged is probed again and catches up', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.elect('a');
  for (let i = 0; i < 20; i++) assert.ok(l.propose(enc(`x${i}`)).ok);
  c.settle();
  const acked = c.node('c').log.lastIndex();
  assert.equal(l.progress().find((p) => p.id === 'c')!.match, acked);

  // c crashes and comes back with only the first half of its log (same term and vote).
  c.crash('c');
  const st = c.stores.get('c')!;
  const keep = Math.floor(acked / 2);
  st.entries = st.entries.filter((e) => e.index <= keep);
  st.hardState = { ...st.hardState, commit: Math.min(st.hardState.commit, keep) };
  c.down.delete('c');
  c.restart('c');
  assert.equal(c.node('c').log.lastIndex(), keep);

  // New writes: the appends to c are rejected at prevIndex >= its old match.
  for (let i = 0; i < 3; i++) assert.ok(l.propose(enc(`y${i}`)).ok);
  c.tick(10);
  assert.equal(c.node('c').log.lastIndex(), l.log.lastIndex(), 'the regressed follower caught up');
  const pc = l.progress().find((p) => p.id === 'c')!;
  assert.equal(pc.match, l.log.lastIndex());
  assert.deepEqual(c.appliedData('c'), c.appliedData('a'));
});

test('a rejection at exactly the match (the probe after a regression) resets the probe', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.elect('a');
  for (let i = 0; i < 6; i++) assert.ok(l.propose(enc(`x${i}`)).ok);
  c.settle();
  c.crash('c');
  const st = c.stores.get('c')!;
  st.entries = [];
  st.hardState = { ...st.hardState, commit: 0 };
  c.down.delete('c');
  c.restart('c');
  // Only heartbeats now: no new proposal. The leader's heartbeat answer triggers an append
  // at match+1 (prevIndex = match), which the empty follower rejects.
  c.tick(10);
  assert.equal(c.node('c').log.lastIndex(), l.log.lastIndex());
});
