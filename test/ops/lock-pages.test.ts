// The status page's lock table with 10,000 locks: served in pages from the node's own
// machine, in name order, with each holder's session TTL. In process (no cluster needed):
// this is about the paging, not the replication.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LockMachine } from '../../src/lockfsm/index.js';
import type { NodeInternals } from '../../src/server/ops/index.js';
import { NodeView } from '../../src/server/ops/node-view.js';
import { PeerRtt } from '../../src/server/ops/peer-rtt.js';

const LOCKS = 10_000;
const SESSIONS = 10;

function machineWithLocks(): LockMachine {
  const m = new LockMachine();
  let index = 0;
  const sessions: number[] = [];
  for (let s = 0; s < SESSIONS; s++) {
    m.apply(++index, { type: 'openSession', ttlMs: 5_000 + s * 1_000 });
    sessions.push(index);
  }
  const seq = new Map<number, number>();
  for (let i = 0; i < LOCKS; i++) {
    const session = sessions[i % SESSIONS]!;
    const n = (seq.get(session) ?? 0) + 1;
    seq.set(session, n);
    const r = m.apply(++index, { type: 'acquire', session, seq: n, ackedSeq: n - 1, name: `job/${String(i).padStart(5, '0')}`, mode: 'exclusive', wait: false });
    assert.equal(r.result.type, 'granted');
  }
  // One lock with a queue behind it.
  const s1 = sessions[1]!;
  m.apply(++index, { type: 'acquire', session: s1, seq: (seq.get(s1) ?? 0) + 1, ackedSeq: seq.get(s1) ?? 0, name: 'job/00000', mode: 'exclusive', wait: true });
  return m;
}

function viewOf(m: LockMachine): NodeView {
  // NodeView.locks reads only the id, the machine and the leader's lease deadlines.
  const internals = { id: 'n1', machine: () => m, leaseLeftMs: () => null } as unknown as NodeInternals;
  return new NodeView(internals, new PeerRtt(() => 0, () => {}));
}

test('lock pages: 10,000 locks page in name order with holder TTLs and waiters', (t) => {
  const m = machineWithLocks();
  const view = viewOf(m);

  let started = performance.now();
  const p0 = view.locks('', 0, 50);
  t.diagnostic(`first page of ${LOCKS}: ${(performance.now() - started).toFixed(1)} ms (full listing)`);
  assert.equal(p0.total, LOCKS);
  assert.equal(p0.rows.length, 50);
  assert.equal(p0.rows[0]!.name, 'job/00000');
  assert.equal(p0.rows[0]!.waiters, 1);
  assert.equal(p0.rows[0]!.nextWaiters[0]!.session, 2);
  assert.equal(p0.rows[0]!.holders[0]!.ttlMs, 5_000);
  assert.equal(p0.rows[1]!.holders[0]!.ttlMs, 6_000);
  assert.equal(p0.appliedIndex, m.appliedIndex);

  started = performance.now();
  const last = view.locks('', LOCKS - 20, 50);
  t.diagnostic(`a later page at the same applied index: ${(performance.now() - started).toFixed(2)} ms (cached listing)`);
  assert.deepEqual(last.rows.map((r) => r.name), Array.from({ length: 20 }, (_, i) => `job/${String(LOCKS - 20 + i).padStart(5, '0')}`));
  assert.equal(view.locks('', LOCKS, 50).rows.length, 0);

  const filtered = view.locks('job/099', 0, 500);
  assert.equal(filtered.total, 100);
  assert.equal(filtered.rows[0]!.name, 'job/09900');

  // A change (a new applied index) shows on the next page: session 1 expires, and its
  // locks stay held back by lock-delay (the machine's default), waiter still queued.
  m.apply(m.appliedIndex + 1, { type: 'expireSession', session: 1 });
  const after = view.locks('', 0, 1);
  assert.equal(after.total, m.stats().locks);
  assert.equal(after.rows[0]!.holders.length, 0);
  assert.equal(after.rows[0]!.delayed, true);
  assert.equal(after.rows[0]!.lockDelayMs, 15_000);
  assert.equal(after.rows[0]!.waiters, 1);
});
