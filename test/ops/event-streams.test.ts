// The status page's event stream (/api/events) against a real node: streams are bounded per
// address and in all, a stream over a cap is refused before anything is computed for it,
// and closed streams give their places back. 3,000 streams from one address that never read
// were all accepted before (the node's RSS 146 -> 506 MB, and it stayed there).
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { TestCluster } from '../support/cluster.js';

/** Opens /api/events from `localAddress` and reads only its status line; the socket stays
 *  open and unread. Status 0: the connection was cut before any answer (over the port's
 *  sockets per address). */
function openStream(httpUrl: string, localAddress: string): Promise<{ status: number; socket: Socket }> {
  const url = new URL(httpUrl);
  return new Promise((resolve) => {
    const socket = connect({ port: Number(url.port), host: url.hostname, localAddress });
    socket.once('error', () => resolve({ status: 0, socket }));
    socket.once('close', () => resolve({ status: 0, socket }));
    socket.once('connect', () => socket.write(`GET /api/events HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`));
    socket.once('data', (d: Buffer) => {
      socket.pause(); // reads no more
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(d.toString('latin1'))?.[1] ?? 0), socket });
    });
  });
}

describe('the HTTP port\'s event streams', { timeout: 60_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ nodes: 1 });
  });
  after(() => c?.stop());

  test('at most 4 streams per address and 64 in all; closed ones give their places back', async () => {
    const httpUrl = c.node('n1').httpUrl;
    const sockets: Socket[] = [];
    try {
      const one = await Promise.all(Array.from({ length: 40 }, () => openStream(httpUrl, '127.0.0.1')));
      sockets.push(...one.map((s) => s.socket));
      assert.equal(one.filter((s) => s.status === 200).length, 4, `statuses from one address: ${one.map((s) => s.status).join(',')}`);
      assert.ok(one.every((s) => s.status === 200 || s.status === 429 || s.status === 0));
      // Twenty more addresses, four streams each: the node's cap of 64 holds in all.
      const many = await Promise.all(Array.from({ length: 80 }, (_, i) => openStream(httpUrl, `127.0.0.${10 + (i % 20)}`)));
      sockets.push(...many.map((s) => s.socket));
      assert.equal(one.filter((s) => s.status === 200).length + many.filter((s) => s.status === 200).length, 64);
    } finally {
      for (const s of sockets) s.destroy();
    }
    // Every place comes back once its stream is closed.
    for (let tries = 0; ; tries++) {
      const again = await Promise.all(Array.from({ length: 4 }, () => openStream(httpUrl, '127.0.0.1')));
      for (const s of again) s.socket.destroy();
      if (again.every((s) => s.status === 200)) break;
      assert.ok(tries < 50, 'the closed streams never gave their places back');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
