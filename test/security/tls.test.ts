// TLS on both ports, in process with real sockets: peers over wss with mutual TLS, and the
// client port over wss, with certificates made by openssl for this run.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import type { Message, NodeId } from '../../src/raft/types.js';
import { ClientServer } from '../../src/transport/client-server.js';
import type { PeerTransport, PeerTransportOptions } from '../../src/transport/peer.js';
import { rpc, RpcError } from '../../src/protocol/rpc.js';
import { loadTlsMaterial, type TlsMaterial } from '../../src/transport/tls.js';
import { WARN, captureLogger, testPeerTransport, waitFor, type LogLine } from '../transport/helpers.js';
import { makePki, type TestPki } from './certs.js';

const SECRET = 'tls-test-secret-0123456789';

let pki: TestPki;
const running: { stop(): Promise<void> }[] = [];

before(() => {
  pki = makePki();
});
after(() => pki.remove());
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()));
});

function material(name: string, opts: { ca?: string; requireClientCert?: boolean; rogue?: boolean } = {}): TlsMaterial {
  const files = opts.rogue ? pki.issueRogue(name) : pki.issue(name);
  return loadTlsMaterial({ ...files, ca: opts.ca ?? pki.ca, requireClientCert: opts.requireClientCert ?? true }, name);
}

interface Peer {
  readonly id: NodeId;
  readonly t: PeerTransport;
  readonly url: string;
  readonly lines: LogLine[];
  readonly got: Message[];
}

async function peer(id: NodeId, tls: TlsMaterial | undefined, overrides: Partial<PeerTransportOptions> = {}): Promise<Peer> {
  const { t, lines } = testPeerTransport({ clusterId: 'tls-test', selfId: id, secrets: [SECRET], ...(tls ? { tls } : {}), ...overrides });
  const got: Message[] = [];
  t.on('raft', (_from, msgs) => got.push(...msgs));
  const { port } = await t.start();
  running.push(t);
  return { id, t, url: `${tls ? 'wss' : 'ws'}://127.0.0.1:${port}`, lines, got };
}

const heartbeat = (from: NodeId, to: NodeId): Message => ({ type: 'heartbeat', from, to, term: 1, commit: 0 });

function warned(p: Peer, pattern: RegExp): boolean {
  return p.lines.some((l) => l.level >= WARN && pattern.test(`${l.msg} ${String(l['reason'] ?? '')}`));
}

describe('peer links over TLS', () => {
  test('mutual TLS: two nodes with certificates from the cluster CA link up and talk', async () => {
    const a = await peer('a', material('a'));
    const b = await peer('b', material('b'));
    a.t.setPeers(new Map([['b', b.url]]));
    b.t.setPeers(new Map([['a', a.url]]));
    await waitFor('link up', () => a.t.connectedPeers().includes('b') && b.t.connectedPeers().includes('a'));
    a.t.send('b', [heartbeat('a', 'b')]);
    b.t.send('a', [heartbeat('b', 'a')]);
    await waitFor('messages both ways', () => a.got.length === 1 && b.got.length === 1);
  });

  test('a dialer without a client certificate is refused by an acceptor that requires one, and it is logged', async () => {
    const b = await peer('b', material('b'));
    b.t.setPeers(new Map([['a', 'wss://127.0.0.1:1']]));
    // Trusts the CA (so it would accept b) but presents no certificate of its own.
    const ws = new WebSocket(b.url, { ca: pki.read(pki.ca) });
    const outcome = await new Promise<string>((resolve) => {
      ws.once('open', () => resolve('open'));
      ws.once('error', () => resolve('error'));
      ws.once('close', () => resolve('closed'));
    });
    assert.notEqual(outcome, 'open');
    await waitFor('acceptor logs the TLS refusal', () => warned(b, /refused a TLS connection on the peer port/));
    await sleep(100);
    assert.deepEqual(b.t.connectedPeers(), []);
    assert.deepEqual(b.got, []);
  });

  test('a dialer whose certificate comes from another CA is refused, even knowing the secret', async () => {
    const b = await peer('b', material('b'));
    b.t.setPeers(new Map([['a', 'wss://127.0.0.1:1']]));
    const a = await peer('a', material('a', { rogue: true }));
    a.t.setPeers(new Map([['b', b.url]]));
    await waitFor('acceptor logs the TLS refusal', () => warned(b, /refused a TLS connection/));
    a.t.send('b', [heartbeat('a', 'b')]);
    await sleep(100);
    assert.deepEqual(b.t.connectedPeers(), []);
    assert.deepEqual(b.got, []);
  });

  test('a dialer refuses an acceptor whose certificate it cannot verify, and says so', async () => {
    const b = await peer('b', material('b', { rogue: true, ca: pki.rogueCa, requireClientCert: false }));
    b.t.setPeers(new Map([['a', 'wss://127.0.0.1:1']]));
    const a = await peer('a', material('a'));
    a.t.setPeers(new Map([['b', b.url]]));
    await waitFor('dialer warns', () => warned(a, /peer refused the link.*TLS/));
    assert.deepEqual(a.t.connectedPeers(), []);
  });

  test('a plain ws dialer cannot reach a wss acceptor', async () => {
    const b = await peer('b', material('b'));
    b.t.setPeers(new Map([['a', 'ws://127.0.0.1:1']]));
    const a = await peer('a', undefined);
    a.t.setPeers(new Map([['b', b.url.replace('wss:', 'ws:')]]));
    await sleep(300);
    assert.deepEqual(b.t.connectedPeers(), []);
    assert.deepEqual(a.t.connectedPeers(), []);
  });
});

describe('the client port over TLS', () => {
  const PORT_STATUS = { id: 'tls-port', role: 'follower', term: 0, leader: null, commitIndex: 0, appliedIndex: 0, members: [], pid: 0 } as const;

  async function clientPort(tls: TlsMaterial): Promise<{ url: string; lines: LogLine[] }> {
    const { logger, lines } = captureLogger();
    const server = new ClientServer({
      host: '127.0.0.1',
      port: 0,
      logger,
      tls,
      // Answers every request with a status naming this port, as a node's status reads.
      onConnection: (conn) => conn.on('request', (req) => conn.send({ id: req.id, ok: true, result: PORT_STATUS })),
    });
    const { port } = await server.start();
    running.push(server);
    return { url: `wss://127.0.0.1:${port}`, lines };
  }

  test('a client that trusts the CA is served; one that does not is refused by its own TLS', async () => {
    const { url } = await clientPort(material('n1', { requireClientCert: false }));
    assert.deepEqual(await rpc(url, { op: 'status' }, 2000, { ca: pki.read(pki.ca) }), PORT_STATUS);
    await assert.rejects(rpc(url, { op: 'status' }, 2000), (e: unknown) => e instanceof RpcError && /certificate/i.test(e.message));
    await assert.rejects(rpc(url, { op: 'status' }, 2000, { ca: pki.read(pki.rogueCa) }), /certificate/i);
  });

  test('with requireClientCert, a client certificate from the CA is needed', async () => {
    const { url, lines } = await clientPort(material('n1'));
    const me = pki.issue('client-1');
    assert.deepEqual(await rpc(url, { op: 'status' }, 2000, { ca: pki.read(pki.ca), cert: pki.read(me.cert), key: pki.read(me.key) }), PORT_STATUS);
    await assert.rejects(rpc(url, { op: 'status' }, 2000, { ca: pki.read(pki.ca) }));
    const rogue = pki.issueRogue('client-2');
    await assert.rejects(rpc(url, { op: 'status' }, 2000, { ca: pki.read(pki.ca), cert: pki.read(rogue.cert), key: pki.read(rogue.key) }));
    await waitFor('refusal logged', () => lines.some((l) => /refused a TLS connection on the client port/.test(l.msg)));
  });

  test('plain ws to a wss port gets nothing', async () => {
    const { url } = await clientPort(material('n1', { requireClientCert: false }));
    const ws = new WebSocket(url.replace('wss:', 'ws:'));
    const outcome = await new Promise<string>((resolve) => {
      ws.once('open', () => resolve('open'));
      ws.once('error', () => resolve('error'));
    });
    assert.equal(outcome, 'error');
    ws.terminate();
  });
});
