// Leadership transfer (thesis §3.10): the leader brings the target up to date, sends it
// TimeoutNow, and refuses proposals until the transfer ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster, enc } from './harness.js';

test('transfer to an up-to-date follower: TimeoutNow, the target wins the next term at once', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  a.propose(enc('x'));
  c.settle();
  const term = a.term;
  c.sent.length = 0;
  assert.equal(a.transferLeader('c'), true);
  c.deliverAll();
  assert.ok(c.sent.some((m) => m.type === 'timeoutNow' && m.from === 'a' && m.to === 'c'));
  assert.ok(!c.sent.some((m) => m.type === 'preVote'), 'the target skips PreVote');
  assert.ok(c.sent.some((m) => m.type === 'vote' && m.transfer === true));
  const cc = c.node('c');
  assert.equal(cc.role, 'leader');
  assert.equal(cc.term, term + 1);
  assert.equal(a.role, 'follower');
  assert.ok(cc.propose(enc('y')).ok);
  c.settle();
  assert.deepEqual(c.appliedData('a'), ['x', 'y']);
});

test('proposals are refused while a transfer is in progress', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  // c is behind: hold the leader's appends to c so the transfer cannot complete yet.
  c.down.add('c');
  a.propose(enc('x'));
  c.deliverAll();
  c.down.delete('c');
  c.hold = (m) => m.to === 'c' && (m.type === 'app' || m.type === 'timeoutNow');
  assert.equal(a.transferLeader('c'), true);
  c.deliverAll();
  assert.equal(a.leadTransferTarget, 'c');
  const r = a.propose(enc('during'));
  assert.deepEqual(r, { ok: false, reason: 'transferring', leader: 'a' });
  assert.equal(a.proposeConfChange({ type: 'addLearner', node: 'd' }).ok, false);
  // The target catches up, gets TimeoutNow and takes over.
  c.hold = null;
  c.release();
  c.deliverAll();
  assert.equal(c.node('c').role, 'leader');
  assert.deepEqual(c.appliedData('c'), ['x']);
});

test('a transfer that cannot finish is abandoned after an election timeout', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  c.down.add('c');
  assert.equal(a.transferLeader('c'), true);
  assert.equal(a.propose(enc('no')).ok, false);
  c.tick(10);
  assert.equal(a.role, 'leader');
  assert.equal(a.leadTransferTarget, null);
  assert.ok(a.propose(enc('yes')).ok);
});

test('transfer is refused to oneself, to a non-member and by a follower', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  assert.equal(a.transferLeader('a'), false);
  assert.equal(a.transferLeader('zz'), false);
  assert.equal(c.node('b').transferLeader('c'), false);
});
