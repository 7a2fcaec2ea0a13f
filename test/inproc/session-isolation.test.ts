// Sessions belong to the token that opened them (issue 18, findings 3-5), against a 3-node
// in-process cluster with tokens scoped to disjoint prefixes (the gate and the lock machine
// decide; the transport only carries the frames). Session ids are log indexes, so a
// client can guess every one: the probes below are what a `jobs/` token tried against
// sessions of a `batch/` token. Each fails with a clear error, its refusal names nothing
// the prober may not see, and the victim's session keeps working.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { until } from '../support/cluster.js';
import { InProcessCluster } from '../support/in-process-cluster.js';
import type { Reply } from '../support/raw-client.js';
import { SCOPED_TOKENS, scopedAuthConfig } from '../support/scoped-tokens.js';

const TOKENS = SCOPED_TOKENS;

function refused(r: Reply, code: string, what: string): string {
  assert.ok(!r.ok, `${what}: expected ${code}, got ${JSON.stringify(r)}`);
  assert.equal(r.error.code, code, `${what}: ${r.error.message}`);
  return r.error.message;
}

describe('sessions belong to the token that opened them', () => {
  let c: InProcessCluster;

  before(async () => {
    c = await InProcessCluster.start({ config: { sessions: { maxSessionsPerToken: 20 }, ...scopedAuthConfig() } });
  });

  after(async () => {
    await c?.stop();
  });

  test('another token cannot attach, keep alive, close or write on a session, on any node; the victim keeps it', async () => {
    // The victim on one node, the prober on every node (followers forward to the leader).
    const batch = await c.wireClient(c.endpoints[0]!, TOKENS.batch);
    const probers = await Promise.all(c.endpoints.map((u) => c.wireClient(u, TOKENS.jobs)));
    try {
      const idle = await batch.openSession();
      const holding = await batch.openSession();
      const writer = await batch.openSession();
      const grant = await batch.sequenced(holding, { op: 'acquire', name: 'batch/ledger', mode: 'exclusive', wait: false });
      assert.ok(grant.ok && grant.result.status === 'granted');

      for (const jobs of probers) {
        for (const session of [idle, holding, writer]) {
          const probes: Record<string, unknown>[] = [
            { op: 'attach', session },
            { op: 'keepAlive', session },
            { op: 'closeSession', session, seq: 1 },
            { op: 'put', session, seq: Number.MAX_SAFE_INTEGER, key: 'jobs/x', value: new Uint8Array([1]) },
            { op: 'acquire', session, seq: 2, name: 'jobs/anything', mode: 'exclusive', wait: false },
            { op: 'cancelWait', session, seq: 3, name: 'jobs/anything' },
          ];
          for (const body of probes) {
            // Answered as a session that is not open: nothing tells the prober it exists.
            const message = refused(await jobs.call(body), 'UNKNOWN_SESSION', `${String(body.op)} on session ${session}`);
            assert.equal(message, `session ${session} is not open (never opened, closed or expired)`);
          }
          // A read of it is answered as a read of a session that is not open is: null.
          const info = await jobs.call({ op: 'sessionInfo', session });
          assert.ok(info.ok && info.result === null, `sessionInfo on session ${session}: ${JSON.stringify(info)}`);
        }
      }

      // The victim's sessions are untouched: the seq the prober tried did not poison them,
      // the idle one is still open, and each can still write, keep alive and close.
      assert.ok((await batch.call({ op: 'keepAlive', session: idle })).ok);
      const put = await batch.sequenced(writer, { op: 'put', key: 'batch/k', value: new Uint8Array([2]) });
      assert.ok(put.ok, JSON.stringify(put));
      const rel = await batch.sequenced(holding, { op: 'release', name: 'batch/ledger', token: grant.ok ? grant.result.token : 0 });
      assert.ok(rel.ok, JSON.stringify(rel));
      for (const s of [idle, holding, writer]) assert.ok((await batch.sequenced(s, { op: 'closeSession' })).ok, `close ${s}`);
    } finally {
      batch.close();
      for (const p of probers) p.close();
    }
  });

  test("keepAlives naming another token's sessions renews only the caller's own, and the victim's expire", async () => {
    // One frame, many sessions: each is judged as its own keepAlive would be. If the frame
    // skipped that check, a stranger could keep a crashed holder's session (and its locks)
    // alive for ever by naming it.
    const batch = await c.wireClient(c.endpoints[0]!, TOKENS.batch);
    const probers = await Promise.all(c.endpoints.map((u) => c.wireClient(u, TOKENS.jobs)));
    try {
      const victim = await batch.openSession(1_000);
      const own = await probers[0]!.openSession(30_000);
      const unknown = victim + 1_000_000;
      let rounds = 0;
      await until(async () => {
        for (const jobs of probers) {
          const r = await jobs.call({ op: 'keepAlives', sessions: [victim, own, unknown] });
          assert.ok(r.ok, JSON.stringify(r));
          // Another token's session reads as one that is not open, as it does alone.
          assert.deepEqual((r.result as { ttls: unknown[] }).ttls, [null, 30_000, null]);
        }
        rounds++;
        const info = await batch.call({ op: 'sessionInfo', session: victim }); // (a read: renews nothing)
        return info.ok && info.result === null;
      }, 15_000, "the victim's session to expire while a stranger names it");
      assert.ok(rounds > 1, `${rounds} rounds`);
      assert.ok((await probers[0]!.sequenced(own, { op: 'closeSession' })).ok); // (the per-token cap test counts)
    } finally {
      batch.close();
      for (const p of probers) p.close();
    }
  });

  test('a seq far above the last one is refused, and the session goes on', async () => {
    const batch = await c.wireClient(c.endpoints[1]!, TOKENS.batch);
    try {
      const s = await batch.openSession();
      assert.ok((await batch.call({ op: 'put', session: s, seq: 1, key: 'batch/a', value: new Uint8Array([1]) })).ok);
      const far = await batch.call({ op: 'put', session: s, seq: Number.MAX_SAFE_INTEGER, key: 'batch/a', value: new Uint8Array([1]) });
      assert.match(refused(far, 'INVALID_ARGUMENT', 'seq 2^53-1'), /above its highest seq/);
      const acked = await batch.call({ op: 'put', session: s, seq: 5_000_000, ackedSeq: 4_999_999, key: 'batch/a', value: new Uint8Array([1]) });
      refused(acked, 'INVALID_ARGUMENT', 'a far seq with a far ackedSeq');
      assert.ok((await batch.call({ op: 'put', session: s, seq: 2, ackedSeq: 1, key: 'batch/a', value: new Uint8Array([3]) })).ok);
      assert.ok((await batch.call({ op: 'closeSession', session: s, seq: 3, ackedSeq: 2 })).ok);
    } finally {
      batch.close();
    }
  });

  test('a seq reused for a different command is refused, never answered with the first command\'s result', async () => {
    const batch = await c.wireClient(c.endpoints[2]!, TOKENS.batch);
    try {
      const holder = await batch.openSession();
      const s = await batch.openSession();
      assert.ok((await batch.call({ op: 'acquire', session: holder, seq: 1, name: 'batch/ledger', mode: 'exclusive', wait: false })).ok);
      const busy = await batch.call({ op: 'acquire', session: s, seq: 1, name: 'batch/ledger', mode: 'exclusive', wait: false });
      assert.ok(busy.ok && busy.result.status === 'busy' && busy.result.holders.length === 1);
      const reused = await batch.call({ op: 'acquire', session: s, seq: 1, name: 'batch/other', mode: 'exclusive', wait: false });
      assert.match(refused(reused, 'INVALID_ARGUMENT', 'seq 1 reused'), /different acquire/);
      const retry = await batch.call({ op: 'acquire', session: s, seq: 1, ackedSeq: 0, name: 'batch/ledger', mode: 'exclusive', wait: false });
      assert.ok(retry.ok && busy.ok);
      assert.deepEqual({ ...retry.result, index: 0 }, { ...busy.result, index: 0 }, 'a faithful retry gets the first answer');
    } finally {
      batch.close();
    }
  });

  test('one token cannot open more than sessions.maxSessionsPerToken; the others still can', async () => {
    const jobs = await c.wireClient(c.endpoints[1]!, TOKENS.jobs);
    const batch = await c.wireClient(c.endpoints[0]!, TOKENS.batch);
    try {
      const replies = await Promise.all(Array.from({ length: 30 }, () => jobs.fire({ op: 'openSession', ttlMs: 60_000 })));
      assert.equal(replies.filter((r) => r.ok).length, 20);
      for (const r of replies) if (!r.ok) assert.match(refused(r, 'LIMIT_EXCEEDED', 'over the per-token cap'), /sessions\.maxSessionsPerToken/);
      const s = await batch.openSession();
      assert.ok((await batch.sequenced(s, { op: 'closeSession' })).ok);
    } finally {
      jobs.close();
      batch.close();
    }
  });

  test('an admin token may close another token\'s session (eviction), but not use it', async () => {
    const batch = await c.wireClient(c.endpoints[0]!, TOKENS.batch);
    const ops = await c.wireClient(c.endpoints[2]!, TOKENS.ops);
    try {
      const s = await batch.openSession();
      refused(await ops.call({ op: 'keepAlive', session: s }), 'UNKNOWN_SESSION', 'admin keepAlive');
      refused(await ops.call({ op: 'put', session: s, seq: 1, key: 'batch/z', value: new Uint8Array([1]) }), 'UNKNOWN_SESSION', 'admin put');
      assert.ok((await ops.call({ op: 'closeSession', session: s, seq: 1 })).ok);
      refused(await batch.call({ op: 'keepAlive', session: s }), 'UNKNOWN_SESSION', 'the evicted session');
    } finally {
      batch.close();
      ops.close();
    }
  });
});
