// A node whose peer address in its config differs from the one the cluster recorded for it
// is cut off (peers dial the recorded address): it says so at error level and on status.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { rpc } from '../../src/protocol/rpc.js';
import { TestCluster, freePort, until } from '../support/cluster.js';

let c: TestCluster | null = null;
after(() => c?.stop());

test('a node started at another peer address than the recorded one warns on status and in its log', async () => {
  c = await TestCluster.started();
  const id = 'n3';
  await c.signal(id, 'SIGKILL');
  const recorded = c.node(id).peerUrl;
  const moved = `ws://127.0.0.1:${await freePort()}`;
  const cfg = JSON.parse(readFileSync(c.configPath, 'utf8')) as { nodes: { id: string; peerUrl: string }[] };
  cfg.nodes.find((n) => n.id === id)!.peerUrl = moved;
  writeFileSync(c.configPath, JSON.stringify(cfg, null, 2));
  await c.start(id);
  const s = await until(async () => {
    const st = await rpc(c!.node(id).clientUrl, { op: 'status' }, 2_000);
    return (st.warnings ?? []).length > 0 ? st : null;
  }, 10_000, 'a warning on status');
  assert.match(s.warnings!.join('\n'), new RegExp(`this node listens for peers at ${moved}, but the cluster recorded ${recorded} for n3`));
  const errLine = c.logOf(id).split('\n').find((l) => l.includes('this node listens for peers at'));
  assert.ok(errLine && JSON.parse(errLine).level === 50, 'logged at error level');
});
