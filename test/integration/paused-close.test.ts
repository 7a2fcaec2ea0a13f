// A node that is paused (SIGSTOP) keeps its TCP connections open and answers nothing, not
// even the websocket close handshake. The SDK closes connections to such nodes (the liveness
// watch abandons a silent node, the scout dismisses its status connections, close() ends
// everything): each socket must then be gone soon, not linger for the ws library's 30 s close
// timeout, which also kept a closed client's process alive that long.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { TestCluster, until } from '../support/cluster.js';
import { LockClient } from '../../src/client/index.js';

describe('SDK sockets to a paused node', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started();
  });
  after(() => c?.stop());

  test('client.close() while its node is paused leaves no socket open after 2 s', async () => {
    const sockets: WebSocket[] = [];
    class Recorded extends WebSocket {
      constructor(url: string) {
        super(url);
        sockets.push(this);
      }
    }
    const leader = await c.waitForLeader();
    const client = await LockClient.connect({ endpoints: [c.node(leader).clientUrl], ttlMs: 10_000, WebSocket: Recorded });
    await client.put('paused-close/k', 'v');
    assert.equal(client.connectedUrl, c.node(leader).clientUrl);
    await c.signal(leader, 'SIGSTOP');
    try {
      client.close();
      const open = (): number => sockets.filter((s) => s.readyState !== WebSocket.CLOSED).length;
      await until(() => open() === 0, 2_000, 'the sockets to close').catch(() => {});
      assert.equal(open(), 0, `${open()} of ${sockets.length} sockets still open 2 s after close()`);
    } finally {
      await c.signal(leader, 'SIGCONT');
    }
  });
});
