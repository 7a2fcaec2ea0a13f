// The transport contracts (src/transport/contracts.ts), one suite each, run against both
// implementations: ws/TLS (production) and the in-memory ones of src/inproc.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import WebSocket from 'ws';
import type { Message } from '../../src/raft/types.js';
import type { ClientConn, ClientListener, PeerNetwork } from '../../src/transport/contracts.js';
import { ClientServer } from '../../src/transport/client-server.js';
import { MemoryNetwork } from '../../src/inproc/memory-network.js';
import { MemorySockets } from '../../src/inproc/memory-client-port.js';
import type { WebSocketLike } from '../../src/client/connection.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { captureLogger, testPeerTransport, waitFor } from './helpers.js';

const heartbeat = (from: string, to: string, term: number): Message => ({ type: 'heartbeat', from, to, term, commit: 0 }) as Message;

interface PeerPair {
  readonly a: PeerNetwork;
  readonly b: PeerNetwork;
  /** Connect a to b (each lists the other) and start both. */
  start(): Promise<void>;
}

const PEER_KINDS: readonly { name: string; pair(): Promise<PeerPair> }[] = [
  {
    name: 'ws (PeerTransport)',
    async pair() {
      const common = { clusterId: 'contract', secrets: ['contract-secret-0123456789abcdef'] };
      const a = testPeerTransport({ ...common, selfId: 'a' }).t;
      const b = testPeerTransport({ ...common, selfId: 'b' }).t;
      return {
        a,
        b,
        async start() {
          const pa = await a.start();
          const pb = await b.start();
          a.setPeers(new Map([['b', `ws://127.0.0.1:${pb.port}`]]));
          b.setPeers(new Map([['a', `ws://127.0.0.1:${pa.port}`]]));
        },
      };
    },
  },
  {
    name: 'memory (MemoryPeerEndpoint)',
    async pair() {
      const net = new MemoryNetwork({ connected: () => true, carry: (_f, _t, d) => void setImmediate(d), soon: (fn) => void setImmediate(fn) });
      const a = net.endpoint('a', new Map([['b', 'mem://b']]));
      const b = net.endpoint('b', new Map([['a', 'mem://a']]));
      return {
        a,
        b,
        async start() {
          await a.start();
          await b.start();
        },
      };
    },
  },
];

for (const kind of PEER_KINDS) {
  describe(`PeerNetwork contract: ${kind.name}`, () => {
    const stops: (() => Promise<void>)[] = [];
    after(() => Promise.all(stops.map((s) => s())));

    test('links come up, raft messages and app frames arrive in order, a stop takes the link down', async () => {
      const { a, b, start } = await kind.pair();
      stops.push(() => a.stop(), () => b.stop());
      const ups: string[] = [];
      const downs: string[] = [];
      const raft: Message[] = [];
      const apps: unknown[] = [];
      b.on('peerUp', (id) => ups.push(id));
      b.on('peerDown', (id) => downs.push(id));
      b.on('raft', (from, msgs) => {
        assert.equal(from, 'a');
        raft.push(...msgs);
      });
      b.on('app', (from, p) => {
        assert.equal(from, 'a');
        apps.push(p);
      });
      let aUp = false;
      a.on('peerUp', () => (aUp = true));
      await start();
      await waitFor('the link to come up at both ends', () => ups.includes('a') && aUp);
      a.sendNow(new Map([['b', [heartbeat('a', 'b', 3), heartbeat('a', 'b', 4)]]]));
      assert.equal(a.sendApp('b', { t: 'hello', n: 1 }), true);
      await waitFor('both frames', () => raft.length === 2 && apps.length === 1);
      assert.deepEqual(raft.map((m) => [m.type, m.term]), [['heartbeat', 3], ['heartbeat', 4]]);
      assert.deepEqual(apps, [{ t: 'hello', n: 1 }]);
      assert.equal(a.sendApp('nobody', { t: 'x' }), false, 'no link, no send');
      await a.stop();
      await waitFor('the link to go down', () => downs.includes('a'));
      assert.equal(b.sendApp('a', { t: 'late' }), false);
    });

    test('a message that claims another sender is not delivered', async () => {
      const { a, b, start } = await kind.pair();
      stops.push(() => a.stop(), () => b.stop());
      const got: Message[] = [];
      b.on('raft', (_from, msgs) => got.push(...msgs));
      // Both ends: a sends only on a link it has seen come up (the acceptor's side is up first).
      let up = false;
      let aUp = false;
      b.on('peerUp', () => (up = true));
      a.on('peerUp', () => (aUp = true));
      await start();
      await waitFor('the link to come up at both ends', () => up && aUp);
      a.sendNow(new Map([['b', [heartbeat('mallory', 'b', 1)]]]));
      a.sendNow(new Map([['b', [heartbeat('a', 'b', 2)]]]));
      await waitFor('the honest message', () => got.length > 0);
      assert.deepEqual(got.map((m) => m.from), ['a']);
    });
  });
}

interface ClientSide {
  readonly listener: ClientListener;
  connect(): WebSocketLike;
}

const CLIENT_KINDS: readonly { name: string; make(onConnection: (c: ClientConn) => void): Promise<ClientSide> }[] = [
  {
    name: 'ws (ClientServer)',
    async make(onConnection) {
      const listener = new ClientServer({ host: '127.0.0.1', port: 0, logger: captureLogger().logger, onConnection });
      const { port } = await listener.start();
      return { listener, connect: () => new WebSocket(`ws://127.0.0.1:${port}`) as unknown as WebSocketLike };
    },
  },
  {
    name: 'memory (MemoryClientPort)',
    async make(onConnection) {
      const sockets = new MemorySockets({ carry: (_f, _t, d) => void setImmediate(d) });
      const listener = sockets.port('ws://mem:1', onConnection);
      await listener.start();
      return { listener, connect: () => new sockets.WebSocket('ws://mem:1') };
    },
  },
];

for (const kind of CLIENT_KINDS) {
  describe(`ClientListener contract: ${kind.name}`, () => {
    test('validated requests in, frames out, bad requests answered, close seen', async () => {
      const conns: ClientConn[] = [];
      const closed: number[] = [];
      const side = await kind.make((conn) => {
        conns.push(conn);
        conn.on('request', (req) => conn.send({ id: req.id, ok: true, result: { echo: req.op } }));
        conn.on('close', () => closed.push(conn.id));
      });
      try {
        const ws = side.connect();
        const frames: { id: number; ok: boolean; result?: unknown; error?: { code: string } }[] = [];
        ws.addEventListener('message', (ev) => frames.push(decodeFrame(new Uint8Array(ev.data as ArrayBuffer)) as (typeof frames)[number]));
        await new Promise<void>((resolve) => ws.addEventListener('open', () => resolve()));
        ws.send(encodeFrame({ id: 1, op: 'status' }));
        ws.send(encodeFrame({ id: 2, op: 'acquire', name: '' })); // invalid: answered by the port
        await waitFor('two answers', () => frames.length === 2);
        assert.deepEqual(frames[0], { id: 1, ok: true, result: { echo: 'status' } });
        assert.equal(frames[1]!.id, 2);
        assert.equal(frames[1]!.error?.code, 'INVALID_ARGUMENT');
        assert.equal(side.listener.connectionCount(), 1);
        assert.ok(side.listener.stats().requests >= 1);
        ws.close();
        await waitFor('the close', () => closed.length === 1);
        assert.equal(conns[0]!.isOpen, false);
        assert.equal(conns[0]!.send({ event: 'sessionExpired', index: 1, session: 1 }), false, 'nothing is sent on a closed connection');
      } finally {
        await side.listener.stop();
      }
    });
  });
}
