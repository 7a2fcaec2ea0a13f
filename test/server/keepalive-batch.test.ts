// A follower's keepalive batches in process: which keepalives travel together, and what
// each client is answered from the leader's answer to the batch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeepAliveBatcher, keepAliveAnswer } from '../../src/server/replication/keepalive-batch.js';
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

/** One keepalive through the batcher, answered as the node answers it. */
const renew = async (b: KeepAliveBatcher, session: number, gone: () => boolean) => keepAliveAnswer(await b.renewMany([session], gone), session);

test('keepalives that arrive within one window travel in one batch, each answered from its own slot', async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map((s) => (s === 2 ? null : s * 1_000)) } }));
  const answers = await Promise.all([1, 2, 3].map((s) => renew(b, s, stillHere)));
  assert.deepEqual(sent.map((x) => x.sessions), [[1, 2, 3]]);
  assert.deepEqual(answers, [
    { ok: true, result: { ttlMs: 1_000 } },
    { ok: false, error: { code: 'UNKNOWN_SESSION', message: 'session 2 is not open (never opened, closed or expired)' } },
    { ok: true, result: { ttlMs: 3_000 } },
  ]);
  assert.equal(b.batches, 1);
  assert.equal(b.batched, 3);
  const later = await renew(b, 4, stillHere);
  assert.deepEqual(later, { ok: true, result: { ttlMs: 4_000 } });
  assert.equal(sent.length, 2, 'a keepalive after the batch left starts the next one');
});

test("a refused batch is every keepalive's refusal, and an answer too short is INTERNAL, never a renewal", async () => {
  const refused = batcher(() => fail('UNAVAILABLE', 'no leader'));
  const r = await Promise.all([1, 2].map((s) => renew(refused.b, s, stillHere)));
  assert.deepEqual(r.map((a) => (a.ok ? 'ok' : a.error.code)), ['UNAVAILABLE', 'UNAVAILABLE']);
  const short = batcher(() => ({ ok: true, result: { ttls: [5_000] } }));
  const s = await Promise.all([1, 2].map((x) => renew(short.b, x, stillHere)));
  // A misshapen answer is trusted for none of its batch (the first slot is no more credible).
  assert.deepEqual(s.map((a) => (a.ok ? 'ok' : a.error.code)), ['INTERNAL', 'INTERNAL']);
});

test('a full batch leaves at once, without waiting for its window', async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map(() => 1) } }), 3_600_000);
  const all = Array.from({ length: MAX_LEASE_BATCH }, (_, i) => renew(b, i + 1, stillHere));
  assert.equal(sent.length, 1, 'sent on the last keepalive that filled it');
  assert.equal(sent[0]!.sessions.length, MAX_LEASE_BATCH);
  await Promise.all(all);
});

test("a batch counts as gone only when every one of its clients has left", async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map(() => 1) } }));
  let secondGone = false;
  await Promise.all([renew(b, 1, () => true), renew(b, 2, () => secondGone)]);
  assert.equal(sent[0]!.gone(), false);
  secondGone = true;
  assert.equal(sent[0]!.gone(), true);
});

test('stopping answers the keepalives not yet sent', async () => {
  const { b, sent } = batcher(() => assert.fail('nothing is sent after stop'), 3_600_000);
  const pending = renew(b, 1, stillHere);
  b.stop();
  const a = await pending;
  assert.equal(a.ok ? null : a.error.code, 'UNAVAILABLE');
  assert.equal(sent.length, 0);
});

test("a client's keepAlives frame joins the window's batch with the single keepalives, each answered its own slice", async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map((s) => (s === 12 ? null : s)) } }));
  const [one, many, two] = await Promise.all([renew(b, 1, stillHere), b.renewMany([11, 12, 13], stillHere), renew(b, 2, stillHere)]);
  assert.deepEqual(sent.map((x) => x.sessions), [[1, 11, 12, 13, 2]], 'one batch for the window');
  assert.deepEqual(one, { ok: true, result: { ttlMs: 1 } });
  assert.deepEqual(many, { ok: true, result: { ttls: [11, null, 13] } });
  assert.deepEqual(two, { ok: true, result: { ttlMs: 2 } });
  assert.equal(b.batched, 5);
});

test('a frame that would take the batch past MAX_LEASE_BATCH sends the batch first; none is ever longer', async () => {
  const { b, sent } = batcher((sessions) => ({ ok: true, result: { ttls: sessions.map(() => 1) } }), 3_600_000);
  const frame = (from: number) => Array.from({ length: 1_000 }, (_, i) => from + i);
  const pending = Array.from({ length: MAX_LEASE_BATCH / 1_000 + 2 }, (_, k) => b.renewMany(frame(1 + k * 1_000), stillHere));
  pending.push(b.renewMany([], stillHere));
  b.stop(); // answers what is left unsent
  const answers = await Promise.all(pending);
  assert.ok(sent.length >= 1);
  for (const s of sent) assert.ok(s.sessions.length <= MAX_LEASE_BATCH, `a batch of ${s.sessions.length}`);
  assert.equal(sent[0]!.sessions.length, MAX_LEASE_BATCH, 'the full batch left as soon as it was full');
  assert.deepEqual(answers.at(-1), { ok: true, result: { ttls: [] } });
  const sentCount = sent.reduce((n, s) => n + s.sessions.length, 0);
  const acked = answers.filter((a) => a.ok).reduce((n, a) => n + (a.ok ? a.result.ttls.length : 0), 0);
  assert.equal(acked, sentCount, 'every session sent is answered, and only those');
});
