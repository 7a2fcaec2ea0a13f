// No frame from the network ends a node: handshake frames on the peer port and first frames
// on the client port, with every field at its longest (ids up to the 256 characters the
// parsers allow, in multi-byte characters so they are longer still in bytes) and every
// field of the wrong type. Against real processes: after each volley every node must still
// run and serve. (Before this was fixed, an auth frame with a ~200-character `to` made the
// acceptor close with a reason over the 123 bytes ws allows, and the RangeError it threw in
// a message listener ended the process.)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { encodeFrame } from '../../src/protocol/codec.js';
import { NONCE_BYTES, PEER_PROTOCOL_VERSION } from '../../src/transport/peer-handshake.js';
import { TestCluster } from '../support/cluster.js';
import { openSocket, RawClient } from '../support/raw-client.js';

const LONG = 'x'.repeat(200);
const LONGEST = '\u20ac'.repeat(256); // 256 characters, 768 bytes of UTF-8

/** Auth frames an outsider can send: long and type-confused fields, each alone. */
function hostileAuthFrames(clusterId: string, target: string): unknown[] {
  const good = { k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId, from: 'n1', to: target, nonce: new Uint8Array(NONCE_BYTES), mac: new Uint8Array(32) };
  const frames: unknown[] = [];
  for (const value of [LONG, LONGEST, 'n1' + LONG]) {
    frames.push({ ...good, to: value }, { ...good, from: value }, { ...good, clusterId: value }, { ...good, to: value, from: value, clusterId: value });
  }
  for (const field of ['k', 'v', 'clusterId', 'from', 'to', 'nonce', 'mac']) {
    for (const value of [null, 1e308, -1, true, [], {}, [LONG], { a: LONGEST }, new Uint8Array(300), LONGEST]) {
      frames.push({ ...good, [field]: value });
    }
  }
  frames.push({ ...good, v: 2 ** 53 }, { ...good, v: -(2 ** 53) }, { ...good, v: 1.5 }, [good], 'auth', 7, null);
  return frames;
}

/** Send `frame` as the first frame after the acceptor's hello; resolve when the node answers
 *  by closing (or after a while, if it keeps the socket). */
function sendAfterHello(url: string, frame: unknown): Promise<void> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  ws.on('error', () => {});
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => ws.terminate(), 3000);
    // Listening from the start: the hello may arrive in the same read as the upgrade.
    ws.once('message', () => ws.send(encodeFrame(frame)));
    ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('no frame ends a node', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ extraConfig: { auth: { tokens: [{ name: 'ops', token: 'ops-token-0123456789', admin: true }] } }, credentials: { token: 'ops-token-0123456789' } });
  });
  after(async () => {
    await c.stop();
  });

  async function assertAllServing(): Promise<void> {
    for (const n of c.nodes) {
      assert.ok(c.procs.has(n.id), `node ${n.id} exited:\n${c.logOf(n.id).slice(-1500)}`);
      const s = await c.status(n.id);
      assert.ok(s, `node ${n.id} does not answer status`);
    }
    await c.waitForLeader();
  }

  test('auth handshake frames with long and type-confused fields on every peer port', async () => {
    for (const n of c.nodes) {
      const frames = hostileAuthFrames('palisade-test', n.id);
      // A few at a time: the acceptor caps handshakes in flight, and this is about content.
      for (let i = 0; i < frames.length; i += 8) await Promise.all(frames.slice(i, i + 8).map((f) => sendAfterHello(n.peerUrl, f)));
      await assertAllServing();
    }
  });

  test('hello and request frames with long and type-confused fields on every client port', async () => {
    const bodies: Record<string, unknown>[] = [];
    for (const value of [LONG, LONGEST, null, 1e308, [], {}, [LONG], new Uint8Array(300), true]) {
      bodies.push({ op: 'hello', version: value, token: value }, { op: 'hello', version: 1, token: value }, { op: value }, { op: 'acquire', session: value, seq: value, name: value, mode: value });
      bodies.push({ op: 'status', [LONGEST]: value });
    }
    for (const n of c.nodes) {
      for (const body of bodies) {
        const client = await RawClient.connect(n.clientUrl);
        client.ws.on('error', () => {});
        await client.call(body, 2000).catch(() => undefined);
        client.ws.terminate();
      }
      for (const id of [LONGEST, -1, 2 ** 64, null, [1], { id: 1 }]) {
        const ws = await openSocket(n.clientUrl, { perMessageDeflate: false });
        ws.send(encodeFrame({ id, op: LONGEST }));
        await new Promise((r) => setTimeout(r, 20));
        ws.terminate();
      }
      await assertAllServing();
    }
  });
});
