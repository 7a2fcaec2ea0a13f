import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { CLOSE_CODES, type Request, type ServerFrame } from '../../src/protocol/client-protocol.js';
import { ClientServer, type ClientConnection, type ClientServerOptions } from '../../src/transport/client-server.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { WARN, captureLogger, waitFor, type LogLine } from './helpers.js';

interface Harness {
  readonly server: ClientServer;
  readonly url: string;
  readonly conns: ClientConnection[];
  readonly requests: Request[];
  readonly closes: { id: number; code: number }[];
  readonly lines: LogLine[];
}

const servers: ClientServer[] = [];
const clients: WebSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** A server whose handler answers every request with {op} as its result. */
async function startServer(overrides: Partial<ClientServerOptions> = {}): Promise<Harness> {
  const { logger, lines } = captureLogger();
  const conns: ClientConnection[] = [];
  const requests: Request[] = [];
  const closes: { id: number; code: number }[] = [];
  const server = new ClientServer({
    host: '127.0.0.1',
    port: 0,
    logger,
    onConnection(conn) {
      conns.push(conn);
      conn.on('request', (req) => {
        requests.push(req);
        conn.send({ id: req.id, ok: true, result: { op: req.op } });
      });
      conn.on('close', (code) => closes.push({ id: conn.id, code }));
    },
    ...overrides,
  });
  const { port } = await server.start();
  servers.push(server);
  return { server, url: `ws://127.0.0.1:${port}`, conns, requests, closes, lines };
}

/** A minimal client: frames in arrival order, and how the connection closed. */
class TestClient {
  readonly frames: unknown[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.frames.push(decodeFrame(data as Buffer)));
    this.closed = new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  static async connect(url: string): Promise<TestClient> {
    const ws = new WebSocket(url, { maxPayload: 64 * 1024 * 1024 });
    clients.push(ws);
    ws.on('error', () => undefined);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return new TestClient(ws);
  }

  send(frame: unknown): void {
    this.ws.send(encodeFrame(frame));
  }

  sendRaw(bytes: Uint8Array | string): void {
    this.ws.send(bytes);
  }

  async next(): Promise<unknown> {
    const seen = this.frames.length;
    await waitFor('a frame from the server', () => this.frames.length > seen);
    return this.frames[seen];
  }

  async request(frame: unknown): Promise<unknown> {
    const pending = this.next();
    this.send(frame);
    return pending;
  }
}

describe('ClientServer', () => {
  test('hands validated requests to the handler and carries responses and events back', async () => {
    const h = await startServer();
    const c = await TestClient.connect(h.url);
    const response = await c.request({ id: 1, op: 'acquire', session: 5, seq: 1, name: 'x', mode: 'exclusive', wait: false, junk: 'dropped' });
    assert.deepEqual(response, { id: 1, ok: true, result: { op: 'acquire' } });
    assert.deepEqual(h.requests, [{ id: 1, op: 'acquire', session: 5, seq: 1, name: 'x', mode: 'exclusive', wait: false }]);
    const conn = h.conns[0]!;
    assert.equal(typeof conn.id, 'number');
    assert.equal(conn.remoteAddress, '127.0.0.1');
    const event: ServerFrame = { event: 'granted', index: 2 ** 40, session: 5, name: 'x', token: 2 ** 40, mode: 'exclusive' };
    assert.equal(conn.send(event), true);
    assert.deepEqual(await c.next(), event);
  });

  test('invalid requests with a readable id get an error response and the connection stays up', async () => {
    const h = await startServer();
    const c = await TestClient.connect(h.url);
    const cases: [unknown, string][] = [
      [{ id: 1 }, 'BAD_FRAME'],
      [{ id: 2, op: 'fly' }, 'UNKNOWN_OP'],
      [{ id: 3, op: 'keepAlive', session: 'abc' }, 'INVALID_ARGUMENT'],
      [{ id: 4, op: 'acquire', session: 1, seq: 1, name: 'x'.repeat(5000), mode: 'exclusive', wait: true }, 'INVALID_ARGUMENT'],
    ];
    for (const [frame, code] of cases) {
      const r = (await c.request(frame)) as { id: number; ok: boolean; error: { code: string; message: string } };
      assert.equal(r.ok, false);
      assert.equal(r.id, (frame as { id: number }).id);
      assert.equal(r.error.code, code);
      assert.ok(r.error.message.length > 0);
    }
    assert.deepEqual(await c.request({ id: 5, op: 'status' }), { id: 5, ok: true, result: { op: 'status' } });
    assert.deepEqual(h.requests.map((r) => r.id), [5], 'the handler saw only the valid request');
    assert.equal(h.server.stats().invalidRequests, 4);
  });

  test('garbage closes that connection only; the server keeps serving others', async () => {
    const h = await startServer();
    const bystander = await TestClient.connect(h.url);
    const garbage: [Uint8Array | string, number][] = [
      [new Uint8Array([0xc1, 0x00]), CLOSE_CODES.BAD_FRAME], // not msgpack
      [encodeFrame([1, 2, 3]), CLOSE_CODES.BAD_FRAME], // not a map
      [encodeFrame({ op: 'status' }), CLOSE_CODES.BAD_FRAME], // no id to answer to
      [new Uint8Array([0xd6, 0xff, 0, 0, 0, 0]), CLOSE_CODES.BAD_FRAME], // an extension type
      ['{"id":1,"op":"status"}', CLOSE_CODES.UNSUPPORTED_DATA], // a text frame
    ];
    for (const [bytes, code] of garbage) {
      const c = await TestClient.connect(h.url);
      c.sendRaw(bytes);
      const closed = await c.closed;
      assert.equal(closed.code, code);
      if (code === CLOSE_CODES.BAD_FRAME) assert.match(closed.reason, /^BAD_FRAME/);
    }
    assert.deepEqual(await bystander.request({ id: 1, op: 'status' }), { id: 1, ok: true, result: { op: 'status' } });
    assert.equal(h.server.stats().badFrameCloses, garbage.length);
  });

  test('an oversize frame is answered FRAME_TOO_LARGE when its id is readable, then closed', async () => {
    const h = await startServer({ maxFrameBytes: 1024 });
    const c = await TestClient.connect(h.url);
    c.send({ id: 77, op: 'put', session: 1, seq: 1, key: 'k', value: new Uint8Array(1500) });
    const r = (await c.next()) as { id: number; ok: boolean; error: { code: string } };
    assert.deepEqual([r.id, r.ok, r.error.code], [77, false, 'FRAME_TOO_LARGE']);
    assert.equal((await c.closed).code, CLOSE_CODES.FRAME_TOO_LARGE);

    // Far beyond the limit, ws itself refuses the frame: a close with 1009, no answer.
    const huge = await TestClient.connect(h.url);
    huge.send({ id: 78, op: 'put', session: 1, seq: 1, key: 'k', value: new Uint8Array(1024 * 1024) });
    assert.equal((await huge.closed).code, CLOSE_CODES.FRAME_TOO_LARGE);
    assert.deepEqual(huge.frames, []);

    const other = await TestClient.connect(h.url);
    assert.deepEqual(await other.request({ id: 1, op: 'status' }), { id: 1, ok: true, result: { op: 'status' } });
    assert.equal(h.server.stats().oversizeFrames, 1);
  });

  test('a client that does not read its responses is disconnected', async () => {
    const h = await startServer({ maxBufferedBytes: 256 * 1024 });
    const slow = await TestClient.connect(h.url);
    const fast = await TestClient.connect(h.url);
    await waitFor('both connected', () => h.conns.length === 2);
    (slow.ws as unknown as { _socket: Socket })._socket.pause();
    const conn = h.conns[0]!;
    const event: ServerFrame = { event: 'kvChanged', index: 1, key: 'k', value: new Uint8Array(64 * 1024), revision: 1 };
    let sent = 0;
    while (conn.send(event)) {
      sent += 1;
      assert.ok(sent < 10_000, 'the server never gave up on the slow client');
      if (sent % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor('close reported', () => h.closes.some((c) => c.id === conn.id));
    assert.equal(conn.isOpen, false);
    assert.equal(conn.send(event), false);
    assert.equal(h.server.stats().slowConsumerDisconnects, 1);
    assert.ok(h.lines.some((l) => l.level >= WARN && l.msg === 'client does not read its responses; disconnecting'));
    assert.deepEqual(await fast.request({ id: 1, op: 'status' }), { id: 1, ok: true, result: { op: 'status' } });
  });

  test('a throwing request handler yields an INTERNAL error, not a dead node', async () => {
    const h = await startServer({
      onConnection(conn) {
        conn.on('request', () => {
          throw new Error('handler bug');
        });
      },
    });
    const c = await TestClient.connect(h.url);
    const r = (await c.request({ id: 9, op: 'status' })) as { error: { code: string } };
    assert.equal(r.error.code, 'INTERNAL');
    const again = (await c.request({ id: 10, op: 'status' })) as { id: number };
    assert.equal(again.id, 10);
  });

  test('close() from the server and stop() reach the client with their codes', async () => {
    const h = await startServer();
    const a = await TestClient.connect(h.url);
    const b = await TestClient.connect(h.url);
    await waitFor('both connected', () => h.conns.length === 2);
    h.conns[0]!.close(4000, 'version mismatch');
    assert.deepEqual(await a.closed, { code: 4000, reason: 'version mismatch' });
    await h.server.stop();
    assert.equal((await b.closed).code, CLOSE_CODES.GOING_AWAY);
    assert.equal(h.server.connectionCount(), 0);
    assert.deepEqual(h.closes.map((c) => c.code).sort(), [1001, 4000]);
  });

  test('fuzz over the wire: arbitrary frames never bring the server down', async () => {
    const h = await startServer();
    const frames = fc.sample(
      fc.oneof(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.anything({ maxDepth: 3 }).map((x) => encodeOrNull(x)),
        fc.record({ id: fc.nat(), op: fc.constantFrom('acquire', 'put', 'release', 'nope'), session: fc.anything(), name: fc.anything() }).map((x) => encodeOrNull(x)),
      ),
      { numRuns: 200, seed: 42 },
    );
    let c = await TestClient.connect(h.url);
    let answered = 0;
    for (const bytes of frames) {
      if (!bytes) continue;
      if (c.ws.readyState !== WebSocket.OPEN) c = await TestClient.connect(h.url);
      const before = c.frames.length;
      c.sendRaw(bytes);
      await Promise.race([waitFor('answer', () => c.frames.length > before, 2000), c.closed]);
      answered += c.frames.length - before;
    }
    assert.ok(answered > 0);
    const last = await TestClient.connect(h.url);
    assert.deepEqual(await last.request({ id: 1, op: 'status' }), { id: 1, ok: true, result: { op: 'status' } });
  });
});

function encodeOrNull(x: unknown): Uint8Array | null {
  try {
    return encodeFrame(x);
  } catch {
    return null;
  }
}
