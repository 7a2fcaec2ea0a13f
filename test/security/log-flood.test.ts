// What a stranger can write into a node's log: nothing but a bounded number of lines per
// minute, however much it sends. 20,000 `Authorization: Bearer nope` requests wrote one line
// each (4 MB); wrong-MAC peer handshakes 54,657 lines in 30 s. Now the first refusal from an
// address is logged in full and the rest are summed up once per 10 s.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { TestCluster, until } from '../support/cluster.js';

const TOKEN = 'the-real-token-0123456789abcdef';

function lines(c: TestCluster, id: string): string[] {
  return c.logOf(id).split('\n').filter((l) => l.trim() !== '');
}

/** GET with a token the node does not know; resolves with the status. */
function badToken(base: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    request(`${base}/v1/status`, { agent, headers: { authorization: 'Bearer nope' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

/** One peer handshake that answers the acceptor's hello with a MAC made of random bytes. */
function wrongMacHandshake(peerUrl: string): Promise<void> {
  return new Promise((resolve) => {
    const ws = new WebSocket(peerUrl);
    ws.on('error', () => {});
    ws.on('message', (data: Buffer) => {
      const hello = decodeFrame(data) as { k?: string };
      if (hello.k !== 'hello') return;
      ws.send(encodeFrame({ k: 'auth', v: 2, clusterId: 'palisade-test', from: 'n1', to: 'n2', nonce: new Uint8Array(randomBytes(32)), mac: new Uint8Array(randomBytes(32)) }));
    });
    ws.on('close', () => resolve());
  });
}

describe('refusals in the log', { timeout: 120_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ nodes: 2, extraConfig: { auth: { tokens: [{ name: 'app', token: TOKEN }] } }, credentials: { token: TOKEN } });
  });
  after(() => c?.stop());

  test('5,000 requests with a bad token write a handful of lines, then a count', async () => {
    const base = c.node('n1').clientUrl.replace(/^ws/, 'http');
    const before = lines(c, 'n1').length;
    const agent = new Agent({ keepAlive: false, maxSockets: 32 });
    let refused = 0;
    for (let i = 0; i < 5_000; i += 200) {
      const statuses = await Promise.all(Array.from({ length: 200 }, () => badToken(base, agent)));
      refused += statuses.filter((s) => s === 401).length;
    }
    agent.destroy();
    assert.equal(refused, 5_000);
    const written = lines(c, 'n1').slice(before);
    assert.ok(written.length <= 10, `${written.length} log lines for 5,000 refused requests:\n${written.slice(0, 5).join('\n')}`);
    // ...and the count is said, not lost: a summary line once the window ends.
    const summary = await until(() => lines(c, 'n1').slice(before).find((l) => /refused client requests.* from 127\.0\.0\.1 in the last 10 s/.test(l)), 15_000, 'the summary line');
    assert.match(summary, /"count":\d{3,}/);
  });

  test('wrong-MAC peer handshakes for 5 s write a handful of lines, then a count', async () => {
    const peerUrl = c.node('n2').peerUrl;
    const before = lines(c, 'n2').length;
    let attempts = 0;
    const deadline = Date.now() + 5_000;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (Date.now() < deadline) {
          await wrongMacHandshake(peerUrl);
          attempts++;
        }
      }),
    );
    assert.ok(attempts > 100, `only ${attempts} handshakes`);
    const written = lines(c, 'n2').slice(before).filter((l) => !/peer link (up|down)|role changed|leader/.test(l));
    assert.ok(written.length <= 10, `${written.length} log lines for ${attempts} refused handshakes:\n${written.slice(0, 5).join('\n')}`);
    const summary = await until(() => lines(c, 'n2').slice(before).find((l) => /refused peer handshakes.* from 127\.0\.0\.1 in the last 10 s/.test(l)), 15_000, 'the summary line');
    assert.match(summary, /"count":\d+/);
  });
});
