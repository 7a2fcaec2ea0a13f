import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ElectionState } from '../../src/client/index.js';
import { LockLostError } from '../../src/client/index.js';
import { FakeCluster } from './fake-cluster.js';
import { settle, until } from './fake-clock.js';

test('campaign leads at once when nobody does; proclaim and resign', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const leadership = await a.election('e').campaign('a-value');
  assert.equal(leadership.election, 'e');
  assert.equal(leadership.value, 'a-value');
  assert.equal(leadership.held, true);
  assert.deepEqual(await a.election('e').leader(), { leader: a.sessionId, value: 'a-value', token: leadership.token });
  await leadership.proclaim('a2');
  assert.equal(cluster.electionView('e').value, 'a2');
  await leadership.resign();
  await leadership.resign();
  assert.equal(cluster.requests('resign').length, 1, 'resign is idempotent');
  assert.equal(cluster.electionView('e').leader, null);
  assert.equal(leadership.signal.aborted, true);
  await assert.rejects(leadership.proclaim('late'), LockLostError);
});

test('a queued campaign resolves when the electionChanged event names our session', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const b = await cluster.client();
  const first = await a.election('q').campaign('a');
  const second = b.election('q').campaign('b');
  await until(() => cluster.candidates('q').length === 1, 'b queued');
  await first.resign();
  const leadership = await second;
  assert.ok(leadership.token > first.token);
  assert.equal(cluster.electionView('q').leader, b.sessionId);
  assert.equal(leadership.value, 'b');
});

test('observe yields the current leader first, then each change once (by index)', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const b = await cluster.client();
  const watcher = await cluster.client();
  const la = await a.election('o').campaign('va');
  const observer = watcher.election('o').observe();
  await observer.ready;
  const seen: ElectionState[] = [];
  const reading = (async () => {
    for await (const state of observer) {
      seen.push(state);
      if (seen.length === 3) break;
    }
  })();
  await until(() => seen.length === 1, 'current leader');
  assert.deepEqual(seen[0], { leader: a.sessionId, value: 'va', token: la.token });

  // The same event delivered twice (say, by two nodes) is yielded once.
  const conn = [...cluster.nodes[0]!.conns].find((c) => cluster.carries(c, { election: 'o' }) && !cluster.carries(c, { session: a.sessionId! }))!;
  await la.proclaim('va2');
  const again = { event: 'electionChanged', index: cluster.index, election: 'o', leader: a.sessionId, value: 'va2', token: la.token };
  conn.send(again);
  const pb = b.election('o').campaign('vb');
  await until(() => cluster.candidates('o').length === 1, 'b queued');
  await la.resign();
  const lb = await pb;
  await reading;
  assert.deepEqual(seen.slice(1), [
    { leader: a.sessionId, value: 'va2', token: la.token },
    { leader: b.sessionId, value: 'vb', token: lb.token },
  ]);
  await settle();
  assert.ok(cluster.requests('unobserve').length >= 1, 'leaving the loop unsubscribes');
});

test('observe re-subscribes after a reconnect and catches up by reading', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const a = await cluster.client({ endpoints: [cluster.urls[1]!] });
  const watcher = await cluster.client({ endpoints: [cluster.urls[0]!] });
  const observer = watcher.election('r').observe();
  await observer.ready;
  const seen: ElectionState[] = [];
  void (async () => {
    for await (const state of observer) seen.push(state);
  })();
  await until(() => seen.length === 1, 'initial state');
  assert.deepEqual(seen[0], { leader: null, value: null, token: null });
  // The watcher's connection drops; the election changes while no connection tells it.
  let token = 0;
  let campaigned = false;
  cluster.nodes[0]!.intercept = async (req) => {
    if (req.op === 'hello' && !campaigned) {
      campaigned = true;
      token = (await a.election('r').campaign('x')).token; // a is on the other node
    }
    return undefined;
  };
  cluster.nodes[0]!.dropConnections();
  await until(() => seen.length === 2, 'caught up after reconnect');
  assert.deepEqual(seen[1], { leader: a.sessionId, value: 'x', token });
  assert.ok(cluster.requests('observe').length >= 2);
  observer.close();
});

test('leadership is lost with its session', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const leadership = await a.election('s').campaign('v');
  cluster.expire(a.sessionId!);
  await until(() => leadership.signal.aborted, 'lost');
  assert.throws(() => leadership.assertHeld(), LockLostError);
});

test('a read older than the leadership does not take it away', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const a = await cluster.client({ endpoints: [cluster.urls[0]!, cluster.urls[1]!] });
  const leadership = await a.election('stale').campaign('v');
  // n2's observe answers the election as it was before the campaign: as an observe sent
  // before the campaign was answered, and answered after it, reads (its read waits for the
  // leader's confirmation; the campaign's commit did not).
  const stale = { ok: true as const, result: { election: 'stale', leader: null, value: null, token: null } };
  cluster.nodes[1]!.intercept = (req) => (req.op === 'observe' ? stale : undefined);
  const observesBefore = cluster.requests('observe').length;
  cluster.nodes[0]!.dropConnections();
  await until(() => cluster.requests('observe').length > observesBefore, 'observe renewed on the other node');
  await settle();
  assert.equal(leadership.held, true, 'a read older than the election is no news');
  assert.ok(cluster.requests('leader').length > 0, 'the cluster was asked before deciding');
  // The cluster's own word still takes it away: the session ends, the leadership goes.
  cluster.expire(a.sessionId!);
  await until(() => leadership.signal.aborted, 'lost with its session');
});

test('a read that the cluster confirms takes the leadership away', async (t) => {
  const cluster = await FakeCluster.forTest(t, 2);
  const a = await cluster.client({ endpoints: [cluster.urls[0]!, cluster.urls[1]!] });
  const leadership = await a.election('gone').campaign('v');
  // Every node says someone else leads now (as after a revoke whose event this client missed).
  const other = { ok: true as const, result: { election: 'gone', leader: 999, value: 'x', token: leadership.token + 5 } };
  for (const n of cluster.nodes) n.intercept = (req) => (req.op === 'observe' || req.op === 'leader' ? other : undefined);
  cluster.nodes[0]!.dropConnections();
  await until(() => leadership.signal.aborted, 'lost on the cluster\'s word');
  assert.throws(() => leadership.assertHeld(), LockLostError);
});

test('an aborted campaign leaves the queue', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const b = await cluster.client();
  const la = await a.election('c').campaign('a');
  const controller = new AbortController();
  const pb = b.election('c').campaign('b', { signal: controller.signal });
  await until(() => cluster.candidates('c').length === 1, 'b queued');
  controller.abort(new Error('not interested'));
  await assert.rejects(pb, /not interested/);
  const withdrawal = cluster.requests('resign').find((r) => r.session === b.sessionId)!;
  assert.equal(withdrawal.token, undefined, 'resign without token withdraws the candidacy');
  assert.deepEqual(cluster.candidates('c'), []);
  await la.resign();
  assert.equal(cluster.electionView('c').leader, null);
});

test('an aborted campaign that was elected meanwhile steps down', async (t) => {
  const cluster = await FakeCluster.forTest(t);
  const a = await cluster.client();
  const b = await cluster.client();
  const la = await a.election('d').campaign('a');
  const controller = new AbortController();
  const pb = b.election('d').campaign('b', { signal: controller.signal });
  await until(() => cluster.candidates('d').length === 1, 'b queued');
  cluster.nodes[0]!.intercept = async (req) => {
    // a resigns just before b's withdrawal is applied: b leads and is no candidate any more.
    if (req.op === 'resign' && req.session === b.sessionId && req.token === undefined) await la.resign();
    return undefined;
  };
  controller.abort(new Error('changed my mind'));
  await assert.rejects(pb, /changed my mind/);
  await until(() => cluster.electionView('d').leader === null, 'b stepped down');
  assert.ok(cluster.requests('resign').some((r) => r.session === b.sessionId && r.token !== undefined));
});
