// Bad input against real nodes on both ports: the node answers with an error or closes the
// connection, never crashes, and keeps its state and its service to other clients.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { pino } from 'pino';
import { PeerTransport } from '../../src/transport/peer.js';
import { encodeFrame } from '../../src/protocol/codec.js';
import { TestCluster, sleep } from '../support/cluster.js';
import { openSocket, RawClient, RawSession } from '../support/raw-client.js';

function closed(ws: WebSocket): Promise<number> {
  return new Promise((res) => (ws.readyState === WebSocket.CLOSED ? res(0) : ws.once('close', (code) => res(code))));
}

describe('hostile input', () => {
  let c: TestCluster;
  let holder: RawClient;
  let token: number;
  before(async () => {
    c = await TestCluster.create();
    await c.startAll();
    await c.waitForLeader();
    holder = await RawClient.connect(c.endpoints[0]!);
    const s = await RawSession.open(holder, 30_000);
    const r = await s.call({ op: 'acquire', name: 'hostile/held', mode: 'exclusive', wait: false });
    assert.ok(r.ok);
    token = r.result.token;
  });
  after(async () => {
    holder.close();
    await c.stop();
  });

  async function assertStillServing(): Promise<void> {
    for (const n of c.nodes) {
      const client = await RawClient.connect(n.clientUrl);
      try {
        const info = await client.ok({ op: 'get', name: 'hostile/held' });
        assert.equal(info.holders[0]?.token, token, `node ${n.id} kept the lock state`);
      } finally {
        client.close();
      }
    }
    for (const n of c.nodes) assert.ok(c.procs.get(n.id)?.exitCode === null, `node ${n.id} is still running`);
  }

  test('garbage bytes, text frames and non-object frames on the client port', async () => {
    for (const payload of [Buffer.from([0xc1, 0xff, 0x00, 0x13]), 'hello', encodeFrame([1, 2, 3]), encodeFrame({ id: 'x', op: 5 })]) {
      const ws = await openSocket(c.endpoints[1]!);
      const replies: Buffer[] = [];
      ws.on('message', (d: Buffer) => replies.push(d));
      ws.send(payload);
      // Either an error frame or a close: never silence and never a crash.
      const code = await Promise.race([closed(ws), sleep(2000).then(() => -1)]);
      assert.ok(code !== -1 || replies.length > 0, `no answer to ${String(payload)}`);
      ws.terminate();
    }
    await assertStillServing();
  });

  test('a frame with a recoverable id but wrong fields is answered INVALID_ARGUMENT', async () => {
    const client = await RawClient.connect(c.endpoints[2]!);
    try {
      const r = await client.call({ op: 'acquire', session: 'one', seq: -1, name: 42 });
      assert.equal(r.ok, false);
      assert.ok(!r.ok && ['INVALID_ARGUMENT', 'BAD_FRAME'].includes(r.error.code));
    } finally {
      client.close();
    }
    await assertStillServing();
  });

  test('an oversize frame gets FRAME_TOO_LARGE or a close, and the node goes on', async () => {
    const ws = await openSocket(c.endpoints[0]!);
    const replies: Buffer[] = [];
    ws.on('message', (d: Buffer) => replies.push(d));
    ws.send(encodeFrame({ id: 1, op: 'put', session: 1, seq: 1, key: 'k', value: Buffer.alloc(3 << 20) }));
    const code = await Promise.race([closed(ws), sleep(3000).then(() => -1)]);
    assert.ok(code !== -1 || replies.length > 0);
    ws.terminate();
    await assertStillServing();
  });

  test('a peer with the wrong cluster secret is refused and never joins', async () => {
    const target = c.nodes[2]!; // n3: a peer "n1" dials it (the smaller id dials)
    let up = false;
    const impostor = new PeerTransport({
      clusterId: 'palisade-test',
      selfId: 'n1',
      secrets: ['not-the-cluster-secret-at-all'],
      listenHost: '127.0.0.1',
      listenPort: 0,
      peers: new Map([['n3', target.peerUrl]]),
      logger: pino({ level: 'silent' }),
    });
    impostor.on('peerUp', () => (up = true));
    await impostor.start();
    impostor.send('n3', [{ type: 'vote', from: 'n1', to: 'n3', term: 1_000_000, index: 1_000_000, logTerm: 1_000_000 }]);
    await sleep(1500);
    await impostor.stop();
    assert.equal(up, false, 'the impostor was authenticated');
    const s = await c.status('n3');
    assert.ok(s && s.term < 1_000_000, 'the impostor moved the term');
    assert.match(c.logOf('n3'), /refus|reject|auth|secret/i);
    await assertStillServing();
  });
});
