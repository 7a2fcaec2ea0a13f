import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket, WebSocketServer } from 'ws';
import type { Message, NodeId } from '../../src/raft/types.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { PEER_PROTOCOL_VERSION, acceptorMac, dialerMac, newNonce, parseAuth } from '../../src/transport/peer-handshake.js';
import type { PeerTransport, PeerTransportOptions } from '../../src/transport/peer.js';
import { WARN, testPeerTransport, waitFor, type LogLine } from './helpers.js';

const SECRET = 'correct horse battery staple';
const CLUSTER = 'test-cluster';

interface Node {
  readonly id: NodeId;
  readonly t: PeerTransport;
  readonly url: string;
  readonly port: number;
  readonly raft: { from: NodeId; msgs: Message[] }[];
  readonly app: { from: NodeId; payload: unknown }[];
  readonly events: string[];
  readonly lines: LogLine[];
}

const running: PeerTransport[] = [];
const servers: WebSocketServer[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()));
  // A fake peer's sockets are cut first: a paused one would never notice its peer left.
  for (const s of servers) for (const ws of s.clients) ws.terminate();
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function startNode(id: NodeId, overrides: Partial<PeerTransportOptions> = {}): Promise<Node> {
  const { t, lines } = testPeerTransport({ clusterId: CLUSTER, selfId: id, secrets: [SECRET], ...overrides });
  const node: Node = { id, t, url: '', port: 0, raft: [], app: [], events: [], lines };
  t.on('raft', (from, msgs) => node.raft.push({ from, msgs }));
  t.on('app', (from, payload) => node.app.push({ from, payload }));
  t.on('peerUp', (p) => node.events.push(`up:${p}`));
  t.on('peerDown', (p) => node.events.push(`down:${p}`));
  const { port } = await t.start();
  running.push(t);
  return Object.assign(node, { url: `ws://127.0.0.1:${port}`, port });
}

/** Tell every node about every other one. */
function connect(nodes: readonly Node[]): void {
  for (const n of nodes) n.t.setPeers(new Map(nodes.filter((o) => o !== n).map((o) => [o.id, o.url])));
}

async function fullyConnected(nodes: readonly Node[]): Promise<void> {
  await waitFor('all links up', () => nodes.every((n) => n.t.connectedPeers().length === nodes.length - 1));
}

function msg(from: NodeId, to: NodeId, term: number, extra: Partial<Message> = {}): Message {
  return { type: 'heartbeat', from, to, term, commit: term, ...extra };
}

function received(n: Node): Message[] {
  return n.raft.flatMap((r) => r.msgs);
}

function warnings(n: Node): LogLine[] {
  return n.lines.filter((l) => l.level >= WARN);
}

/** Two nodes 'a' and 'b' with their link up. */
async function linkedPair(): Promise<[Node, Node]> {
  const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
  connect([a, b]);
  await fullyConnected([a, b]);
  return [a, b];
}

describe('PeerTransport', () => {
  test('three nodes exchange Raft messages over one link per pair, both ways', async () => {
    const nodes = await Promise.all(['n1', 'n2', 'n3'].map((id) => startNode(id)));
    connect(nodes);
    await fullyConnected(nodes);
    const [n1, n2, n3] = nodes as [Node, Node, Node];
    const entryData = new Uint8Array([7, 8, 9]);
    const append: Message = { type: 'app', from: 'n2', to: 'n1', term: 3, index: 4, logTerm: 2, commit: 4, entries: [{ term: 3, index: 5, type: 'normal', data: entryData }] };
    n2.t.send('n1', [append]);
    n1.t.send('n2', [msg('n1', 'n2', 3)]);
    n3.t.send('n1', [msg('n3', 'n1', 3)]);
    n1.t.send('n3', [msg('n1', 'n3', 3, { context: new Uint8Array([1]) })]);
    await waitFor('delivery', () => n1.raft.length === 2 && n2.raft.length === 1 && n3.raft.length === 1);
    assert.deepEqual(n1.raft.find((r) => r.from === 'n2')?.msgs, [append]);
    assert.deepEqual(received(n2), [msg('n1', 'n2', 3)]);
    assert.deepEqual(received(n3), [msg('n1', 'n3', 3, { context: new Uint8Array([1]) })]);
    // One authenticated socket per pair: each node took part in exactly two links.
    for (const n of nodes) assert.equal(n.t.stats().connects, 2, `${n.id} links`);
    assert.deepEqual(n1.events.sort(), ['up:n2', 'up:n3']);
  });

  test('messages queued in one turn leave as one frame', async () => {
    const [a, b] = await linkedPair();
    const before = a.t.stats().framesSent;
    for (let i = 1; i <= 1000; i++) a.t.send('b', [msg('a', 'b', i)]);
    await waitFor('1000 messages', () => received(b).length === 1000);
    assert.equal(a.t.stats().framesSent - before, 1);
    assert.equal(b.raft.length, 1, 'delivered as one batch');
    assert.deepEqual(received(b).map((m) => m.term), Array.from({ length: 1000 }, (_, i) => i + 1));
    // Over several turns: one frame per turn.
    for (let turn = 0; turn < 5; turn++) {
      for (let i = 0; i < 50; i++) b.t.send('a', [msg('b', 'a', i)]);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor('250 messages', () => received(a).length === 250);
    assert.ok(b.t.stats().framesSent <= 5, `frames: ${b.t.stats().framesSent}`);
  });

  test('queued messages leave once the sender yields, not a loop iteration later', async () => {
    const [a, b] = await linkedPair();
    const before = a.t.stats().framesSent;
    a.t.send('b', [msg('a', 'b', 1)]);
    a.t.send('b', [msg('a', 'b', 2)]);
    assert.equal(a.t.stats().framesSent - before, 0, 'nothing leaves while the sender still runs');
    await Promise.resolve();
    assert.equal(a.t.stats().framesSent - before, 1, 'one frame, before any setImmediate or I/O callback');
    await waitFor('2 messages', () => received(b).length === 2);
    assert.deepEqual(received(b).map((m) => m.term), [1, 2]);
  });

  test('sendNow writes at once, one frame per peer, after what was already queued', async () => {
    const [a, b] = await linkedPair();
    const before = a.t.stats().framesSent;
    a.t.send('b', [msg('a', 'b', 1)]);
    a.t.sendNow(new Map([['b', [msg('a', 'b', 2), msg('a', 'b', 3)]]]));
    assert.equal(a.t.stats().framesSent - before, 1, 'written before sendNow returned, as one frame');
    await waitFor('3 messages', () => received(b).length === 3);
    assert.deepEqual(received(b).map((m) => m.term), [1, 2, 3]);
  });

  test('a batch larger than maxFrameBytes is split; a single oversize message is dropped', async () => {
    const opts = { maxFrameBytes: 64 * 1024 };
    const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id, opts)))) as [Node, Node];
    connect([a, b]);
    await fullyConnected([a, b]);
    const big = (i: number): Message => msg('a', 'b', i, { context: new Uint8Array(10 * 1024) });
    a.t.send('b', Array.from({ length: 20 }, (_, i) => big(i + 1)));
    a.t.send('b', [msg('a', 'b', 99, { context: new Uint8Array(100 * 1024) })]);
    await waitFor('20 messages', () => received(b).length === 20);
    assert.ok(a.t.stats().framesSent >= 4, 'split into several frames');
    assert.equal(a.t.stats().dropsOversize, 1);
    assert.deepEqual(received(b).map((m) => m.term), Array.from({ length: 20 }, (_, i) => i + 1));
    assert.deepEqual(a.t.connectedPeers(), ['b'], 'the link survived');
  });

  test('messages to an unconnected peer are dropped and counted', async () => {
    const a = await startNode('a');
    a.t.setPeers(new Map([['b', 'ws://127.0.0.1:1']]));
    a.t.send('b', [msg('a', 'b', 1), msg('a', 'b', 2)]);
    a.t.send('zzz', [msg('a', 'zzz', 1)]);
    assert.equal(a.t.stats().dropsUnconnected, 3);
    assert.equal(a.t.sendApp('b', { x: 1 }), false);
  });

  test('the application channel carries payloads both ways on the same socket', async () => {
    const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
    connect([a, b]);
    await fullyConnected([a, b]);
    const payload = { id: 9, op: 'acquire', name: 'x', data: new Uint8Array([1]), big: 2 ** 45 };
    assert.equal(b.t.sendApp('a', payload), true);
    assert.equal(a.t.sendApp('b', { reply: 9 }), true);
    await waitFor('app payloads', () => a.app.length === 1 && b.app.length === 1);
    assert.deepEqual(a.app[0], { from: 'b', payload });
    assert.deepEqual(b.app[0], { from: 'a', payload: { reply: 9 } });
    assert.equal(a.t.stats().connects, 1);
  });

  test('reconnects after the other side restarts, either side', async () => {
    const a = await startNode('a');
    let b = await startNode('b');
    connect([a, b]);
    await fullyConnected([a, b]);

    // The acceptor restarts on the same port: the dialer notices and redials.
    await b.t.stop();
    await waitFor('a sees b down', () => a.events.includes('down:b'));
    b = await startNode('b', { listenPort: b.port });
    b.t.setPeers(new Map([['a', a.url]]));
    await fullyConnected([a, b]);
    a.t.send('b', [msg('a', 'b', 5)]);
    await waitFor('delivery after restart', () => received(b).length === 1);

    // The dialer restarts: the acceptor takes the new link.
    await a.t.stop();
    await waitFor('b sees a down', () => b.events.includes('down:a'));
    const a2 = await startNode('a', { listenPort: a.port });
    a2.t.setPeers(new Map([['b', b.url]]));
    await fullyConnected([a2, b]);
    b.t.send('a', [msg('b', 'a', 6)]);
    await waitFor('delivery to the restarted dialer', () => received(a2).length === 1);
  });

  test('a changed peer URL re-links; the acceptor replaces the old socket', async () => {
    const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
    connect([a, b]);
    await fullyConnected([a, b]);
    // `a` learns a "new" URL for b (the same place, spelled differently): it drops the old
    // link and dials again.
    a.t.setPeers(new Map([['b', `${b.url}/`]]));
    await waitFor('relinked', () => a.t.stats().connects === 2 && a.t.connectedPeers().length === 1 && b.t.connectedPeers().length === 1);
    a.t.send('b', [msg('a', 'b', 1)]);
    await waitFor('delivery', () => received(b).length === 1);
  });

  test('removing a peer closes its link; adding it back reconnects', async () => {
    const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
    connect([a, b]);
    await fullyConnected([a, b]);
    b.t.setPeers(new Map());
    await waitFor('both down', () => a.events.includes('down:b') && b.events.includes('down:a'));
    // `a` keeps dialing and b refuses it as an unknown node until b learns of it again.
    await waitFor('refusal logged', () => warnings(b).some((l) => String(l.reason).includes('unknown node id "a"')));
    b.t.setPeers(new Map([['a', a.url]]));
    await fullyConnected([a, b]);
  });

  describe('the handshake refuses impostors and misconfigurations', () => {
    async function assertRefused(dialer: Node, acceptor: Node, reason: RegExp): Promise<void> {
      await waitFor(`refusal (${reason})`, () => warnings(acceptor).some((l) => reason.test(String(l.reason))));
      await waitFor('dialer told why', () => warnings(dialer).some((l) => l.msg === 'peer refused the link'));
      dialer.t.send(acceptor.id, [msg(dialer.id, acceptor.id, 1)]);
      await sleep(100);
      assert.deepEqual(acceptor.raft, [], 'the refused side never delivers Raft messages');
      assert.deepEqual(acceptor.events, []);
      assert.deepEqual(dialer.events, []);
      assert.ok(acceptor.t.stats().handshakeFailures > 0);
    }

    test('wrong secret', async () => {
      const a = await startNode('a', { secrets: ['guess'] });
      const b = await startNode('b');
      connect([a, b]);
      await assertRefused(a, b, /^wrong secret$/);
    });

    test('wrong cluster id', async () => {
      const a = await startNode('a', { clusterId: 'other-cluster' });
      const b = await startNode('b');
      connect([a, b]);
      await assertRefused(a, b, /wrong cluster id "other-cluster"/);
    });

    test('unknown node id', async () => {
      const a = await startNode('a');
      const b = await startNode('b');
      a.t.setPeers(new Map([['b', b.url]]));
      b.t.setPeers(new Map([['c', 'ws://127.0.0.1:1']]));
      await assertRefused(a, b, /unknown node id "a"/);
    });

    test('wrong target id', async () => {
      const a = await startNode('a');
      const c = await startNode('c');
      a.t.setPeers(new Map([['b', c.url]])); // a believes b lives where c does
      c.t.setPeers(new Map([['a', a.url]]));
      await assertRefused(a, c, /wrong target id "b"/);
    });

    test('an acceptor that cannot prove the secret is refused by the dialer', async () => {
      // A fake acceptor: follows the protocol but answers with a MAC made from a wrong secret.
      const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
      servers.push(wss);
      await new Promise((resolve) => wss.once('listening', resolve));
      const nonce = newNonce();
      wss.on('connection', (ws) => {
        ws.send(encodeFrame({ k: 'hello', v: PEER_PROTOCOL_VERSION, nonce }));
        ws.on('message', (data) => {
          const auth = parseAuth(decodeFrame(data as Buffer));
          if (auth) ws.send(encodeFrame({ k: 'welcome', mac: acceptorMac('not the secret', auth.nonce, CLUSTER, 'b', 'a') }));
          ws.send(encodeFrame({ k: 'r', m: [msg('b', 'a', 1)] }));
        });
      });
      const a = await startNode('a');
      a.t.setPeers(new Map([['b', `ws://127.0.0.1:${(wss.address() as { port: number }).port}`]]));
      await waitFor('dialer refusal', () => warnings(a).some((l) => /failed to prove the cluster secret/.test(String(l.reason))));
      await sleep(50);
      assert.deepEqual(a.raft, []);
      assert.deepEqual(a.events, []);
    });

    test('a peer of another peer protocol version is refused on both sides, naming both versions', async () => {
      const newer = PEER_PROTOCOL_VERSION + 1;
      // A newer acceptor: the dialer refuses it.
      const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
      servers.push(wss);
      await new Promise((resolve) => wss.once('listening', resolve));
      wss.on('connection', (ws) => ws.send(encodeFrame({ k: 'hello', v: newer, nonce: newNonce() })));
      const a = await startNode('a');
      a.t.setPeers(new Map([['b', `ws://127.0.0.1:${(wss.address() as { port: number }).port}`]]));
      const dialerSays = new RegExp(`peer protocol ${newer}, not ${PEER_PROTOCOL_VERSION}`);
      await waitFor('dialer refusal', () => warnings(a).some((l) => dialerSays.test(String(l.reason))));
      // A newer dialer: the acceptor refuses it.
      const b = await startNode('b');
      b.t.setPeers(new Map([['a', 'ws://127.0.0.1:1']]));
      const ws = new WebSocket(b.url);
      ws.on('message', (data) => {
        const hello = decodeFrame(data as Buffer) as { nonce: Uint8Array };
        const mac = dialerMac(SECRET, hello.nonce, CLUSTER, 'a', 'b');
        ws.send(encodeFrame({ k: 'auth', v: newer, clusterId: CLUSTER, from: 'a', to: 'b', nonce: newNonce(), mac }));
      });
      await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
      const acceptorSays = new RegExp(`peer protocol ${newer}, expected ${PEER_PROTOCOL_VERSION}`);
      assert.ok(warnings(b).some((l) => acceptorSays.test(String(l.reason))), JSON.stringify(warnings(b)));
      assert.deepEqual(b.raft, []);
    });

    test('a client that skips the handshake gets nothing through and is timed out', async () => {
      const b = await startNode('b', { handshakeTimeoutMs: 200 });
      b.t.setPeers(new Map([['a', 'ws://127.0.0.1:1']]));
      const ws = new WebSocket(b.url);
      await new Promise((resolve) => ws.once('open', resolve));
      ws.send(encodeFrame({ k: 'r', m: [msg('a', 'b', 1)] }));
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      assert.equal(await closed, 4401);
      assert.deepEqual(b.raft, []);
      // A silent one is cut when the handshake times out.
      const silent = new WebSocket(b.url);
      await new Promise((resolve) => silent.once('close', resolve));
      assert.deepEqual(b.events, []);
    });

    test('a dialer that signs for another identity is refused', async () => {
      const b = await startNode('b');
      b.t.setPeers(new Map([['a', 'ws://127.0.0.1:1']]));
      const ws = new WebSocket(b.url);
      ws.on('message', (data) => {
        const hello = decodeFrame(data as Buffer) as { nonce: Uint8Array };
        // A MAC computed with the right secret but for "c", presented as "a".
        const mac = dialerMac(SECRET, hello.nonce, CLUSTER, 'c', 'b');
        ws.send(encodeFrame({ k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId: CLUSTER, from: 'a', to: 'b', nonce: newNonce(), mac }));
      });
      const code = await new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
      assert.equal(code, 4401);
      assert.ok(warnings(b).some((l) => l.reason === 'wrong secret'));
    });
  });

  describe('every incoming frame is validated', () => {
    test('invalid Raft messages are dropped, valid ones in the same frame delivered', async () => {
      const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
      connect([a, b]);
      await fullyConnected([a, b]);
      const forged = { ...msg('a', 'b', 1), from: 'c' }; // claims to come from another node
      const misdirected = msg('a', 'c', 1);
      const malformed = { ...msg('a', 'b', 1), term: 'one' } as unknown as Message;
      a.t.send('b', [forged, msg('a', 'b', 2), misdirected, malformed, msg('a', 'b', 3)]);
      await waitFor('valid messages', () => received(b).length === 2);
      await sleep(20);
      assert.deepEqual(received(b).map((m) => m.term), [2, 3]);
      assert.equal(b.t.stats().invalidMessages, 3);
      assert.ok(warnings(b).some((l) => /authenticated as "a"/.test(String(l.reason))));
      assert.deepEqual(b.t.connectedPeers(), ['a'], 'the link stays up');
    });

    test('a frame over the receiver limit closes the link, which comes back', async () => {
      const a = await startNode('a', { maxFrameBytes: 1024 * 1024 });
      const b = await startNode('b', { maxFrameBytes: 16 * 1024 });
      connect([a, b]);
      await fullyConnected([a, b]);
      a.t.send('b', [msg('a', 'b', 1, { context: new Uint8Array(64 * 1024) })]);
      await waitFor('link dropped', () => b.events.includes('down:a'));
      // Both ends: the acceptor marks the link up before the dialer has read the welcome.
      await waitFor('link back', () => b.events.filter((e) => e === 'up:a').length === 2 && a.events.filter((e) => e === 'up:b').length === 2);
      a.t.send('b', [msg('a', 'b', 2)]);
      await waitFor('small message delivered', () => received(b).length === 1);
      assert.equal(received(b)[0]!.term, 2);
    });

    test('a listener that throws does not break the link', async () => {
      const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
      let calls = 0;
      b.t.on('raft', () => {
        calls += 1;
        throw new Error('listener bug');
      });
      connect([a, b]);
      await fullyConnected([a, b]);
      a.t.send('b', [msg('a', 'b', 1)]);
      await waitFor('first', () => calls === 1);
      await new Promise((resolve) => setImmediate(resolve));
      a.t.send('b', [msg('a', 'b', 2)]);
      await waitFor('second', () => calls === 2);
      assert.ok(b.lines.some((l) => l.msg === 'peer transport listener threw'));
    });
  });

  describe('a peer that stops reading', () => {
    /** A fake acceptor for `a` that completes the handshake, then never reads again. */
    async function stalledAcceptor(): Promise<{ url: string; paused: Promise<void> }> {
      const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
      servers.push(wss);
      await new Promise((resolve) => wss.once('listening', resolve));
      let markPaused!: () => void;
      const paused = new Promise<void>((resolve) => (markPaused = resolve));
      wss.on('connection', (ws, req) => {
        const nonce = newNonce();
        ws.send(encodeFrame({ k: 'hello', v: PEER_PROTOCOL_VERSION, nonce }));
        ws.once('message', (data) => {
          const auth = parseAuth(decodeFrame(data as Buffer))!;
          ws.send(encodeFrame({ k: 'welcome', mac: acceptorMac(SECRET, auth.nonce, CLUSTER, 'b', 'a') }));
          (req.socket as Socket).pause();
          markPaused();
        });
      });
      return { url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`, paused };
    }

    test('Raft messages are dropped once the socket buffer passes the bound', async () => {
      const fake = await stalledAcceptor();
      const a = await startNode('a', { maxBufferedBytes: 512 * 1024, pingIntervalMs: 60_000 });
      a.t.setPeers(new Map([['b', fake.url]]));
      await fake.paused;
      await waitFor('link up', () => a.t.connectedPeers().length === 1);
      const chunk = new Uint8Array(256 * 1024);
      for (let turn = 0; turn < 400 && a.t.stats().dropsBackpressure === 0; turn++) {
        a.t.send('b', [msg('a', 'b', turn, { context: chunk })]);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const s = a.t.stats();
      assert.ok(s.dropsBackpressure > 0, 'some messages were dropped');
      assert.ok(s.framesSent < 400, 'sending stopped growing the buffer');
    });

    test('a peer that stops answering pings is dropped', async () => {
      const fake = await stalledAcceptor();
      const a = await startNode('a', { pingIntervalMs: 20 });
      a.t.setPeers(new Map([['b', fake.url]]));
      await waitFor('link up', () => a.events.includes('up:b'));
      await waitFor('link dropped as unresponsive', () => a.events.includes('down:b'), 3000);
      assert.ok(warnings(a).some((l) => l.msg === 'peer unresponsive; dropping link'));
    });
  });

  test('stop() closes links, stops redialing and frees the port', async () => {
    const [a, b] = (await Promise.all(['a', 'b'].map((id) => startNode(id)))) as [Node, Node];
    connect([a, b]);
    await fullyConnected([a, b]);
    await a.t.stop();
    assert.deepEqual(a.events, ['up:b', 'down:b']);
    await waitFor('b sees a down', () => b.events.includes('down:a'));
    const connects = a.t.stats().connects;
    await sleep(150);
    assert.equal(a.t.stats().connects, connects, 'no redial after stop');
    const again = await startNode('a', { listenPort: a.port });
    assert.equal(again.port, a.port);
  });
});
