// The HTTP/JSON API is bounded like the websocket port, against a real node (auth off, so
// any client that reaches the port may do all of this) with a small per-address cap
// (limits.maxConnectionsPerAddress = 4):
//   - an event stream (watch, observe) and a long-poll acquire hold a connection slot of
//     their address while open, counted with the address's websockets: beyond the cap the
//     node answers 429 LIMIT_EXCEEDED (JSON) at once, and a websocket is refused (1013);
//   - long polls pipelined on ONE keep-alive connection count one slot each;
//   - a client from another address is served throughout (session, acquire, a stream);
//   - requests pipelined on one connection are worked on at most MAX_IN_FLIGHT at a time:
//     the next is answered 429 and the connection closed after it, the rest not worked on
//     (HTTP answers in order, so they gain nothing), and the address's new connections are
//     destroyed on arrival for the 1 s of its Retry-After;
//   - a request body the node does not read (a GET's, or any request answered before its
//     body is read: an unknown path, a refusal) is not drained: the connection is closed
//     after the answer.
// Before the fix, every stream and long poll was held whatever the address had open: 6
// streams from one address with a cap of 4, and 12 pipelined long polls on one socket,
// were all served and held; and the node read and discarded a GET's 100 GB body for the
// 10 s of its request deadline (6.5 GB on loopback) before closing the connection; and 500
// reads pipelined on one connection were all in flight at once (later: all answered, 436
// of them with a 429 each).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { TestCluster } from '../support/cluster.js';
import { call, httpBase } from '../http/http-client.js';
import { MAX_IN_FLIGHT } from '../../src/server/api/http/server.js';
import { HTTP_KEEPALIVE_MS } from '../../src/transport/tls.js';

const CAP = 4;

interface Stream {
  readonly status: number;
  readonly body: string;
  readonly req: ClientRequest;
  readonly res: IncomingMessage;
}

/** GET `path` from `localAddress` on its own socket; resolves with the status once the
 *  first chunk of the body is in (a stream's `retry:`/snapshot, or a whole error). */
function openStream(base: string, path: string, localAddress: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { localAddress, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.once('data', (d: string) => {
        body += d;
        resolve({ status: res.statusCode ?? 0, body, req, res });
      });
      res.on('error', () => {});
    });
    req.end();
  });
}

/** The close code a websocket from `localAddress` gets within 2 s (0: still open). */
function websocketFate(url: string, localAddress: string): Promise<number> {
  const ws = new WebSocket(url, { localAddress, perMessageDeflate: false });
  ws.on('error', () => {});
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      ws.terminate();
      resolve(0);
    }, 2_000);
    ws.on('close', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

/** `one` request sent `n` times at once on one connection from `localAddress`: the answers'
 *  statuses in order, and their text. */
async function pipelined(base: string, localAddress: string, one: string, n: number): Promise<{ statuses: number[]; text: string }> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(base).port), localAddress });
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (text += d));
  socket.write(one.repeat(n));
  try {
    const statuses = await new Promise<number[]>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`only ${text.match(/HTTP\/1\.1 /g)?.length ?? 0} of ${n} answers:\n${text.slice(0, 2000)}`)), 20_000);
      socket.on('data', () => {
        const seen = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
        if (seen.length === n) {
          clearTimeout(t);
          resolve(seen);
        }
      });
    });
    return { statuses, text };
  } finally {
    socket.destroy();
  }
}

/** Writes `one` `n` times on one connection from `localAddress`; resolves with the statuses
 *  answered once the node closes the connection (rejects if it has not within 20 s). */
async function pipelinedUntilClosed(base: string, localAddress: string, one: string, n: number): Promise<{ statuses: number[]; text: string }> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(base).port), localAddress });
  let text = '';
  socket.setEncoding('utf8');
  socket.on('error', () => {}); // a reset after the last answer: what was read is what counts
  socket.on('data', (d: string) => (text += d));
  socket.write(one.repeat(n));
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`not closed after ${text.match(/HTTP\/1\.1 /g)?.length ?? 0} of ${n} answers:\n${text.slice(-2000)}`)), 20_000);
      socket.on('close', () => {
        clearTimeout(t);
        resolve();
      });
    });
    return { statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), text };
  } finally {
    socket.destroy();
  }
}

describe('HTTP API: streams and long polls count against the per-address cap', { timeout: 60_000 }, () => {
  let c: TestCluster;
  let base: string;
  before(async () => {
    c = await TestCluster.started({ nodes: 1, extraConfig: { limits: { maxConnectionsPerAddress: CAP } } });
    base = httpBase(c.nodes[0]!.clientUrl);
  });
  after(async () => {
    await c?.stop();
  });

  test('event streams beyond the cap get 429 at once; an honest address is served; a closed stream frees its slot', async () => {
    const attacker = '127.0.0.3';
    const streams: Stream[] = [];
    for (let i = 0; i < CAP; i++) {
      const s = await openStream(base, i % 2 ? '/v1/election/observe?election=e' : '/v1/kv/watch?prefix=p/', attacker);
      assert.equal(s.status, 200, s.body);
      streams.push(s);
    }
    const refused = await openStream(base, '/v1/kv/watch?prefix=p/', attacker);
    assert.equal(refused.status, 429, `stream ${CAP + 1} from one address: ${refused.status} ${refused.body}`);
    assert.equal(refused.res.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(JSON.parse(refused.body).error.code, 'LIMIT_EXCEEDED');
    // The same count as websockets: the address has no room for one either.
    assert.equal(await websocketFate(c.nodes[0]!.clientUrl, attacker), 1013);

    // Another address is served while the attacker's streams stay open.
    const honest = '127.0.0.4';
    const session = await new Promise<number>((resolve, reject) => {
      const req = request(base + '/v1/session/open', { method: 'POST', localAddress: honest, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let t = '';
        res.on('data', (d: Buffer) => (t += d.toString()));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(t).session as number) : reject(new Error(t))));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ ttlMs: 10_000 }));
    });
    assert.equal((await call(base, 'POST', '/v1/lock/acquire', { session, seq: 1, name: 'honest/x' })).body.status, 'granted');
    const honestStream = await openStream(base, '/v1/kv/watch?prefix=honest/', honest);
    assert.equal(honestStream.status, 200);
    honestStream.req.destroy();

    // Closing a stream gives its slot back.
    const gone = new Promise<void>((r) => streams[0]!.res.once('close', () => r()));
    streams[0]!.req.destroy();
    await gone;
    let again: Stream | null = null;
    for (let i = 0; i < 50 && again?.status !== 200; i++) {
      again?.req.destroy();
      again = await openStream(base, '/v1/kv/watch?prefix=p/', attacker);
    }
    assert.equal(again?.status, 200, 'a freed slot is usable again');
    again!.req.destroy();
    for (const s of streams) s.req.destroy();
  });

  test('long polls pipelined on one keep-alive connection take one slot each', async () => {
    const holder = (await call(base, 'POST', '/v1/session/open', { ttlMs: 30_000 })).body.session as number;
    const waiter = (await call(base, 'POST', '/v1/session/open', { ttlMs: 30_000 })).body.session as number;
    assert.equal((await call(base, 'POST', '/v1/lock/acquire', { session: holder, seq: 1, name: 'lp/x' })).body.status, 'granted');
    const n = 12;
    const body = JSON.stringify({ session: waiter, seq: 1, name: 'lp/x', waitMs: 2_000 });
    const one = `POST /v1/lock/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const { statuses, text } = await pipelined(base, '127.0.0.5', one, n);
    const timedOut = (text.match(/"status":"timeout"/g) ?? []).length;
    assert.equal(statuses.filter((s) => s === 429).length, n - CAP, `statuses ${statuses.join(',')}`);
    assert.equal(timedOut, CAP);
    assert.match(text, /"code":"LIMIT_EXCEEDED"/);
  });

  test('a body the node does not read is not drained: the connection closes after the answer', async () => {
    const port = Number(new URL(base).port);
    const cases = [
      { head: 'GET /v1/locks HTTP/1.1', status: 400 },
      { head: 'GET /v1/kv/watch?prefix=a/ HTTP/1.1', status: 400 },
      { head: 'POST /v1/no-such-op HTTP/1.1', status: 404 },
      { head: 'POST /v1/openapi.json HTTP/1.1', status: 405 },
    ];
    for (const { head, status } of cases) {
      const socket = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.6' });
      socket.on('error', () => {});
      let text = '';
      let sent = 0;
      socket.on('data', (d: Buffer) => (text += d.toString()));
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const t0 = Date.now();
      const pump = (): void => {
        while (!socket.destroyed && Date.now() - t0 < 4_000 && socket.write(chunk)) sent += chunk.length;
      };
      socket.on('drain', pump);
      socket.write(`${head}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n`);
      pump();
      const closedAfter = await new Promise<number>((resolve) => {
        socket.on('close', () => resolve(Date.now() - t0));
        setTimeout(() => resolve(Infinity), 5_000);
      });
      socket.destroy();
      assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), `${head}: ${text.slice(0, 200)}`);
      assert.match(text, /"error":\{"code":"/);
      assert.ok(closedAfter < 2_000, `${head}: the connection stayed open ${closedAfter} ms while ${sent} bytes were sent`);
      assert.ok(sent < 64 << 20, `${head}: the node took ${sent} bytes of a body it does not read`);
    }
  });

  test('requests pipelined on one connection past MAX_IN_FLIGHT: one 429, then the connection is closed', async () => {
    const n = 500;
    const { statuses, text } = await pipelinedUntilClosed(base, '127.0.0.7', 'GET /v1/lock?name=pipe/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', n);
    const ok = statuses.filter((s) => s === 200).length;
    // Any answers begun before the refusal, then the refusal, last, with Connection: close;
    // what was pipelined after it is not worked on (before: all 500 answered, 436 of them
    // 429). Requests parsed from the same read as the refusal are not begun at all.
    assert.deepEqual(statuses.slice(ok), [429], `statuses: ${statuses.join(',')}`);
    assert.ok(ok <= MAX_IN_FLIGHT, `${ok} answered before the refusal`);
    assert.match(text, /"code":"LIMIT_EXCEEDED","message":"more than \d+ requests in flight/);
    assert.match(text, /HTTP\/1\.1 429 [^]*\r\nconnection: close\r\n/i);
    // For the 1 s of its Retry-After, that address's new connections are destroyed before a
    // byte is read; other addresses are served.
    const again = await pipelinedUntilClosed(base, '127.0.0.7', 'GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 1);
    assert.deepEqual(again.statuses, [], `answered ${again.text.slice(0, 200)}`);
    const other = await pipelinedUntilClosed(base, '127.0.0.9', 'GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', 1);
    assert.deepEqual(other.statuses, [200]);
  });

  test('an idle keep-alive connection is closed after HTTP_KEEPALIVE_MS', async () => {
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(base).port), localAddress: '127.0.0.8' });
    socket.on('error', () => {});
    let answeredAt = 0;
    socket.once('data', () => (answeredAt = Date.now()));
    socket.write('GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise<void>((resolve) => socket.on('close', () => resolve()));
    const idleMs = Date.now() - answeredAt;
    assert.ok(answeredAt > 0, 'no answer');
    // The node checks its connections' deadlines every second.
    assert.ok(idleMs >= HTTP_KEEPALIVE_MS - 100 && idleMs < HTTP_KEEPALIVE_MS + 2_000, `closed ${idleMs} ms after the answer`);
  });
});
