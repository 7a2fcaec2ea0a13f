// Log replication: agreement despite follower failure, no commit without a majority,
// batching, the bounded in-flight window, recovery of lost appends, fast repair of a
// diverged follower and the Figure 8 rule.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster, enc, entries } from './harness.js';
import { divergedLogs, repairOnce } from '../sim/diverge.js';

test('agreement despite a follower failure: a majority commits and applies', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.elect('a');
  c.down.add('c');
  for (let i = 0; i < 5; i++) assert.ok(l.propose(enc(`x${i}`)).ok);
  c.settle();
  assert.deepEqual(c.appliedData('a'), ['x0', 'x1', 'x2', 'x3', 'x4']);
  assert.deepEqual(c.appliedData('b'), ['x0', 'x1', 'x2', 'x3', 'x4']);
  assert.deepEqual(c.appliedData('c'), []);
  // The failed follower comes back and catches up.
  c.down.delete('c');
  c.tick(3);
  assert.deepEqual(c.appliedData('c'), ['x0', 'x1', 'x2', 'x3', 'x4']);
});

test('no commit without a majority', () => {
  const c = new MiniCluster(['a', 'b', 'c', 'd', 'e']);
  const l = c.elect('a');
  const commitBefore = l.log.committed;
  c.partition(['a', 'b'], ['c', 'd', 'e']);
  const r = l.propose(enc('lonely'));
  assert.ok(r.ok);
  c.tick(5); // less than an election timeout: still leader, still no majority
  assert.equal(l.role, 'leader');
  assert.equal(l.log.committed, commitBefore);
  assert.equal(c.node('b').log.lastIndex(), r.index, 'the follower in the minority has the entry');
  assert.deepEqual(c.appliedData('a'), []);
});

test('batching: many proposals travel in one AppendEntries', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.elect('a');
  c.sent.length = 0;
  for (let i = 0; i < 50; i++) assert.ok(l.propose(enc(`p${i}`)).ok);
  c.settle();
  const apps = c.sent.filter((m) => m.type === 'app' && m.from === 'a' && m.to === 'b' && (m.entries?.length ?? 0) > 0);
  assert.equal(apps.length, 1, 'one append to b carries all 50 proposals');
  assert.equal(apps[0]!.entries!.length, 50);
  assert.equal(c.appliedData('b').length, 50);
});

test('maxMsgBytes splits a large batch', () => {
  const c = new MiniCluster(['a', 'b', 'c'], { cfg: { maxMsgBytes: 100 } });
  const l = c.elect('a');
  c.sent.length = 0;
  for (let i = 0; i < 20; i++) l.propose(enc(`payload-${i}`.padEnd(30, '.')));
  c.settle();
  const apps = c.sent.filter((m) => m.type === 'app' && m.to === 'b' && (m.entries?.length ?? 0) > 0);
  assert.ok(apps.length > 1);
  for (const m of apps) assert.ok(m.entries!.length <= 3, `at most ~100 bytes per message, got ${m.entries!.length} entries`);
  assert.equal(c.appliedData('b').length, 20);
});

test('bounded in-flight window: never more than maxInflight outstanding appends to a follower', () => {
  const c = new MiniCluster(['a', 'b', 'c'], { cfg: { maxInflight: 3, maxMsgBytes: 1 } }); // one entry per message
  const l = c.elect('a');
  // Hold b's acknowledgements so that appends pile up in flight.
  c.hold = (m) => m.type === 'appResp' && m.from === 'b';
  c.sent.length = 0;
  for (let i = 0; i < 10; i++) {
    l.propose(enc(`w${i}`));
    c.deliverAll();
  }
  const toB = c.sent.filter((m) => m.type === 'app' && m.to === 'b' && (m.entries?.length ?? 0) > 0);
  assert.equal(toB.length, 3, 'three appends in flight, then the leader waits');
  // Acknowledgements free the window and the rest flows, still at most 3 outstanding.
  c.hold = null;
  let outstanding = 0;
  let maxOutstanding = 0;
  c.filter = (m) => {
    if (m.type === 'app' && m.to === 'b' && (m.entries?.length ?? 0) > 0) maxOutstanding = Math.max(maxOutstanding, ++outstanding);
    if (m.type === 'appResp' && m.from === 'b') outstanding = Math.max(0, outstanding - 1);
    return true;
  };
  c.release();
  c.deliverAll();
  assert.ok(maxOutstanding <= 3, `outstanding ${maxOutstanding}`);
  assert.equal(c.appliedData('b').length, 10);
});

test('a full in-flight window whose appends were all lost drains on the next heartbeat', () => {
  // Found by the simulator (seed 27): with every append of a full window lost, nothing ever
  // freed the window, so the leader never sent to that follower again.
  const c = new MiniCluster(['a', 'b', 'c'], { cfg: { maxInflight: 2, maxMsgBytes: 1 } });
  const l = c.elect('a');
  c.tick(2); // b is in replicate state
  assert.equal(l.progress().find((p) => p.id === 'b')!.state, 'replicate');
  c.filter = (m) => !(m.type === 'app' && m.to === 'b'); // every append to b is lost (heartbeats pass)
  for (let i = 0; i < 6; i++) {
    l.propose(enc(`q${i}`));
    c.deliverAll();
  }
  assert.equal(c.appliedData('b').length, 0);
  c.filter = null;
  const ticks = c.tickUntil(() => c.appliedData('b').length === 6, 30);
  assert.ok(ticks <= 5, `b caught up after ${ticks} ticks`);
});

// Leader's history: terms 1, 2, 5, 7 (145 entries after the common prefix). The follower
// led terms 3, 4 and 6 alone: 100 entries that conflict with the leader's.
const DIVERGED = () => divergedLogs(10, [[2, 5], [5, 60], [7, 80]], [[3, 40], [4, 30], [6, 30]]);

test('a diverged follower (100 entries from 3 old terms) is repaired in a few round trips', () => {
  const { leader, follower } = DIVERGED();
  const r = repairOnce(leader, follower);
  assert.ok(r.repaired);
  assert.equal(r.conflicting, 100);
  assert.ok(r.rejections <= 5, `repaired after ${r.rejections} rejections`);
});

test('without the conflict-term hints the same repair takes one round trip per entry', () => {
  // The same logs with the follower's hints stripped: this shows the count above measures the hints.
  const { leader, follower } = DIVERGED();
  const r = repairOnce(leader, follower, {}, false);
  assert.ok(r.repaired);
  assert.ok(r.rejections > 100, `${r.rejections} rejections without hints`);
});

test("Figure 8: a leader does not commit an old term's entry by counting replicas", () => {
  // a led term 2 and wrote entry 2 (term 2) to itself and b only; e led term 3 and wrote
  // its own entry 2 that nobody else got. Now a leads term 4 and copies entry 2 to c: it is
  // on a majority (a, b, c) but from term 2, so counting replicas must not commit it (e
  // could still win term 5 with c's and d's votes and overwrite it). It commits only once
  // an entry of term 4 is on a majority.
  const base = entries(1, [1]);
  const e2 = entries(2, [2]);
  const c = new MiniCluster(['a', 'b', 'c', 'd', 'e'], {
    cfg: { maxMsgBytes: 1 },
    nodes: {
      a: { initial: { hardState: { term: 3, vote: null, commit: 1 }, entries: [...base, ...e2] } },
      b: { initial: { hardState: { term: 3, vote: null, commit: 1 }, entries: [...base, ...e2] } },
      c: { initial: { hardState: { term: 3, vote: null, commit: 1 }, entries: base } },
      d: { initial: { hardState: { term: 3, vote: null, commit: 1 }, entries: base } },
      e: { initial: { hardState: { term: 3, vote: null, commit: 1 }, entries: [...base, ...entries(2, [3])] } },
    },
  });
  // a's appends reach b and c with entry 2 only (never the term-4 no-op); d and e get none.
  c.filter = (m) => {
    if (m.from !== 'a' || m.type !== 'app') return true;
    if (m.to !== 'b' && m.to !== 'c') return false;
    return { ...m, entries: (m.entries ?? []).filter((e) => e.index <= 2) };
  };
  const a = c.elect('a');
  assert.equal(a.term, 4);
  assert.equal(a.log.term(3), 4, 'the no-op of term 4');
  assert.equal(c.node('c').log.term(2), 2, 'entry 2 (term 2) is now on a, b and c');
  const seen = Object.fromEntries(a.progress().map((p) => [p.id, p.match]));
  assert.equal(seen['b'], 2);
  assert.equal(seen['c'], 2);
  assert.equal(a.log.committed, 1, 'a majority holds entry 2, yet it is not committed');
  c.filter = null;
  c.tick(3);
  assert.equal(a.role, 'leader');
  assert.ok(a.log.committed >= 3, 'committed with the term-4 no-op');
  assert.equal(c.node('e').log.term(2), 2, "e's stale entry 2 was overwritten");
});

test('a new commit index rides on the next append; with none to send, it goes out on the next tick', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  c.sent.length = 0;
  assert.ok(a.propose(enc('x')).ok);
  c.deliverAll();
  assert.deepEqual(c.appliedData('a'), ['x'], 'the leader commits and applies');
  assert.deepEqual(c.appliedData('b'), [], 'the followers have not been told yet');
  assert.equal(c.sent.filter((m) => m.type === 'app' && m.from === 'a' && (m.entries?.length ?? 0) === 0).length, 0, 'no empty append per commit');
  assert.ok(a.propose(enc('y')).ok);
  c.deliverAll();
  assert.deepEqual(c.appliedData('b'), ['x'], 'the append of y carried the commit of x');
  c.tick(1);
  assert.deepEqual(c.appliedData('b'), ['x', 'y']);
  assert.deepEqual(c.appliedData('c'), ['x', 'y']);
});
