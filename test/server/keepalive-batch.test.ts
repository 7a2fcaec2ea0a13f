// A follower's keepalive batches in process: which keepalives travel together, and what
// each client is answered from the leader's answer to the batch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeepAliveBatcher } from '../../src/server/replication/keepalive-batch.js';
import { MAX_LEASE_BATCH } from '../../src/server/replication/lease-batch.js';
import type { LeaseAnswer } from '../../src/server/replication/lease-batch.js';
import { fail } from '../../src/server/api/wire.js';

function batcher(answerWith: (sessions: readonly number[]) => LeaseAnswer | Promise<LeaseAnswer>, windowMs = 1) {
  const sent: { sessions: number[]; gone: () => boolean }[] = [];
  const b = new KeepAliveBatcher(async (sessions, gone) => {
    sent.push({ sessions: [...sessions], gone });
    return answerWith(sessions);
  }, windowMs);
  return { b, sent };
}

const stillHere = (): boolean => false;

test('keepalives that arrive within one window travel in one batch, each answered from its own slot', async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map((s) => (s === 2 ? null : s * 1_000)) } }));
  const answers = await Promise.all([1, 2, 3].map((s) => b.renew(s, stillHere)));
  assert.deepEqual(sent.map((x) => x.sessions), [[1, 2, 3]]);
  assert.deepEqual(answers, [
    { ok: true, result: { ttlMs: 1_000 } },
    { ok: false, error: { code: 'UNKNOWN_SESSION', message: 'session 2 is not open (never opened, closed or expired)' } },
    { ok: true, result: { ttlMs: 3_000 } },
  ]);
  assert.equal(b.batches, 1);
  assert.equal(b.batched, 3);
  const later = await b.renew(4, stillHere);
  assert.deepEqual(later, { ok: true, result: { ttlMs: 4_000 } });
  assert.equal(sent.length, 2, 'a keepalive after the batch left starts the next one');
});

test("a refused batch is every keepalive's refusal, and an answer too short is INTERNAL, never a renewal", async () => {
  const refused = batcher(() => fail('UNAVAILABLE', 'no leader'));
  const r = await Promise.all([1, 2].map((s) => refused.b.renew(s, stillHere)));
  assert.deepEqual(r.map((a) => (a.ok ? 'ok' : a.error.code)), ['UNAVAILABLE', 'UNAVAILABLE']);
  const short = batcher(() => ({ ok: true, result: { ttls: [5_000] } }));
  const s = await Promise.all([1, 2].map((x) => short.b.renew(x, stillHere)));
  assert.deepEqual(s.map((a) => (a.ok ? 'ok' : a.error.code)), ['ok', 'INTERNAL']);
});

test('a full batch leaves at once, without waiting for its window', async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map(() => 1) } }), 3_600_000);
  const all = Array.from({ length: MAX_LEASE_BATCH }, (_, i) => b.renew(i + 1, stillHere));
  assert.equal(sent.length, 1, 'sent on the last keepalive that filled it');
  assert.equal(sent[0]!.sessions.length, MAX_LEASE_BATCH);
  await Promise.all(all);
});

test("a batch counts as gone only when every one of its clients has left", async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map(() => 1) } }));
  let secondGone = false;
  await Promise.all([b.renew(1, () => true), b.renew(2, () => secondGone)]);
  assert.equal(sent[0]!.gone(), false);
  secondGone = true;
  assert.equal(sent[0]!.gone(), true);
});

test('stopping answers the keepalives not yet sent', async () => {
  const { b, sent } = batcher(() => assert.fail('nothing is sent after stop'), 3_600_000);
  const pending = b.renew(1, stillHere);
  b.stop();
  const a = await pending;
  assert.equal(a.ok ? null : a.error.code, 'UNAVAILABLE');
  assert.equal(sent.length, 0);
});
