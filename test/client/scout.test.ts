// The scout (src/client/scout.ts): a request that a node holds without answering — a leader
// cut off from the others keeps answering pings but cannot serve — is moved to the node
// that leads in a higher term, at the cluster's pace rather than after the attempt timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeStatus } from '../../src/protocol/client-protocol.js';
import { FakeCluster, type Answer, type FakeNode } from './fake-cluster.js';

function says(node: FakeNode, status: Pick<NodeStatus, 'role' | 'term' | 'leader'>): Answer {
  return { ok: true, result: { id: node.id, commitIndex: 0, appliedIndex: 0, members: [], pid: 0, ...status } };
}

/** Three fake nodes; n1 answers status as told and holds every put without answering. */
async function cutOffFirst(t: Parameters<typeof FakeCluster.forTest>[0], n1Says: Pick<NodeStatus, 'role' | 'term' | 'leader'>) {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  // Without the scout only the attempt timeout (5 s here) would move the put.
  const client = await cluster.client({ attemptTimeoutMs: 5_000, requestTimeoutMs: 20_000 });
  assert.equal(client.connectedUrl, n1.url);
  n1.intercept = (req) => (req.op === 'status' ? says(n1, n1Says) : req.op === 'put' ? 'silent' : undefined);
  n2.intercept = (req) => (req.op === 'status' ? says(n2, { role: 'follower', term: 3, leader: 'n3' }) : undefined);
  n3.intercept = (req) => (req.op === 'status' ? says(n3, { role: 'leader', term: 3, leader: 'n3' }) : undefined);
  return { cluster, client, n1, n3 };
}

test('a put held by a node that knows no leader (cut off) moves to the leader others name, with the same seq', async (t) => {
  const { cluster, client, n3 } = await cutOffFirst(t, { role: 'follower', term: 2, leader: null });
  const started = performance.now();
  await client.put('k', 'v');
  const elapsed = performance.now() - started;
  assert.ok(elapsed < 2_500, `moved after ${Math.round(elapsed)} ms`);
  assert.equal(client.connectedUrl, n3.url);
  const puts = cluster.log.filter((e) => e.req.op === 'put');
  assert.deepEqual(puts.map((e) => e.node), ['n1', 'n3']);
  assert.equal(puts[0]!.req.seq, puts[1]!.req.seq, 'retried with the same seq');
});

test('a put held by a deposed leader that does not know it yet (lower term) moves to the new leader', async (t) => {
  const { client, n3 } = await cutOffFirst(t, { role: 'leader', term: 2, leader: 'n1' });
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, n3.url);
});

test('a slow leader of the highest term is left alone: the request is answered where it was sent', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  const client = await cluster.client();
  n1.intercept = async (req) => {
    if (req.op === 'status') return says(n1, { role: 'leader', term: 3, leader: 'n1' });
    if (req.op === 'put') await new Promise((r) => setTimeout(r, 900));
    return undefined;
  };
  for (const n of [n2, n3]) n.intercept = (req) => (req.op === 'status' ? says(n, { role: 'follower', term: 3, leader: 'n1' }) : undefined);
  await client.put('k', 'v');
  assert.equal(client.connectedUrl, n1.url);
  assert.deepEqual(cluster.log.filter((e) => e.req.op === 'put').map((e) => e.node), ['n1']);
  assert.ok(cluster.requests('status', 'n2').length > 0, 'the scout asked the others');
});

test('while nobody leads, the scout keeps asking, but slows down once an election has had its chance', async (t) => {
  const cluster = await FakeCluster.forTest(t, 3);
  const [n1, n2, n3] = cluster.nodes as [FakeNode, FakeNode, FakeNode];
  const client = await cluster.client({ attemptTimeoutMs: 10_000, requestTimeoutMs: 20_000 });
  for (const n of [n1, n2, n3]) n.intercept = (req) => (req.op === 'status' ? says(n, { role: 'follower', term: 2, leader: null }) : undefined);
  const held = n1.intercept!;
  n1.intercept = async (req, conn) => {
    if (req.op === 'put') await new Promise((r) => setTimeout(r, 3_000));
    return held(req, conn);
  };
  await client.put('k', 'v');
  const asked = cluster.requests('status', 'n2').length;
  // Every two heartbeats for 3 s would be about 29 rounds; slowing after 1.2 s makes ~18.
  assert.ok(asked >= 3 && asked <= 23, `asked n2 ${asked} times in 3 s`);
  assert.equal(client.connectedUrl, n1.url, 'nobody leads: nowhere to move');
});
