// @solo: runs alone after the other tests (scripts/run-tests.mjs): it floods a leader and
// asserts that the leader keeps its term, which needs the machine's cores to itself.
// The HTTP/JSON API under a flood from one address, against a real 3-node cluster with auth
// on (default limits): a separate process (http-flood.ts) sends 1 GB bodies without a token,
// slow-loris headers, event streams and long polls pipelined far past the per-address cap,
// and pipelined reads past the rate, at the leader's client port, while an honest HTTP
// client on another address (127.0.0.2) reads a lock on the same node. The leader must keep
// leadership, the honest client must keep being served promptly, the node's memory must
// stay bounded, and the streams and long polls held must not exceed the cap.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import type { TestCluster } from '../support/cluster.js';
import { httpBase } from '../http/http-client.js';
import { assertLeaderKept, authCluster, eventLoopMaxMs, peakRssMb, quantile, runFlood } from './measure.js';

const TOKEN = 'http-flood-test-token-0123456789';
const ATTACK_MS = 6000;

interface FloodResult {
  readonly bodyBytes: number;
  readonly connections: number;
  readonly statuses: Record<string, number>;
}

describe('HTTP API flood from one address', () => {
  let c: TestCluster;
  before(async () => {
    c = await authCluster(TOKEN);
  });
  after(async () => {
    await c?.stop();
  });

  test('bodies, slow headers, streams and long polls past the caps: the leader keeps leading and an honest client is served', { timeout: 60_000 }, async () => {
    const leaderId = await c.waitForLeader();
    const leader = c.node(leaderId);
    const base = httpBase(leader.clientUrl);
    const termBefore = (await c.status(leaderId))!.term;
    const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.2' });
    const read = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(`${base}/v1/lock?name=honest/x`, { agent, headers: { authorization: `Bearer ${TOKEN}` }, timeout: 10_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    assert.equal(await read(), 200);
    const rssBefore = peakRssMb(c.pid(leaderId));
    await eventLoopMaxMs(leader.httpUrl); // resets the node's event-loop histogram

    const attack = runFlood<FloodResult>('http-flood.ts', { base, durationMs: ATTACK_MS, token: TOKEN });
    const latencies: number[] = [];
    let retries = 0;
    const until = Date.now() + ATTACK_MS;
    while (Date.now() < until) {
      const t0 = performance.now();
      let status = await read();
      // As protocol.md §9 asks of any client: 503 and 504 are retried (the latency counts both).
      for (let k = 0; k < 3 && (status === 503 || status === 504); k++, retries++) status = await read();
      latencies.push(performance.now() - t0);
      assert.equal(status, 200, `the honest read failed (${status}) after ${latencies.length} reads`);
    }
    const sent = await attack;
    const loopMaxMs = await eventLoopMaxMs(leader.httpUrl);
    const rssPeak = peakRssMb(c.pid(leaderId));
    const termAfter = (await c.status(leaderId))?.term;
    agent.destroy();

    latencies.sort((a, b) => a - b);
    const figures = {
      attackMs: ATTACK_MS,
      sentBodyMiB: Math.round(sent.bodyBytes / (1 << 20)),
      attackConnections: sent.connections,
      attackStatuses: sent.statuses,
      honestReads: latencies.length,
      honestRetries: retries,
      honestP50Ms: +quantile(latencies, 0.5).toFixed(1),
      honestP99Ms: +quantile(latencies, 0.99).toFixed(1),
      honestMaxMs: +latencies[latencies.length - 1]!.toFixed(1),
      termBefore,
      termAfter,
      leaderPeakRssMb: { before: Math.round(rssBefore), after: Math.round(rssPeak) },
      leaderEventLoopMaxMs: +loopMaxMs.toFixed(1),
    };
    console.log(`http flood figures: ${JSON.stringify(figures)}`);

    await assertLeaderKept(c, leaderId, termBefore);
    // Streams and long polls past the cap were refused (429), and unauthenticated bodies (401).
    assert.ok((sent.statuses['429'] ?? 0) > 0, 'nothing was refused 429');
    assert.ok((sent.statuses['401'] ?? 0) > 0, 'no unauthenticated body was answered 401');
    // Loose enough for a loaded test machine (the flood competes for the CPU).
    assert.ok(figures.honestMaxMs < 2000, `an honest read took ${figures.honestMaxMs} ms`);
    assert.ok(rssPeak < 400, `the leader's peak RSS reached ${rssPeak} MB`);
  });
});
