// Self-test of the chaos harness's fault proxy: if a black-holed direction leaked bytes or
// reset connections, every partition the campaigns inject would be a lie.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { LinkProxy, ProxyMesh, edge } from './proxy.js';

/** Everything a socket receives, and whether it was closed. */
class Endpoint {
  received = '';
  closed = false;
  constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (this.received += d));
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => {});
  }

  async waitFor(text: string, timeoutMs = 2000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.received.includes(text)) {
      if (Date.now() > deadline) throw new Error(`did not receive ${JSON.stringify(text)}; got ${JSON.stringify(this.received)}`);
      await sleep(5);
    }
  }

  async waitClosed(timeoutMs = 2000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error('socket did not close');
      await sleep(5);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A target server that hands over each accepted socket. */
async function targetServer(): Promise<{ server: Server; port: number; next: () => Promise<Endpoint> }> {
  const waiting: ((e: Endpoint) => void)[] = [];
  const accepted: Endpoint[] = [];
  const server = createServer((s) => {
    const e = new Endpoint(s);
    const w = waiting.shift();
    if (w) w(e);
    else accepted.push(e);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const next = (): Promise<Endpoint> => {
    const e = accepted.shift();
    return e ? Promise.resolve(e) : new Promise((r) => waiting.push(r));
  };
  return { server, port, next };
}

async function dial(port: number): Promise<Endpoint> {
  const s = connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    s.once('connect', () => resolve());
    s.once('error', reject);
  });
  return new Endpoint(s);
}

/** Long enough for a byte to cross the loopback many times over. */
const QUIET_MS = 250;

describe('LinkProxy', () => {
  let target: Awaited<ReturnType<typeof targetServer>>;
  let proxy: LinkProxy;

  before(async () => {
    target = await targetServer();
    proxy = new LinkProxy(target.port);
    await proxy.listen();
  });

  after(async () => {
    await proxy.close();
    target.server.close();
  });

  it('forwards both directions when nothing is cut', async () => {
    const client = await dial(proxy.port);
    const server = await target.next();
    client.socket.write('ping');
    await server.waitFor('ping');
    server.socket.write('pong');
    await client.waitFor('pong');
    client.socket.destroy();
  });

  it('a black-holed direction delivers nothing while the other still does, and nobody is reset', async () => {
    const client = await dial(proxy.port);
    const server = await target.next();
    proxy.setBlocked('forward', true);
    try {
      client.socket.write('held-1;');
      client.socket.write('held-2;');
      server.socket.write('answer');
      await client.waitFor('answer');
      await sleep(QUIET_MS);
      assert.equal(server.received, '', 'bytes crossed a black-holed direction');
      assert.equal(client.closed, false, 'the dialer was disconnected');
      assert.equal(server.closed, false, 'the target was disconnected');
    } finally {
      proxy.setBlocked('forward', false);
    }
    // Heal: the held bytes arrive, in order, as TCP delivers retransmissions once the path is back.
    await server.waitFor('held-1;held-2;');
    client.socket.destroy();
  });

  it('holds the backward direction on its own', async () => {
    const client = await dial(proxy.port);
    const server = await target.next();
    proxy.setBlocked('backward', true);
    try {
      server.socket.write('reply');
      client.socket.write('request');
      await server.waitFor('request');
      await sleep(QUIET_MS);
      assert.equal(client.received, '');
    } finally {
      proxy.setBlocked('backward', false);
    }
    await client.waitFor('reply');
    client.socket.destroy();
  });

  it('a close travels with the bytes: not seen across a cut until it heals', async () => {
    const client = await dial(proxy.port);
    const server = await target.next();
    proxy.setBlocked('forward', true);
    client.socket.end('bye');
    await sleep(QUIET_MS);
    assert.equal(server.closed, false);
    assert.equal(server.received, '');
    proxy.setBlocked('forward', false);
    await server.waitFor('bye');
    await server.waitClosed();
  });

  it('a cut applies to connections opened during it', async () => {
    proxy.setBlocked('forward', true);
    try {
      const client = await dial(proxy.port);
      const server = await target.next();
      client.socket.write('early');
      await sleep(QUIET_MS);
      assert.equal(server.received, '');
      proxy.setBlocked('forward', false);
      await server.waitFor('early');
      client.socket.destroy();
    } finally {
      proxy.setBlocked('forward', false);
    }
  });

  it('resets the dialer when the target is down, instead of hanging', async () => {
    const down = new LinkProxy(1); // nothing listens on port 1
    await down.listen();
    try {
      const client = await dial(down.port);
      await client.waitClosed();
    } finally {
      await down.close();
    }
  });
});

describe('ProxyMesh', () => {
  it('cutting a>b holds a to b only, whichever proxy of the pair carries the link', async () => {
    const a = await targetServer();
    const b = await targetServer();
    const mesh = await ProxyMesh.create(
      new Map([
        ['a', a.port],
        ['b', b.port],
      ]),
    );
    try {
      mesh.setCuts([edge('a', 'b')]);
      assert.deepEqual(mesh.cutEdges, ['a>b']);
      // a dials b: a's bytes are held, b's answers pass.
      const aToB = await dial(Number(new URL(mesh.urlFor('a', 'b')).port));
      const bSide = await b.next();
      aToB.socket.write('from-a');
      bSide.socket.write('from-b');
      await aToB.waitFor('from-b');
      // b dials a: b's bytes pass, a's answers are held.
      const bToA = await dial(Number(new URL(mesh.urlFor('b', 'a')).port));
      const aSide = await a.next();
      bToA.socket.write('from-b');
      aSide.socket.write('from-a');
      await aSide.waitFor('from-b');
      await sleep(QUIET_MS);
      assert.equal(bSide.received, '');
      assert.equal(bToA.received, '');
      mesh.healAll();
      assert.deepEqual(mesh.cutEdges, []);
      await bSide.waitFor('from-a');
      await bToA.waitFor('from-a');
      aToB.socket.destroy();
      bToA.socket.destroy();
    } finally {
      await mesh.close();
      a.server.close();
      b.server.close();
    }
  });
});
