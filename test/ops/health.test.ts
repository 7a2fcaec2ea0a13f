// /healthz, /readyz and the status page API on real nodes: readiness follows the leader,
// the lock table pages, and the event stream reports changes within a second.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { rpc } from '../../src/protocol/rpc.js';
import { TestCluster, settleAll, until } from '../support/cluster.js';
import { getJson, SseReader } from './helpers.js';

const clusters: TestCluster[] = [];
after(async () => {
  await Promise.all(clusters.map((c) => c.stop()));
});

async function newCluster(): Promise<TestCluster> {
  const c = await TestCluster.create();
  clusters.push(c);
  return c;
}

test('healthz answers while the process serves; readyz waits for a leader', async () => {
  const c = await newCluster();
  const n1 = c.node('n1');
  await c.start('n1'); // alone: one of three cannot elect a leader
  const health = await getJson(`${n1.httpUrl}/healthz`);
  assert.equal(health.status, 200);
  assert.equal(health.body['status'], 'ok');
  const notReady = await getJson(`${n1.httpUrl}/readyz`);
  assert.equal(notReady.status, 503);
  assert.equal(notReady.body['status'], 'not ready');
  assert.match(String(notReady.body['reason']), /no leader/);

  await settleAll([c.start('n2'), c.start('n3')]);
  const leader = await c.waitForLeader();
  for (const n of c.nodes) {
    const r = await until(async () => {
      const x = await getJson(`${n.httpUrl}/readyz`);
      return x.status === 200 ? x : null;
    }, 5_000, `${n.id} to be ready`);
    assert.equal(r.body['status'], 'ready');
    assert.equal(r.body['leader'], leader);
  }

  // A follower whose peers are gone loses its leader and stops being ready.
  const follower = c.nodes.find((n) => n.id !== leader)!;
  await Promise.all(c.nodes.filter((n) => n.id !== follower.id).map((n) => c.signal(n.id, 'SIGKILL')));
  const lost = await until(async () => {
    const x = await getJson(`${follower.httpUrl}/readyz`);
    return x.status === 503 ? x : null;
  }, 10_000, `${follower.id} to report not ready`);
  assert.match(String(lost.body['reason']), /no leader/);
  assert.equal((await getJson(`${follower.httpUrl}/healthz`)).status, 200);
});

test('status API: cluster view, lock pages, errors, and live events within a second', async () => {
  const c = await newCluster();
  await c.startAll();
  const leader = await c.waitForLeader();
  const follower = c.nodes.find((n) => n.id !== leader)!;

  const cl = await getJson<{ leader: string; nodes: { id: string; reachable: boolean; status: { role: string } | null }[] }>(`${follower.httpUrl}/api/cluster`);
  assert.equal(cl.status, 200);
  assert.equal(cl.body.leader, leader);
  assert.deepEqual(cl.body.nodes.map((n) => n.reachable), [true, true, true]);
  assert.equal(cl.body.nodes.find((n) => n.id === leader)?.status?.role, 'leader');

  // Live updates: the page's stream from a follower.
  const sse = await SseReader.open(`${follower.httpUrl}/api/events`);
  try {
    const first = await sse.next((m) => m.event === 'cluster', 2_000, 'the first cluster view');
    assert.equal((first.data as { self: string }).self, follower.id);

    const url = c.node(leader).clientUrl;
    const s = await rpc(url, { op: 'openSession', ttlMs: 30_000, label: 'page-writer' });
    const started = performance.now();
    const g = await rpc(url, { op: 'acquire', session: s.session, seq: 1, name: 'page/0', mode: 'exclusive', wait: false });
    assert.equal(g.status, 'granted');
    const ev = await sse.next(
      (m) => m.event === 'events' && (m.data as { events: { kind: string; name: string }[] }).events.some((e) => e.kind === 'granted' && e.name === 'page/0'),
      1_000,
      'the grant in the event stream',
    );
    await sse.next((m) => m.event === 'locks', 1_000, 'a lock-table change hint');
    assert.ok(ev.at - started < 1_000);

    for (let i = 1; i < 7; i++) {
      await rpc(url, { op: 'acquire', session: s.session, seq: i + 1, ackedSeq: i, name: `page/${i}`, mode: 'exclusive', wait: false });
    }
    await rpc(url, { op: 'acquire', session: s.session, seq: 8, ackedSeq: 7, name: 'other', mode: 'exclusive', wait: false });
  } finally {
    sse.close();
  }

  type Page = { total: number; offset: number; limit: number; appliedIndex: number; rows: { name: string; holders: { token: number; ttlMs: number; label: string | null }[] }[] };
  const page = await until(async () => {
    const p = await getJson<Page>(`${follower.httpUrl}/api/locks?prefix=page/&offset=2&limit=3`);
    return p.body.total === 7 ? p : null;
  }, 5_000, 'the follower to apply every lock');
  assert.deepEqual(page.body.rows.map((r) => r.name), ['page/2', 'page/3', 'page/4']);
  assert.equal(page.body.rows[0]!.holders[0]!.ttlMs, 30_000);
  assert.equal(page.body.rows[0]!.holders[0]!.label, 'page-writer', 'the label the client gave its session');
  // Only the leader keeps lease deadlines and saw the grants: a follower says it does not know.
  type Holder = { ttlMs: number; ttlLeftMs: number | null; heldForMs: number | null };
  const onFollower = page.body.rows[0]!.holders[0]! as unknown as Holder;
  assert.equal(onFollower.ttlLeftMs, null);
  assert.equal(onFollower.heldForMs, null);
  const onLeader = (await getJson<Page>(`${c.node(leader).httpUrl}/api/locks?prefix=page/0`)).body.rows[0]!.holders[0]! as unknown as Holder;
  assert.ok(onLeader.ttlLeftMs !== null && onLeader.ttlLeftMs > 0 && onLeader.ttlLeftMs <= 30_000, `time left ${onLeader.ttlLeftMs}`);
  assert.ok(onLeader.heldForMs !== null && onLeader.heldForMs >= 0, `held for ${onLeader.heldForMs}`);
  const all = await getJson<Page>(`${follower.httpUrl}/api/locks`);
  assert.equal(all.body.total, 8);
  assert.equal(all.body.limit, 50);

  assert.equal((await getJson(`${follower.httpUrl}/api/locks?limit=0`)).status, 400);
  assert.equal((await getJson(`${follower.httpUrl}/api/locks?offset=-1`)).status, 400);
  assert.equal((await getJson(`${follower.httpUrl}/nope`)).status, 404);
  const post = await fetch(`${follower.httpUrl}/api/status`, { method: 'POST' });
  assert.equal(post.status, 405);
  await post.body?.cancel();

  const page1 = await fetch(`${follower.httpUrl}/`);
  assert.equal(page1.status, 200);
  assert.match(page1.headers.get('content-type') ?? '', /text\/html/);
  assert.match(await page1.text(), /<title>Palisade status<\/title>/);

  const recent = await getJson<{ events: { kind: string }[] }>(`${follower.httpUrl}/api/recent`);
  assert.ok(recent.body.events.some((e) => e.kind === 'leaderChanged'));
});
