// ReadIndex (thesis §6.4): a read is served at the leader's commit index only after a
// heartbeat round started after the read arrived is acknowledged by a majority.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster, enc, dec } from './harness.js';

test('a read is served only once a heartbeat round confirms the leadership', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.elect('a');
  l.propose(enc('w1'));
  c.deliverAll();
  const commit = l.log.committed;
  // Hold every heartbeat acknowledgement: the read must wait for them.
  c.hold = (m) => m.type === 'heartbeatResp';
  l.readIndex(enc('r1'));
  c.deliverAll();
  assert.equal(c.readStates.get('a')!.length, 0, 'not served before a majority answered');
  const hbs = c.sent.filter((m) => m.type === 'heartbeat' && m.context && dec(m.context) === 'r1');
  assert.equal(hbs.length, 2, 'a heartbeat carrying the read went to each follower');
  // One acknowledgement (plus the leader itself) is a majority of three.
  c.hold = null;
  c.queue.push(c.held.shift()!);
  c.deliverAll();
  const rs = c.readStates.get('a')!;
  assert.equal(rs.length, 1);
  assert.equal(dec(rs[0]!.context), 'r1');
  assert.equal(rs[0]!.index, commit);
});

test("a deposed leader's read is not served", () => {
  // Without CheckQuorum the cut-off leader keeps believing it leads for as long as it likes:
  // ReadIndex alone must keep it from serving a stale read.
  const c = new MiniCluster(['a', 'b', 'c'], { seed: 2, cfg: { checkQuorum: false } });
  const a = c.elect('a');
  c.isolate('a');
  // A new leader is elected on the other side and commits a write.
  c.tickUntil(() => c.node('b').role === 'leader' || c.node('c').role === 'leader', 100);
  const nl = c.leader()!;
  assert.notEqual(nl.id, 'a');
  nl.propose(enc('newer'));
  c.deliverAll();
  const newer = nl.log.committed;
  // The old leader, unaware, gets a read. Its commit index is older than `newer`; it cannot
  // confirm its leadership, so it must not answer.
  assert.equal(a.role, 'leader');
  assert.ok(a.log.committed < newer);
  a.readIndex(enc('stale'));
  c.tick(30);
  assert.equal(a.role, 'leader');
  assert.equal(c.readStates.get('a')!.length, 0);
  // Back in touch, it learns of the new term, steps down and drops the read.
  c.heal();
  c.tick(3);
  assert.notEqual(a.role, 'leader');
  assert.equal(c.readStates.get('a')!.length, 0);
  assert.deepEqual(c.dropped.get('a')!.map(dec), ['stale']);
});

test('with CheckQuorum the cut-off leader steps down and drops its pending read', () => {
  const c = new MiniCluster(['a', 'b', 'c'], 2);
  const a = c.elect('a');
  c.isolate('a');
  a.readIndex(enc('cut'));
  c.tick(10);
  assert.notEqual(a.role, 'leader');
  assert.equal(c.readStates.get('a')!.length, 0);
  assert.deepEqual(c.dropped.get('a')!.map(dec), ['cut']);
});

test('a new leader serves reads only after an entry of its term commits', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  // Hold a's appends so that its no-op cannot commit yet.
  c.hold = (m) => m.type === 'app' && m.from === 'a';
  const a = c.elect('a');
  const noop = a.log.lastIndex();
  assert.ok(a.log.committed < noop);
  a.readIndex(enc('early'));
  c.deliverAll();
  assert.equal(c.readStates.get('a')!.length, 0);
  c.hold = null;
  c.release();
  c.deliverAll();
  c.tick(1);
  const rs = c.readStates.get('a')!;
  assert.equal(rs.length, 1);
  assert.ok(rs[0]!.index >= noop, 'the read index covers the no-op, hence every earlier commit');
});

test('a follower forwards a read to the leader and gets the read index back', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const l = c.elect('a');
  l.propose(enc('w'));
  c.deliverAll();
  c.tick(1);
  const b = c.node('b');
  b.readIndex(enc('fr'));
  c.deliverAll();
  const rs = c.readStates.get('b')!;
  assert.equal(rs.length, 1);
  assert.equal(rs[0]!.index, l.log.committed);
  assert.ok(b.log.applied >= rs[0]!.index || b.log.committed >= rs[0]!.index);
});

test('a read on a node that knows no leader is dropped at once', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  c.node('a').readIndex(enc('nobody'));
  c.flushReady();
  assert.deepEqual(c.dropped.get('a')!.map(dec), ['nobody']);
});
