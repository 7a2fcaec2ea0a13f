// Guarded operations end to end (issue 14), with real processes against a real cluster:
// lock.once and an API that de-duplicates by idempotency key (the payment story), and a
// fenced put from a holder paused past its TTL.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { TestCluster } from '../support/cluster.js';
import { runPaymentStory } from '../../examples/payment/story.js';
import { LockClient } from '../../src/client/index.js';

let c: TestCluster;
before(async () => {
  c = await TestCluster.started();
});
after(() => c?.stop());

test('payment: a holder paused after charging is fenced out; the retry with the same key charges nothing more', async () => {
  const lines: string[] = [];
  const out = await runPaymentStory(c.endpoints, { ttlMs: 2000, lock: 'e2e/order-42', opKey: 'charge-42', log: (l) => lines.push(l) });
  const story = `\n${lines.join('\n')}`;

  // Exactly one charge, although the API was asked twice (by A, then by B with A's key).
  assert.equal(out.charges.charges.length, 1, `one charge${story}`);
  assert.equal(out.charges.requests, 2, `the API saw A's request and B's retry${story}`);
  const [charge] = out.charges.charges;
  assert.equal(charge!.idempotencyKey, out.aCharged.idempotencyKey);
  assert.equal(charge!.id, out.aCharged.chargeId);
  assert.equal(out.aCharged.replayed, false);

  // B: the default policy reports the attempt in doubt; retry-same-key reuses A's key.
  assert.ok(out.tokenB > out.tokenA, `B's token is larger${story}`);
  assert.deepEqual(out.bDefault, {
    name: 'InDoubtError',
    code: 'IN_DOUBT',
    idempotencyKey: out.aCharged.idempotencyKey,
    attempt: 1,
    token: out.tokenA,
  });
  assert.equal(out.bReceipt.idempotencyKey, out.aCharged.idempotencyKey, 'the same key');
  assert.equal(out.bReceipt.replayed, true, 'the API answered with the earlier charge');
  assert.equal(out.bReceipt.chargeId, out.aCharged.chargeId);
  assert.equal(out.bReceipt.recordedBy, 'B');

  // A was told it lost the lock when it tried to record its result.
  assert.equal(out.aEnd.event, 'error', `A's completion was refused${story}`);
  assert.equal(out.aEnd.name, 'LockLostError');
  assert.equal(out.aEnd.code, 'LOCK_LOST');
  assert.equal(out.aEnd.signalAborted, true);

  // B's result is the recorded one: a later once returns it without running anything.
  assert.equal(out.later.fnRan, false);
  assert.deepEqual(out.later.receipt, out.bReceipt);
});

test('a fenced put from a holder paused past its TTL is refused; the key keeps the new holder value', async () => {
  const name = 'e2e/kv-lock';
  const key = 'e2e/kv/report';
  const holder = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./kv-holder.ts', import.meta.url)), c.endpoints.join(','), name, '1500', key],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const r = await lines.next();
    if (r.done) throw new Error('the holder exited early');
    return JSON.parse(r.value) as Record<string, unknown>;
  };
  const b = await LockClient.connect({ endpoints: c.endpoints });
  try {
    const acquired = await next();
    assert.equal(acquired['event'], 'acquired');
    const tokenA = acquired['token'] as number;
    holder.kill('SIGSTOP');

    const lockB = await b.acquire(name); // granted once A's session expires
    assert.ok(lockB.token > tokenA);
    const written = await lockB.put(key, 'B');

    holder.kill('SIGCONT');
    holder.stdin.write('put\n');
    assert.equal((await next())['event'], 'resumed');
    const viaHandle = await next();
    assert.equal(viaHandle['ok'], false, 'the handle refused the late put');
    assert.equal(viaHandle['name'], 'LockLostError');
    const bare = await next();
    assert.equal(bare['ok'], false, 'the cluster refused the late put');
    assert.equal(bare['code'], 'FENCED');
    assert.equal(bare['currentToken'], lockB.token, 'FENCED names the current holder token');

    const entry = await b.kvGet(key);
    assert.equal(new TextDecoder().decode(entry!.value), 'B');
    assert.equal(entry!.revision, written.revision, 'nothing was written after B');
    await lockB.release();
  } finally {
    if (holder.exitCode === null) {
      holder.kill('SIGCONT');
      holder.kill('SIGKILL');
    }
    await b.close();
  }
});
