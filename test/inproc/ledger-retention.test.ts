// The leader prunes the operation ledger after its retention: a completed operation answers
// `done` until then, and is forgotten afterwards (a new beginOp starts a new operation).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';
import { RawSession } from '../support/raw-client.js';

let c: InProcessCluster;
before(async () => {
  c = await InProcessCluster.start({ extraConfig: { ledger: { retentionMs: 1000, abandonedAfterMs: 1000 } } });
});
after(() => c?.stop());

test('a completed operation is answered done, then pruned once its retention has passed', async () => {
  const client = await c.rawClient(c.endpoints[0]!);
  try {
    const s = await RawSession.open(client, 30_000);
    const g = await s.call({ op: 'acquire', name: 'ledger/lock', mode: 'exclusive', wait: false });
    assert.ok(g.ok);
    const fence = { lock: 'ledger/lock', token: g.result.token };
    const begin = await s.call({ op: 'beginOp', opKey: 'op-1', fence });
    assert.ok(begin.ok);
    assert.equal(begin.result.status, 'run');
    const done = await s.call({ op: 'completeOp', opKey: 'op-1', result: Buffer.from('receipt'), fence });
    assert.ok(done.ok, JSON.stringify(done));
    const again = await s.call({ op: 'beginOp', opKey: 'op-1', fence });
    assert.ok(again.ok);
    assert.equal(again.result.status, 'done');
    assert.equal(Buffer.from(again.result.result).toString(), 'receipt');
    await until(async () => {
      const r = await s.call({ op: 'beginOp', opKey: 'op-1', fence });
      return r.ok && r.result.status === 'run';
    }, 15_000, 'the leader to prune the completed operation');
  } finally {
    client.close();
  }
});
