// What a web page can do to a cluster started as `npm start` starts it (the shipped
// cluster.config.json: no auth, so every client that gets through is admin), in headless
// Chromium. A page from another local origin opens websockets to the client and peer
// ports, reads the hello and the lock table, sends removeMember, and sends the
// no-cors text/plain POSTs a form can send; a page rebound to the node's address (DNS
// rebinding: evil.example resolving to 127.0.0.1) reads the API and the status page as its
// own origin. None of it may work. Needs Chromium (test/support/chromium.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { rpc } from '../../src/protocol/rpc.js';
import { launchChromium, type Browser } from '../support/chromium.js';
import { ROOT, freePort, settleAll, TestCluster } from '../support/cluster.js';
import { agreedLeader, signalNode, startNode } from '../support/node-process.js';
import { RawClient } from '../support/raw-client.js';

interface ShippedNode {
  id: string;
  peerUrl: string;
  clientUrl: string;
  httpUrl: string;
  dataDir: string;
}

/** The shipped cluster.config.json with free ports and a temporary data directory: every
 *  other setting (no auth, no browser allowances) is the one `npm start` runs with. */
async function shippedCluster(dir: string): Promise<{ nodes: ShippedNode[]; configPath: string }> {
  const shipped = JSON.parse(readFileSync(join(ROOT, 'cluster.config.json'), 'utf8')) as { nodes: ShippedNode[] } & Record<string, unknown>;
  assert.equal(shipped.auth, undefined, 'the shipped config has no auth: every client is admin');
  const nodes: ShippedNode[] = [];
  for (const n of shipped.nodes) {
    nodes.push({
      ...n,
      peerUrl: `ws://127.0.0.1:${await freePort()}`,
      clientUrl: `ws://127.0.0.1:${await freePort()}`,
      httpUrl: `http://127.0.0.1:${await freePort()}`,
      dataDir: join(dir, n.id),
    });
  }
  const configPath = join(dir, 'cluster.config.json');
  writeFileSync(configPath, JSON.stringify({ ...shipped, nodes }, null, 2));
  return { nodes, configPath };
}

/** The status of a GET of `url` that names `host` in its Host header. */
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

/** The attacker's page: frames precomputed here (the page has no msgpack), sent as given. */
function attackPage(o: { clientWs: string; peerWs: string; closeUrl: string; session: number }): string {
  const frames = [
    encodeFrame({ id: 1, op: 'hello', version: 1 }),
    encodeFrame({ id: 2, op: 'locks' }),
    encodeFrame({ id: 3, op: 'removeMember', member: 'n3' }),
  ].map((f) => Buffer.from(f).toString('base64'));
  return `<!doctype html><title>a page on another origin</title><script>
const frames = ${JSON.stringify(frames)}.map((b) => Uint8Array.from(atob(b), (c) => c.charCodeAt(0)));
function talk(url, send) {
  return new Promise((resolve) => {
    const out = { opened: false, received: [] };
    let ws;
    try { ws = new WebSocket(url); } catch (e) { return resolve({ ...out, error: String(e) }); }
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => { out.opened = true; if (send) for (const f of frames) ws.send(f); };
    ws.onmessage = (m) => { out.received.push(btoa(String.fromCharCode(...new Uint8Array(m.data)))); if (out.received.length >= 3) ws.close(); };
    ws.onclose = () => resolve(out);
    setTimeout(() => { try { ws.close(); } catch {} resolve(out); }, 4000);
  });
}
window.attack = (async () => {
  const client = await talk(${JSON.stringify(o.clientWs)}, true);
  const peer = await talk(${JSON.stringify(o.peerWs)}, false);
  // What a form or a no-cors fetch can send across sites: text/plain, no preflight.
  const posts = [];
  for (let i = 0; i < 20; i++) {
    posts.push(fetch(${JSON.stringify(o.closeUrl)}, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ session: ${o.session}, seq: 1 + i }) }).then(() => 'sent', (e) => String(e)));
  }
  return { client, peer, posts: await Promise.all(posts) };
})();
</script>`;
}

describe('a web page against the cluster npm start runs', { timeout: 120_000 }, () => {
  let dir: string;
  let nodes: ShippedNode[];
  const procs: ChildProcess[] = [];
  let pageServer: Server;
  let browser: Browser;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'palisade-browser-'));
    const c = await shippedCluster(dir);
    nodes = c.nodes;
    procs.push(...(await settleAll(nodes.map((n) => startNode({ id: n.id, configPath: c.configPath, logPath: join(dir, `${n.id}.log`), clientUrl: n.clientUrl })))));
    for (let i = 0; ; i++) {
      const statuses = await Promise.all(nodes.map((n) => rpc(n.clientUrl, { op: 'status' }, 1_000).catch(() => null)));
      if (agreedLeader(statuses) !== null) break;
      if (i > 400) throw new Error('no leader');
      await new Promise((r) => setTimeout(r, 25));
    }
    browser = await launchChromium(['--host-resolver-rules=MAP evil.example 127.0.0.1']);
  });

  after(async () => {
    await browser?.close();
    pageServer?.close();
    for (const p of procs) await signalNode(p, 'SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a page on another origin can neither read, nor remove a member, nor close a session', async () => {
    const n1 = nodes[0]!;
    const victim = await RawClient.connect(n1.clientUrl);
    try {
      const session = (await victim.ok({ op: 'openSession', ttlMs: 60_000 })).session as number;
      await victim.ok({ op: 'acquire', session, seq: 1, name: 'secret/plans', mode: 'exclusive', wait: false });

      const pagePort = await freePort();
      const html = attackPage({ clientWs: n1.clientUrl, peerWs: n1.peerUrl, closeUrl: `${n1.clientUrl.replace(/^ws/, 'http')}/v1/session/close`, session });
      pageServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
      await new Promise<void>((r) => pageServer.listen(pagePort, '127.0.0.1', r));
      const page = browser.page;
      await page.goto(`http://127.0.0.1:${pagePort}/`);
      const got = (await page.evaluate('window.attack')) as { client: { opened: boolean; received: string[] }; peer: { opened: boolean; received: string[] }; posts: string[] };

      // The read: nothing the page received names a lock or a member.
      const answers = got.client.received.map((b) => decodeFrame(Buffer.from(b, 'base64')) as { id?: number; ok?: boolean; result?: unknown });
      assert.deepEqual(answers.filter((a) => a.ok === true), [], `the page was answered: ${JSON.stringify(answers)}`);
      assert.equal(got.client.opened, false, 'the client port opened a websocket for a foreign origin');
      assert.equal(got.peer.opened, false, 'the peer port opened a websocket for a foreign origin');
      // The removal: n3 is still a member, and running.
      const members = await rpc(n1.clientUrl, { op: 'members' }, 3_000);
      assert.deepEqual(members.map((m) => m.id).sort(), ['n1', 'n2', 'n3']);
      assert.ok(procs.every((p) => p.exitCode === null), 'every node still runs');
      // The closes: the session still holds its lock.
      assert.ok((await victim.call({ op: 'keepAlive', session })).ok, 'the session is still open');
      const lock = await victim.ok({ op: 'get', name: 'secret/plans' });
      assert.equal(lock.holders[0]?.session, session);
    } finally {
      victim.close();
    }
  });

  test('a page rebound to the node (DNS rebinding) reads neither the API nor the status page', async () => {
    const n2 = nodes[1]!;
    const clientPort = new URL(n2.clientUrl).port;
    const httpPort = new URL(n2.httpUrl).port;
    const page = await browser.context.newPage();
    try {
      for (const url of [`http://evil.example:${clientPort}/v1/locks`, `http://evil.example:${clientPort}/v1/status`, `http://evil.example:${httpPort}/api/status`, `http://evil.example:${httpPort}/`]) {
        const res = await page.goto(url);
        assert.equal(res?.status(), 421, `${url} answered ${res?.status()}: ${(await res?.text())?.slice(0, 200)}`);
      }
      // The node's own names still work: its address, and localhost on a loopback bind.
      assert.equal((await page.goto(`http://127.0.0.1:${httpPort}/api/status`))?.status(), 200);
      assert.equal((await page.goto(`http://localhost:${clientPort}/v1/status`))?.status(), 200);
    } finally {
      await page.close();
    }
  });

  test('programs (no Origin) connect to both ports as before; a page origin is refused with 403', async () => {
    const n3 = nodes[2]!;
    const plain = await RawClient.connect(n3.clientUrl);
    assert.ok((await plain.call({ op: 'status' })).ok);
    plain.close();
    for (const url of [n3.clientUrl, n3.peerUrl]) {
      const ws = new WebSocket(url, { origin: 'http://127.0.0.1:1' });
      ws.on('error', () => {});
      const status = await new Promise<number>((resolve) => {
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => resolve(101));
        ws.once('error', () => resolve(-1));
      });
      ws.terminate();
      assert.equal(status, 403, url);
    }
  });
});

describe('http.allowedOrigins and http.allowedHosts', { timeout: 60_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ nodes: 1, extraConfig: { http: { allowedOrigins: ['https://admin.example'], allowedHosts: ['palisade.internal'] } } });
  });
  after(() => c?.stop());

  test('an allowed origin may open a websocket; an allowed host name is served', async () => {
    const url = c.endpoints[0]!;
    const allowed = new WebSocket(url, { origin: 'https://admin.example' });
    await new Promise<void>((resolve, reject) => {
      allowed.once('open', () => resolve());
      allowed.once('error', reject);
    });
    allowed.terminate();
    const other = new WebSocket(url, { origin: 'https://admin.example.evil' });
    other.on('error', () => {});
    const refused = await new Promise<number>((resolve) => other.once('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0)));
    other.terminate();
    assert.equal(refused, 403);
    const base = url.replace(/^ws/, 'http');
    assert.equal(await statusWithHost(`${base}/v1/status`, 'palisade.internal:7001'), 200);
    assert.equal(await statusWithHost(`${base}/v1/status`, 'rebound.example'), 421);
  });
});
