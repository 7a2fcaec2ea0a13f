// Sockets that connect and then say nothing are bounded in time and number, against a real
// node with auth on:
//   - websockets on the client port that never say hello are closed (1008 HELLO_TIMEOUT)
//     after the pre-authentication deadline;
//   - raw TCP connections that never send an HTTP request count in the per-address cap
//     (those beyond it are destroyed at once) and are cut after the header deadline,
//     on the client, peer and HTTP ports;
//   - a malformed request URL on the HTTP port is a 400, not an error-level log line.
// Before the fix, 256 silent websockets stayed open 20 s+ and 3,000 raw connections were all
// accepted and held for ~69 s (node descriptors 29 -> 3,030).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { DEFAULT_PRE_AUTH } from '../../src/transport/client-server.js';
import { HTTP_HEADERS_TIMEOUT_MS } from '../../src/transport/tls.js';
import { TestCluster } from '../support/cluster.js';

const TOKEN = 'idle-sockets-test-token-0123456789';

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** The node's open descriptors once they fall below `bound`, or after `withinMs`. */
async function settledFds(pid: number, bound: number, withinMs: number): Promise<number> {
  const until = Date.now() + withinMs;
  let fds = openFds(pid);
  while (fds >= bound && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    fds = openFds(pid);
  }
  return fds;
}

/** A websocket from `localAddress` that never sends a frame; resolves with its close code
 *  and when it came, in ms after it opened (or -1 if it never opened). */
function silentWebsocket(url: string, localAddress: string): Promise<{ code: number; afterMs: number; reason: string }> {
  const ws = new WebSocket(url, { localAddress, perMessageDeflate: false });
  let opened = -1;
  ws.on('error', () => {});
  ws.on('open', () => (opened = Date.now()));
  return new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, afterMs: opened < 0 ? -1 : Date.now() - opened, reason: reason.toString() })));
}

/** A raw TCP connection from `localAddress` that never sends; resolves when the node ends it. */
function silentTcp(port: number, localAddress: string): { socket: Socket; ended: Promise<number> } {
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  const t0 = Date.now();
  socket.on('error', () => {});
  socket.on('data', () => {}); // a 408 the node may write first
  return { socket, ended: new Promise((resolve) => socket.on('close', () => resolve(Date.now() - t0))) };
}

describe('idle sockets are bounded in time and number', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ nodes: 1, extraConfig: { auth: { tokens: [{ name: 'app', token: TOKEN }] } }, credentials: { token: TOKEN } });
  });
  after(async () => {
    await c?.stop();
  });

  test('silent websockets and raw TCP connections are closed by their deadlines', { timeout: 40_000 }, async () => {
    const n = c.nodes[0]!;
    const pid = c.pid(n.id);
    const fdsBefore = openFds(pid);

    const websockets = Array.from({ length: 256 }, () => silentWebsocket(n.clientUrl, '127.0.0.2'));
    const raw: { socket: Socket; ended: Promise<number> }[] = [];
    for (const [url, count] of [[n.clientUrl, 300], [n.peerUrl, 100], [n.httpUrl, 100]] as const) {
      for (let i = 0; i < count; i++) raw.push(silentTcp(portOf(url), '127.0.0.3'));
    }
    const started = Date.now();

    const closes = await Promise.all(websockets);
    for (const cl of closes) {
      assert.equal(cl.code, 1008, `a silent websocket was closed with ${cl.code} ${cl.reason}`);
      assert.match(cl.reason, /^HELLO_TIMEOUT/);
      assert.ok(cl.afterMs < DEFAULT_PRE_AUTH.deadlineMs + 3000, `a silent websocket lived ${cl.afterMs} ms`);
    }
    const ends = await Promise.all(raw.map((r) => r.ended));
    const longest = Math.max(...ends);
    assert.ok(longest < HTTP_HEADERS_TIMEOUT_MS + 3000, `a silent TCP connection lived ${longest} ms`);
    // Those over the client port's per-address cap (256 + 16) were destroyed on arrival.
    assert.ok(ends.filter((ms) => ms < 1000).length >= 300 - 272, 'connections over the per-address cap were held');
    // The client side sees its close first; the node releases its descriptor when its own
    // side of the close finishes, which on a loaded machine is a moment later. Nothing
    // signals that to another process, so poll /proc for a bounded time.
    const fdsAfter = await settledFds(pid, fdsBefore + 20, 5000);
    console.log(`idle sockets: ${websockets.length} websockets and ${raw.length} raw connections closed within ${Date.now() - started} ms; descriptors ${fdsBefore} -> ${fdsAfter}`);
    assert.ok(fdsAfter < fdsBefore + 20, `descriptors ${fdsBefore} -> ${fdsAfter}`);
    assert.ok(await c.status(n.id), 'the node stopped serving');
  });

  test('a malformed URL on the HTTP port or the client port\'s HTTP API is a 400 and no error-level log line', async () => {
    const n = c.nodes[0]!;
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => new Promise<string>((resolve) => {
        const s = connect({ host: '127.0.0.1', port: portOf(i % 2 ? n.httpUrl : n.clientUrl) });
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('error', () => resolve(got));
        s.on('close', () => resolve(got));
        s.end('GET http://[ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      })),
    );
    for (const a of answers) assert.match(a, /^HTTP\/1\.1 400 /, `answered ${a.slice(0, 40)}`);
    const errors = c
      .logOf(n.id)
      .split('\n')
      .filter((l) => /"level":(5|6)0/.test(l));
    assert.deepEqual(errors, [], 'error-level log lines');
  });
});
