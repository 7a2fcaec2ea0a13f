// Frames on an established peer link carry a MAC: someone on the path (here, a TCP proxy
// between two real PeerTransports) who injects or replays a frame after the handshake gets
// nothing delivered; the link is closed and redialed. Before, with tls.peer off, an injected
// Raft frame was delivered as if the authenticated peer had sent it.
import assert from 'node:assert/strict';
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Message, NodeId } from '../../src/raft/types.js';
import { encodeFrame } from '../../src/protocol/codec.js';
import { FrameAuth } from '../../src/transport/peer-frames.js';
import type { PeerTransport } from '../../src/transport/peer.js';
import { testPeerTransport, waitFor } from './helpers.js';

const SECRET = 'correct horse battery staple';
const CLUSTER = 'test-cluster';

/** A client websocket frame (masked with a zero key, so the payload is sent as is). */
function maskedBinaryFrame(payload: Uint8Array): Buffer {
  const head = payload.length < 126 ? Buffer.from([0x82, 0x80 | payload.length]) : Buffer.from([0x82, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

const running: PeerTransport[] = [];
const proxies: Server[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()));
  for (const p of proxies.splice(0)) p.close();
});

describe('FrameAuth', () => {
  const nonces = { acceptor: new Uint8Array(32).fill(1), dialer: new Uint8Array(32).fill(2) };
  const dialer = (): FrameAuth => new FrameAuth(SECRET, 'dialer', nonces, CLUSTER, 'a', 'b');
  const acceptor = (): FrameAuth => new FrameAuth(SECRET, 'acceptor', nonces, CLUSTER, 'a', 'b');

  test('frames open in order, in their direction, unaltered', () => {
    const d = dialer();
    const a = acceptor();
    const f1 = d.seal(Buffer.from('one'));
    const f2 = d.seal(Buffer.from('two'));
    assert.equal(a.open(f2), null, 'out of order');
    assert.deepEqual(Buffer.from(a.open(f1)!), Buffer.from('one'));
    assert.equal(a.open(f1), null, 'replayed');
    assert.deepEqual(Buffer.from(a.open(f2)!), Buffer.from('two'));
    assert.equal(d.open(a.seal(Buffer.from('x'))) !== null, true, 'the other direction opens with its own key');
    const forged = d.seal(Buffer.from('three'));
    forged[0] ^= 1;
    assert.equal(a.open(forged), null, 'altered');
    assert.equal(a.open(new Uint8Array(3)), null, 'too short');
    // Another link (other nonces), another secret, the wrong direction: nothing opens.
    assert.equal(new FrameAuth(SECRET, 'acceptor', { ...nonces, dialer: new Uint8Array(32) }, CLUSTER, 'a', 'b').open(dialer().seal(Buffer.from('x'))), null);
    assert.equal(new FrameAuth('other', 'acceptor', nonces, CLUSTER, 'a', 'b').open(dialer().seal(Buffer.from('x'))), null);
    assert.equal(dialer().open(dialer().seal(Buffer.from('x'))), null);
  });
});

describe('a peer link without TLS', () => {
  test('a frame injected into an established link is not delivered; the link is redialed', async () => {
    const start = async (id: NodeId): Promise<{ t: PeerTransport; port: number; raft: Message[] }> => {
      const { t } = testPeerTransport({ clusterId: CLUSTER, selfId: id, secrets: [SECRET], pingIntervalMs: 60_000, backoffMinMs: 10, backoffMaxMs: 50 });
      const raft: Message[] = [];
      t.on('raft', (_from, msgs) => raft.push(...msgs));
      const { port } = await t.start();
      running.push(t);
      return { t, port, raft };
    };
    const a = await start('a'); // a < b: a dials
    const b = await start('b');

    // The path from a to b, with a hand in it: every a->b socket is remembered for injection.
    const toB: Socket[] = [];
    const proxy = createServer((inbound) => {
      const outbound = tcpConnect(b.port, '127.0.0.1');
      toB.push(outbound);
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
    proxies.push(proxy);
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxyPort = (proxy.address() as { port: number }).port;
    a.t.setPeers(new Map([['b', `ws://127.0.0.1:${proxyPort}`]]));
    b.t.setPeers(new Map([['a', `ws://127.0.0.1:${a.port}`]]));
    await waitFor('linked', () => a.t.connectedPeers().includes('b') && b.t.connectedPeers().includes('a'));
    const connects = b.t.stats().connects;

    // An honest message first: delivered.
    a.t.send('b', [{ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 0 }]);
    await waitFor('honest message', () => b.raft.length === 1);

    // The link is idle (no pings for a minute): a frame written now starts at a frame boundary.
    const forged: Message = { type: 'heartbeat', from: 'a', to: 'b', term: 1_000_000, commit: 0 };
    toB[toB.length - 1]!.write(maskedBinaryFrame(encodeFrame({ k: 'r', m: [forged] })));
    await waitFor('the link is replaced', () => b.t.stats().connects > connects && b.t.connectedPeers().includes('a'));
    await sleep(50);
    assert.ok(!b.raft.some((m) => m.term === 1_000_000), 'the injected Raft message was delivered');
    assert.ok(b.t.stats().invalidFrames >= 1);

    // And the new link works.
    a.t.send('b', [{ type: 'heartbeat', from: 'a', to: 'b', term: 2, commit: 0 }]);
    await waitFor('message on the new link', () => b.raft.some((m) => m.term === 2));
  });
});
