// Events a restarted node re-applies from its own log carry the replay's time; the status
// API marks them `replayed`, and events that happen after the restart are not marked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rpc } from '../../src/protocol/rpc.js';
import { TestCluster, until } from '../support/cluster.js';
import { getJson } from './helpers.js';

let cluster: TestCluster;
before(async () => {
  cluster = await TestCluster.started();
});
after(() => cluster?.stop());

type Recent = { events: { kind: string; name: string | null; replayed: boolean }[] };

test('a restarted node marks the events it replays from its log; new ones are not marked', async () => {
  const leader = await cluster.waitForLeader();
  const url = cluster.node(leader).clientUrl;
  const s = await rpc(url, { op: 'openSession', ttlMs: 30_000 });
  await rpc(url, { op: 'acquire', session: s.session, seq: 1, name: 'replay/before', mode: 'exclusive', wait: false });
  const follower = cluster.nodes.find((n) => n.id !== leader)!;
  const granted = (r: Recent, name: string) => r.events.find((e) => e.kind === 'granted' && e.name === name);
  await until(async () => granted((await getJson<Recent>(`${follower.httpUrl}/api/recent`)).body, 'replay/before'), 5_000, 'the follower applied the grant');

  await cluster.signal(follower.id, 'SIGTERM');
  await cluster.start(follower.id);
  const replayed = await until(async () => granted((await getJson<Recent>(`${follower.httpUrl}/api/recent`)).body, 'replay/before'), 15_000, 'the grant replayed');
  assert.equal(replayed.replayed, true);

  await rpc(url, { op: 'acquire', session: s.session, seq: 2, ackedSeq: 1, name: 'replay/after', mode: 'exclusive', wait: false });
  const fresh = await until(async () => granted((await getJson<Recent>(`${follower.httpUrl}/api/recent`)).body, 'replay/after'), 10_000, 'a new grant');
  assert.equal(fresh.replayed, false);
});
