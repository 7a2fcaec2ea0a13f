import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KvChange } from '../../src/client/index.js';
import { CompactedError, FencedError, InDoubtError, LockLostError, SessionExpiredError } from '../../src/client/index.js';
import { err, FakeCluster, type Answer, type FakeConn } from './fake-cluster.js';
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

test('watch streams changes under a prefix and resumes after a reconnect from its revision: the missed changes, each once', async (t) => {
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
  // In order, with the revisions of the entries that made them.
  assert.deepEqual(
    seen.slice(1).map((c) => [c.key, text(c.value), c.revision]),
    [
      ['cfg/a', '2', cluster.index - 1],
      ['cfg/old', null, cluster.index],
    ],
  );
  // (A revision seen from an event may have more changes to come: it is asked for again.)
  assert.equal(cluster.requests('watch').at(-1)!.fromRevision, seen[0]!.revision - 1, 'resumed from the revision it had reached');
  assert.equal(watch.revision, cluster.index);
  watch.close();
});

test('a change pushed before the watch answer that also covers it is yielded once', async (t) => {
  const cluster = await FakeCluster.forTest(t, 1);
  const writer = await cluster.client();
  const reader = await cluster.client();
  // The node subscribes the connection before it reads: a write in between is pushed first
  // and is in the answer too.
  cluster.nodes[0]!.intercept = async (req, conn) => {
    if (req.op !== 'watch') return undefined;
    cluster.subs.watches.add('p/', conn);
    await writer.put('p/early', 'e');
    return undefined;
  };
  const watch = reader.watch('p/', { includeExisting: true });
  await watch.ready;
  cluster.nodes[0]!.intercept = null;
  await writer.put('p/late', 'l');
  const seen: KvChange[] = [];
  for await (const c of watch) {
    seen.push(c);
    if (c.key === 'p/late') break;
  }
  assert.deepEqual(seen.map((c) => c.key), ['p/early', 'p/late']);
});

test('a txn of several keys is one revision; a resume in the middle of it yields the rest once', async (t) => {
  const cluster = await FakeCluster.forTest(t, 1);
  const writer = await cluster.client();
  const reader = await cluster.client();
  const watch = reader.watch('t/');
  await watch.ready;
  // The connection breaks after t/a of the txn arrived and before t/b did.
  const [conn] = [...cluster.subs.watches.get('t/')] as FakeConn[];
  conn!.pushEvent = (e) => {
    if (e.event === 'kvChanged' && e.key === 't/b') return void cluster.nodes[0]!.dropConnections();
    conn!.send(e);
  };
  const out = await writer.txn({ compare: [{ target: 'absent', key: 't/a' }], success: [{ op: 'put', key: 't/a', value: '1' }, { op: 'put', key: 't/b', value: '2' }] });
  assert.equal(out.succeeded, true);
  const first = await watch.next();
  assert.deepEqual([first.value?.key, first.value?.revision], ['t/a', out.revision]);
  await until(() => cluster.requests('watch').length === 2, 'resumed');
  assert.equal(cluster.requests('watch').at(-1)!.fromRevision, out.revision - 1, 'the half-delivered revision is asked for again');
  const second = await watch.next();
  assert.deepEqual([second.value?.key, second.value?.revision], ['t/b', out.revision]);
  await writer.put('t/c', '3');
  const third = await watch.next();
  assert.equal(third.value?.key, 't/c');
  watch.close();
});

test('a watch that cannot resume ends with CompactedError; fromRevision starts from a kept revision', async (t) => {
  const cluster = await FakeCluster.forTest(t, 1);
  const writer = await cluster.client();
  const reader = await cluster.client();
  await writer.put('h/a', '1');
  const from = cluster.index;
  await writer.put('h/b', '2');
  const replayed = reader.watch('h/', { fromRevision: from });
  const got = await replayed.next();
  assert.deepEqual([got.value?.key, got.value?.revision], ['h/b', from + 1]);
  replayed.close();
  cluster.nodes[0]!.intercept = (req) => (req.op === 'watch' && req.fromRevision !== undefined ? err('COMPACTED', 'gone', { compactRevision: 77 }) : undefined);
  const w = reader.watch('h/', { fromRevision: 1 });
  await assert.rejects(w.ready, (e: unknown) => e instanceof CompactedError && e.compactRevision === 77);
  await assert.rejects(w.next(), CompactedError);
});

test('against a node that answers a watch with entries only (the release before revisions), it re-reads the prefix', async (t) => {
  const cluster = await FakeCluster.forTest(t, 1);
  const writer = await cluster.client();
  const reader = await cluster.client();
  await writer.put('o/old', 'o');
  const old = (): Answer => ({ ok: true, result: cluster.machine.kvRange('o/').map((kv) => ({ key: kv.key, value: kv.value, revision: kv.revision })) });
  cluster.nodes[0]!.intercept = (req, conn) => {
    if (req.op !== 'watch') return undefined;
    cluster.subs.watches.add('o/', conn);
    return old();
  };
  const watch = reader.watch('o/');
  await watch.ready;
  await writer.delete('o/old');
  const c = await watch.next();
  assert.deepEqual([c.value?.key, c.value?.value], ['o/old', null]);
  watch.close();
});

test('put with session ties the key to this client\'s session; a stale session id is refused', async (t) => {
  const cluster = await FakeCluster.forTest(t, 1);
  const c = await cluster.client();
  const id = c.sessionId!;
  await c.put('svc/me', 'up', { session: true });
  assert.equal(cluster.requests('put').at(-1)!.ephemeral, true);
  await c.put('svc/also', 'up', { session: id });
  cluster.expire(id);
  await until(() => c.sessionId !== id, 'the client saw its session end');
  assert.equal(cluster.machine.kvGet('svc/me'), null);
  assert.equal(cluster.machine.kvGet('svc/also'), null);
  await assert.rejects(c.put('svc/me', 'again', { session: id }), SessionExpiredError);
});

test('a txn whose lock compare names a lost token loses the handle', async (t) => {
  const cluster = await FakeCluster.forTest(t, 1);
  const c = await cluster.client();
  const other = await cluster.client();
  const lock = await c.acquire('txn-lock');
  const ok = await c.txn({ compare: [{ target: 'lock', lock }], success: [{ op: 'put', key: 'f/a', value: '1' }] });
  assert.deepEqual([ok.succeeded, ok.failed], [true, []]);
  assert.deepEqual(cluster.requests('txn').at(-1)!.compare, [{ target: 'lock', lock: 'txn-lock', token: lock.token }]);
  // The holder's session is gone: the lock moves on and the handle's token is stale.
  const stale = { target: 'lock' as const, lock: 'txn-lock', token: lock.token };
  await lock.release();
  await other.acquire('txn-lock');
  const refused = await c.txn({ compare: [stale], success: [{ op: 'put', key: 'f/a', value: '2' }], failure: [{ op: 'put', key: 'f/lost', value: 'y' }] });
  assert.deepEqual([refused.succeeded, refused.failed], [false, [0]]);
  assert.equal(text(cluster.machine.kvGet('f/a')!.value), '1');
  assert.equal(text(cluster.machine.kvGet('f/lost')!.value), 'y');
  const mine = await c.acquire('mine');
  cluster.nodes[0]!.intercept = (req) => (req.op === 'txn' ? { ok: true, result: { succeeded: false, failed: [0], results: [], revision: 99, index: 99 } } : undefined);
  await c.txn({ compare: [{ target: 'lock', lock: mine }] });
  assert.equal(mine.signal.aborted, true, 'the handle whose compare failed is lost');
});
