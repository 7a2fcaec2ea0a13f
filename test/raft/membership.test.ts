// Single-server membership changes (thesis §4.1): learners receive the log but neither vote
// nor count, a caught-up learner is promoted, a removed leader steps down, and a leader
// changes membership only after an entry of its own term committed and one change at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster, enc } from './harness.js';

/** a, b, c voters with a leading, and d added as a learner that has caught up. */
function withLearner(): MiniCluster {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  a.propose(enc('before-d'));
  c.deliverAll();
  c.add('d'); // a new, empty node: it learns its membership from the log
  const r = a.proposeConfChange({ type: 'addLearner', node: 'd' });
  assert.ok(r.ok, JSON.stringify(r));
  c.deliverAll();
  c.tick(2);
  assert.deepEqual(a.confState, { voters: ['a', 'b', 'c'], learners: ['d'] });
  assert.deepEqual(c.node('d').confState, { voters: ['a', 'b', 'c'], learners: ['d'] });
  assert.deepEqual(c.appliedData('d'), ['before-d'], 'the learner receives the log');
  return c;
}

test('a learner receives the log but does not count towards commitment', () => {
  const c = withLearner();
  const a = c.node('a');
  c.down.add('b');
  c.down.add('c');
  const r = a.propose(enc('needs-a-majority'));
  assert.ok(r.ok);
  c.deliverAll();
  assert.equal(c.node('d').log.lastIndex(), r.ok ? r.index : -1, 'd has the entry');
  assert.ok(a.log.committed < (r.ok ? r.index : 0), 'leader + learner are not a majority of three voters');
});

test('a learner neither campaigns nor votes, nor counts in an election', () => {
  const c = withLearner();
  const d = c.node('d');
  // d never campaigns, however long it goes without a leader.
  c.down.add('a');
  c.down.add('c');
  c.sent.length = 0;
  for (let i = 0; i < 50; i++) {
    d.tick();
    c.deliverAll();
  }
  assert.ok(!c.sent.some((m) => m.from === 'd' && (m.type === 'vote' || m.type === 'preVote')));
  assert.notEqual(d.role, 'leader');
  // b campaigns: vote requests go to voters only, so b stays leaderless (1 of 3 voters).
  c.tick(60);
  assert.notEqual(c.node('b').role, 'leader');
  assert.ok(!c.sent.some((m) => m.to === 'd' && (m.type === 'vote' || m.type === 'preVote')), 'nobody asks the learner');
  // Even a granted vote from d does not count for b: d is no voter in b's configuration.
  const b = c.node('b');
  b.campaign();
  c.flushReady();
  c.queue = [];
  const state = b.role;
  assert.ok(state === 'preCandidate' || state === 'candidate');
  b.step({ type: state === 'preCandidate' ? 'preVoteResp' : 'voteResp', from: 'd', to: 'b', term: state === 'preCandidate' ? b.term + 1 : b.term });
  assert.equal(b.role, state, 'still campaigning: one voter of three');
});

test('promotion: the learner becomes a voter and the quorum grows to three of four', () => {
  const c = withLearner();
  const a = c.node('a');
  const r = a.proposeConfChange({ type: 'promote', node: 'd' });
  assert.ok(r.ok, JSON.stringify(r));
  c.deliverAll();
  assert.deepEqual(a.confState, { voters: ['a', 'b', 'c', 'd'], learners: [] });
  assert.notEqual(c.node('d').role, 'learner');
  // Three of four commit without c...
  c.down.add('c');
  const r1 = a.propose(enc('three-of-four'));
  c.deliverAll();
  assert.ok(r1.ok && a.log.committed >= r1.index);
  // ...but two of four do not.
  c.down.add('b');
  const r2 = a.propose(enc('two-of-four'));
  c.deliverAll();
  assert.ok(r2.ok && a.log.committed < r2.index);
  // And d now votes: with a gone, a leader needs three of b, c and d.
  c.down.delete('b');
  c.down.delete('c');
  c.down.add('a');
  c.tickUntil(() => ['b', 'c', 'd'].some((x) => c.node(x).role === 'leader'), 100);
});

test('removing the leader: it steps down once the change is applied and never campaigns again', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  a.propose(enc('x'));
  c.deliverAll();
  const r = a.proposeConfChange({ type: 'remove', node: 'a' });
  assert.ok(r.ok, JSON.stringify(r));
  c.deliverAll();
  assert.equal(a.role, 'follower');
  assert.equal(a.removed, true);
  assert.deepEqual(c.node('b').confState.voters, ['b', 'c']);
  const termAtRemoval = a.term;
  // b and c elect a leader between them and commit without a.
  c.tickUntil(() => c.node('b').role === 'leader' || c.node('c').role === 'leader', 100);
  const nl = c.leader()!;
  assert.ok(nl.propose(enc('without-a')).ok);
  c.deliverAll();
  assert.ok(c.appliedData(nl.id).includes('without-a'));
  // a, cut off from the new leader (it is no longer sent anything), stays quiet.
  c.sent.length = 0;
  for (let i = 0; i < 100; i++) a.tick();
  c.deliverAll();
  assert.ok(!c.sent.some((m) => m.from === 'a' && (m.type === 'vote' || m.type === 'preVote')));
  assert.equal(a.term, termAtRemoval);
});

test('removing a follower shrinks the quorum', () => {
  const c = new MiniCluster(['a', 'b', 'c', 'd']);
  const a = c.elect('a');
  assert.ok(a.proposeConfChange({ type: 'remove', node: 'd' }).ok);
  c.deliverAll();
  assert.deepEqual(a.confState.voters, ['a', 'b', 'c']);
  c.down.add('c');
  c.down.add('d');
  const r = a.propose(enc('two-of-three'));
  c.deliverAll();
  assert.ok(r.ok && a.log.committed >= r.index);
});

test('a change is refused until an entry of the leader\'s term has committed', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  c.hold = (m) => m.type === 'app' && m.from === 'a';
  const a = c.elect('a');
  assert.ok(a.log.committed < a.log.lastIndex(), 'the no-op has not committed yet');
  const early = a.proposeConfChange({ type: 'addLearner', node: 'd' });
  assert.equal(early.ok, false);
  assert.equal(early.ok ? '' : early.reason, 'confPending');
  c.hold = null;
  c.release();
  c.deliverAll();
  assert.ok(a.proposeConfChange({ type: 'addLearner', node: 'd' }).ok);
});

test('one change at a time: a second change is refused while the first is pending', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  c.hold = (m) => m.type === 'app' && m.from === 'a';
  assert.ok(a.proposeConfChange({ type: 'addLearner', node: 'd' }).ok);
  const second = a.proposeConfChange({ type: 'addLearner', node: 'e' });
  assert.equal(second.ok ? '' : second.reason, 'confPending');
  // Ordinary proposals still go through.
  assert.ok(a.propose(enc('normal')).ok);
  c.hold = null;
  c.release();
  c.deliverAll();
  assert.deepEqual(a.confState.learners, ['d']);
  assert.ok(a.proposeConfChange({ type: 'addLearner', node: 'e' }).ok);
  // Invalid changes are refused outright.
  c.deliverAll();
  const bad = a.proposeConfChange({ type: 'promote', node: 'zz' });
  assert.equal(bad.ok ? '' : bad.reason, 'confInvalid');
});

test('a change interrupted by the leader crashing before it commits is lost, then redone', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  c.hold = (m) => m.type === 'app' && m.from === 'a';
  assert.ok(a.proposeConfChange({ type: 'addLearner', node: 'd' }).ok);
  c.deliverAll();
  c.crash('a');
  c.held.length = 0;
  c.hold = null;
  c.tickUntil(() => c.leader() !== undefined, 100);
  const nl = c.leader()!;
  assert.deepEqual(nl.confState.learners, []);
  // a restarts: its uncommitted change is overwritten and never applied.
  c.restart('a');
  c.tick(3);
  assert.deepEqual(c.node('a').confState.learners, []);
  assert.ok(!c.applied.get('a')!.some((e) => e.type === 'conf'));
  assert.ok(nl.proposeConfChange({ type: 'addLearner', node: 'd' }).ok);
  c.deliverAll();
  for (const id of ['a', 'b', 'c']) assert.deepEqual(c.node(id).confState.learners, ['d']);
});

test('a change that reached a majority before the leader crashed is finished by the next leader', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  // The change reaches b, but a crashes before it learns that it committed.
  c.hold = (m) => m.type === 'appResp' || (m.type === 'app' && m.to === 'c');
  assert.ok(a.proposeConfChange({ type: 'addLearner', node: 'd' }).ok);
  c.deliverAll();
  c.crash('a');
  c.held.length = 0;
  c.hold = null;
  // Only b can win: c's log lacks the change, so b refuses to vote for c.
  const b = c.node('b');
  c.tickUntil(() => b.role === 'leader', 100);
  // b holds the change; its no-op commits it, every node applies it, and the next change may follow.
  c.add('d');
  c.tick(2);
  assert.deepEqual(b.confState.learners, ['d'], 'committed with b\'s no-op and applied');
  assert.deepEqual(c.node('c').confState.learners, ['d']);
  assert.ok(b.proposeConfChange({ type: 'promote', node: 'd' }).ok);
});

test('a promoted learner that has not learnt of its promotion yet still votes when asked', () => {
  // a, b, c vote; d is a learner. The promotion of d commits on a, b and c (a majority of
  // the old configuration) but none of it reaches d. Then a fails for good. b and c now
  // count a, b, c, d: three votes are needed, and only d can give the third. d still
  // believes it is a learner; a candidate asking for its vote knows better, so d must
  // answer (its vote counts only where the candidate's configuration makes it a voter).
  const c = withLearner();
  const a = c.node('a');
  c.filter = (m) => m.to !== 'd';
  assert.ok(a.proposeConfChange({ type: 'promote', node: 'd' }).ok);
  c.deliverAll();
  c.tick(2);
  for (const id of ['a', 'b', 'c']) assert.deepEqual(c.node(id).confState.voters, ['a', 'b', 'c', 'd'], id);
  assert.deepEqual(c.node('d').confState.voters, ['a', 'b', 'c']);
  c.crash('a');
  c.filter = null;
  c.tickUntil(() => c.node('b').role === 'leader' || c.node('c').role === 'leader', 300);
  c.tick(2);
  assert.deepEqual(c.node('d').confState.voters, ['a', 'b', 'c', 'd'], 'd learns of its promotion from the new leader');
});

test('a leader that removes itself hands over before stepping down, so the rest can elect', () => {
  // a leads a, b, c, d (d is down). a removes itself at index k and accepts one more
  // proposal at k+1 that never leaves it. The removal commits with b and c, but when a
  // steps down at once, b and c never learn that k committed: they still count a, b, c, d,
  // need a's vote, and a refuses it (its log is longer). Three of four up, no leader ever.
  // a must first make sure a majority of the new configuration knows the commit.
  const c = new MiniCluster(['a', 'b', 'c', 'd'], { cfg: { maxMsgBytes: 1 } });
  const a = c.elect('a');
  c.down.add('d');
  const rm = a.proposeConfChange({ type: 'remove', node: 'a' });
  assert.ok(rm.ok);
  const x = a.propose(enc('after-removal'));
  assert.ok(x.ok);
  const k1 = x.ok ? x.index : 0;
  c.filter = (m) => !(m.type === 'app' && (m.entries ?? []).some((e) => e.index === k1));
  c.deliverAll();
  assert.equal(a.removed, true);
  c.tick(3);
  assert.notEqual(a.role, 'leader', 'a steps down');
  for (const id of ['b', 'c']) assert.deepEqual(c.node(id).confState.voters, ['b', 'c', 'd'], `${id} applied the removal`);
  c.tickUntil(() => c.node('b').role === 'leader' || c.node('c').role === 'leader', 300);
  assert.equal(a.log.term(k1) !== undefined, true);
});
