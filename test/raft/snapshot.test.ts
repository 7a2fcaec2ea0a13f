// Snapshots: a follower too far behind receives the leader's snapshot in chunks, installs
// it, and continues from the log; a restart resumes from the snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MiniCluster, enc, entries } from './harness.js';
import type { Message } from '../../src/raft/index.js';

function bigState(n: number): Uint8Array {
  return enc(Array.from({ length: n }, (_, i) => `state-${i}`).join(','));
}

test('a follower far behind gets the snapshot in chunks and catches up from the log', () => {
  const c = new MiniCluster(['a', 'b', 'c'], { cfg: { snapshotChunkBytes: 100 } });
  const a = c.elect('a');
  c.down.add('c');
  for (let i = 0; i < 50; i++) a.propose(enc(`e${i}`));
  c.deliverAll();
  const data = bigState(120); // ~1.3 KB: 14 chunks of 100 bytes
  const snap = c.compact('a', data);
  assert.equal(a.log.snapshotIndex, snap.meta.index);
  a.propose(enc('after-snap'));
  c.deliverAll();
  c.down.delete('c');
  c.sent.length = 0;
  c.tick(5);
  const chunks = c.sent.filter((m): m is Message & { snapshot: NonNullable<Message['snapshot']> } => m.type === 'snap' && m.to === 'c');
  assert.equal(chunks.length, Math.ceil(data.length / 100), 'one message per chunk, no more');
  for (const m of chunks) assert.ok(m.snapshot.data.length <= 100);
  assert.deepEqual(chunks.map((m) => m.snapshot.offset), chunks.map((_, i) => i * 100));
  assert.equal(chunks.filter((m) => m.snapshot.done).length, 1);
  // c installed exactly the leader's snapshot, then applied what follows it.
  const got = c.snapshots.get('c')!;
  assert.equal(got.length, 1);
  assert.deepEqual(got[0]!.data, data);
  assert.deepEqual(got[0]!.meta, snap.meta);
  assert.deepEqual(c.appliedData('c'), ['after-snap']);
  const cc = c.node('c');
  assert.equal(cc.log.lastIndex(), a.log.lastIndex());
  assert.equal(cc.log.committed, a.log.committed);
});

test('lost chunks are resent; the transfer completes', () => {
  const c = new MiniCluster(['a', 'b', 'c'], { cfg: { snapshotChunkBytes: 64 } });
  const a = c.elect('a');
  c.down.add('c');
  for (let i = 0; i < 20; i++) a.propose(enc(`e${i}`));
  c.deliverAll();
  const data = bigState(60);
  c.compact('a', data);
  c.down.delete('c');
  let n = 0;
  c.filter = (m) => !(m.type === 'snap' && ++n % 3 === 0); // every third chunk is lost
  c.tick(40);
  assert.equal(c.snapshots.get('c')!.length, 1);
  assert.deepEqual(c.snapshots.get('c')![0]!.data, data);
  assert.equal(c.node('c').log.lastIndex(), a.log.lastIndex());
});

test('a restarted node resumes from its snapshot and re-applies only what follows', () => {
  const c = new MiniCluster(['a', 'b', 'c']);
  const a = c.elect('a');
  for (let i = 0; i < 10; i++) a.propose(enc(`e${i}`));
  c.settle();
  c.compact('b', enc('b-state'));
  const at = c.node('b').log.snapshotIndex;
  a.propose(enc('tail'));
  c.settle();
  c.tick(1);
  c.crash('b');
  c.applied.set('b', []);
  const b = c.restart('b');
  assert.equal(b.log.snapshotIndex, at);
  assert.equal(b.snapshot?.meta.index, at);
  c.tick(2);
  assert.deepEqual(c.appliedData('b'), ['tail'], 'entries up to the snapshot are not applied again');
  assert.equal(b.log.applied, a.log.committed);
});

test("a follower that already holds the snapshot's last entry acknowledges only what it verified", () => {
  // Figure 13, rule 6: the follower keeps its entries after the snapshot's last one, but it
  // has not checked them against the leader's log, so it must not report them as matching.
  // Here they are stale (term 2) where the leader has term 3 entries: the leader would count
  // this follower for entries it does not hold.
  const common = entries(1, [1, 1, 1, 1, 1]);
  const c = new MiniCluster(['b'], { conf: { voters: ['a', 'b', 'c'], learners: [] }, nodes: {
    b: { initial: { hardState: { term: 3, vote: null, commit: 2 }, applied: 2, entries: [...common, ...entries(6, [2, 2, 2, 2])] } },
  } });
  const b = c.node('b');
  b.step({
    type: 'snap',
    from: 'a',
    to: 'b',
    term: 3,
    snapshot: { meta: { index: 5, term: 1, conf: { voters: ['a', 'b', 'c'], learners: [] } }, offset: 0, total: 2, data: enc('s5'), done: true },
  });
  c.flushReady();
  const resp = c.sent.filter((m) => m.from === 'b' && m.type === 'appResp').at(-1)!;
  assert.equal(resp.reject, undefined);
  assert.equal(resp.index, 5, `acknowledged up to ${resp.index}, but only index 5 is known to match`);
  assert.equal(b.log.committed, 5);
  assert.equal(b.log.lastIndex(), 9, 'the entries after the snapshot are kept (rule 6)');
  assert.deepEqual(c.snapshots.get('b'), [], 'nothing to install: the log already has it');
  assert.deepEqual(c.appliedData('b'), ['t1-3', 't1-4', 't1-5']);
});

test('the leader keeps a window of chunks in flight, not one chunk per round trip', () => {
  const c = new MiniCluster(['a', 'b', 'c'], { cfg: { snapshotChunkBytes: 100 } });
  const a = c.elect('a');
  c.down.add('c');
  for (let i = 0; i < 20; i++) a.propose(enc(`e${i}`));
  c.deliverAll();
  const data = bigState(120); // 14 chunks of 100 bytes
  c.compact('a', data);
  c.down.delete('c');
  c.hold = (m) => m.type === 'snapResp'; // no acknowledgement reaches the leader yet
  c.sent.length = 0;
  c.tick(1);
  c.deliverAll();
  const sent = () => c.sent.filter((m) => m.type === 'snap' && m.to === 'c').map((m) => m.snapshot!.offset);
  assert.deepEqual(sent(), [0, 100, 200, 300], 'four chunks before any acknowledgement');
  c.hold = null;
  c.release();
  c.deliverAll();
  assert.equal(c.snapshots.get('c')?.length, 1, 'the acknowledgements move the window to the end');
  assert.deepEqual(c.snapshots.get('c')![0]!.data, data);
  assert.equal(new Set(sent()).size, sent().length, 'no chunk sent twice without a loss');
});
