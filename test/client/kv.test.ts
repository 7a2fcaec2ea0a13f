import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KvChange } from '../../src/client/index.js';
import { FencedError, InDoubtError, LockLostError } from '../../src/client/index.js';
import { err, FakeCluster } from './fake-cluster.js';
import { until } from './fake-clock.js';

const text = (b: Uint8Array | null | undefined): string | null => (b ? new TextDecoder().decode(b) : null);

test('put, kvGet and delete; a lock fences writes', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const c = await cluster.client();
  const { revision } = await c.put('k', 'v1');
  const entry = await c.kvGet('k');
  assert.equal(text(entry?.value), 'v1');
  assert.equal(entry?.revision, revision);
  assert.deepEqual(await c.delete('k'), { existed: true, revision: cluster.index });
  assert.equal(await c.kvGet('k'), null);

  const lock = await c.acquire('guard');
  await lock.put('fenced', new Uint8Array([1, 2]));
  assert.deepEqual(cluster.requests('put').at(-1)!.fence, { lock: 'guard', token: lock.token });
  await c.put('fenced2', 'x', { fence: lock });
  // The lock moves on to another client: a fenced write with the old token is refused.
  await lock.release();
  await (await cluster.client()).acquire('guard');
  await assert.rejects(c.put('k', 'v', { fence: { lock: 'guard', token: lock.token } }), FencedError);
});

test('a handle whose fenced write is refused is lost', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const c = await cluster.client();
  const lock = await c.acquire('g');
  cluster.nodes[0]!.intercept = (req) => (req.op === 'put' ? err('FENCED', 'stale', { currentToken: lock.token + 5 }) : undefined);
  await assert.rejects(lock.put('k', 'v'), LockLostError);
  assert.equal(lock.signal.aborted, true);
  assert.ok((lock.signal.reason as LockLostError).cause instanceof FencedError);
});

test('lock.once runs fn once and records its result; a later holder gets the result', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const c = await cluster.client();
  let runs = 0;
  const lock = await c.acquire('l');
  const keys: string[] = [];
  const r1 = await lock.once('charge-42', (key, signal) => {
    runs++;
    keys.push(key);
    assert.equal(signal, lock.signal);
    return { charged: 10 };
  });
  assert.deepEqual(r1, { charged: 10 });
  assert.deepEqual(cluster.requests('completeOp')[0]!.fence, { lock: 'l', token: lock.token });
  await lock.release();
  const next = await c.acquire('l');
  const r2 = await next.once('charge-42', () => {
    runs++;
    return { charged: 99 };
  });
  assert.deepEqual(r2, { charged: 10 }, 'the recorded result');
  assert.equal(runs, 1);
  assert.equal(keys.length, 1);
  assert.match(keys[0]!, /^charge-42@\d+$/, 'the machine names the key after the op and the entry that began it');
});

test('an in-doubt operation throws InDoubtError, or runs again with the same key when asked', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const c = await cluster.client();
  const first = await c.acquire('m');
  // The first holder begins and is lost before completing.
  await assert.rejects(
    first.once('op', async () => {
      cluster.expire(c.sessionId!);
      await until(() => first.signal.aborted, 'first holder lost');
      return 1;
    }),
    LockLostError,
  );
  const second = await c.acquire('m');
  let inDoubtKey = '';
  await assert.rejects(second.once('op', () => 2), (e: unknown) => {
    assert.ok(e instanceof InDoubtError);
    assert.match(e.idempotencyKey, /^op@\d+$/);
    inDoubtKey = e.idempotencyKey;
    assert.equal(e.token, first.token);
    return true;
  });
  let usedKey = '';
  const result = await second.once(
    'op',
    (key) => {
      usedKey = key;
      return 3;
    },
    { inDoubt: 'retry-same-key' },
  );
  assert.equal(result, 3);
  assert.equal(usedKey, inDoubtKey, 'the same idempotency key');
  assert.equal(cluster.requests('beginOp').at(-1)!.retry, true);
});

test('watch streams changes under a prefix and fills the gap after a reconnect', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const writer = await cluster.client({ endpoints: [cluster.urls[1]!] });
  const reader = await cluster.client({ endpoints: [cluster.urls[0]!] });
  await writer.put('cfg/old', 'o');
  const watch = reader.watch('cfg/');
  await watch.ready;
  const seen: KvChange[] = [];
  void (async () => {
    for await (const change of watch) seen.push(change);
  })();
  await writer.put('cfg/a', '1');
  await writer.put('other', 'x');
  await until(() => seen.length === 1, 'first change');
  assert.equal(seen[0]!.key, 'cfg/a');
  assert.equal(text(seen[0]!.value), '1');

  // While the reader is reconnecting, cfg/a changes and cfg/old is deleted.
  let done = false;
  cluster.nodes[0]!.intercept = async (req) => {
    if (req.op === 'hello' && !done) {
      done = true;
      await writer.put('cfg/a', '2'); // the writer is on the other node
      await writer.delete('cfg/old');
    }
    return undefined;
  };
  cluster.nodes[0]!.dropConnections();
  await until(() => seen.length === 3, 'caught up');
  const caughtUp = seen.slice(1).sort((x, y) => x.key.localeCompare(y.key));
  assert.equal(caughtUp[0]!.key, 'cfg/a');
  assert.equal(text(caughtUp[0]!.value), '2');
  assert.deepEqual(caughtUp[1], { key: 'cfg/old', value: null, revision: 0 });
  watch.close();
});
