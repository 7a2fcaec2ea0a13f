// Limits that hold per client address whatever the transport, at the default limits, against
// real nodes: sessions opened over HTTP (every request a fresh gate, so the per-connection
// limit of 64 never applied: one address opened 99,995 over HTTP, a read-only token 10,000)
// and request rates across reconnects (a new connection's bucket was full again).
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';

interface Answer {
  status: number;
  body: { session?: number; error?: { code: string; message: string } };
}

/** POST JSON from `localAddress` (127.0.0.x: another client address on loopback). */
function post(base: string, path: string, body: unknown, o: { agent?: Agent; localAddress?: string; token?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    const req = request(`${base}${path}`, { method: 'POST', headers, ...(o.agent ? { agent: o.agent } : {}), ...(o.localAddress ? { localAddress: o.localAddress } : {}) }, (res) => {
      let data = '';
      res.on('data', (d: Buffer) => (data += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) as Answer['body'] }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** `n` session opens from one address, `concurrency` at a time on keep-alive connections. */
async function openMany(base: string, n: number, o: { token?: string; localAddress?: string } = {}): Promise<Answer[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  try {
    const out: Answer[] = [];
    for (let i = 0; i < n; i += 64) {
      const batch = Array.from({ length: Math.min(64, n - i) }, () => post(base, '/v1/session/open', { ttlMs: 600_000 }, { agent, ...o }));
      out.push(...(await Promise.all(batch)));
    }
    return out;
  } finally {
    agent.destroy();
  }
}

describe('sessions per address over HTTP, auth off (the default: 1,000 per node)', { timeout: 180_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started();
  });
  after(() => c?.stop());

  test('one address opens at most 1,000 sessions through a node; another address still can; a close makes room', async () => {
    const base = c.endpoints[0]!.replace(/^ws/, 'http');
    const answers = await openMany(base, 1_100);
    const opened = answers.filter((a) => a.status === 200);
    assert.equal(opened.length, 1_000, `${opened.length} opened`);
    for (const a of answers.filter((x) => x.status !== 200)) {
      assert.equal(a.status, 429);
      assert.equal(a.body.error?.code, 'LIMIT_EXCEEDED');
      assert.match(a.body.error?.message ?? '', /limits\.maxSessionsPerAddress/);
    }
    const other = await post(base, '/v1/session/open', { ttlMs: 60_000 }, { localAddress: '127.0.0.2' });
    assert.equal(other.status, 200, 'another address is not held back');
    const first = opened[0]!.body.session!;
    assert.equal((await post(base, '/v1/session/close', { session: first, seq: 1 })).status, 200);
    const again = await openMany(base, 5);
    assert.equal(again.filter((a) => a.status === 200).length, 1, 'the close made room for exactly one');
  });
});

describe('sessions per address over HTTP with a read-only token', { timeout: 180_000 }, () => {
  const READER = 'reader-token-0123456789abcdef';
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ extraConfig: { auth: { tokens: [{ name: 'reader', token: READER, readOnly: true }] } }, credentials: { token: READER } });
  });
  after(() => c?.stop());

  test('a read-only token opens at most 1,000 sessions from one address (not its 10,000)', async () => {
    const base = c.endpoints[1]!.replace(/^ws/, 'http');
    const answers = await openMany(base, 1_050, { token: READER });
    assert.equal(answers.filter((a) => a.status === 200).length, 1_000);
  });
});

describe('request rates across reconnects (the default: 4,000 a second per address, burst 8,000)', { timeout: 120_000 }, () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.started({ nodes: 1 });
  });
  after(() => c?.stop());

  test('reconnecting does not refill the address\'s bucket', async (t) => {
    const url = c.endpoints[0]!;
    const ROUNDS = 20;
    const PER_ROUND = 2_000; // one connection's burst: each round alone is within it
    let worked = 0;
    const started = performance.now();
    for (let r = 0; r < ROUNDS; r++) {
      const conn = await RawClient.connect(url);
      // Frames the node answers at once (an unknown op) but that cost a token like any other:
      // what is measured is the bucket, not how fast the node serves a real op.
      const replies = await Promise.all(Array.from({ length: PER_ROUND }, () => conn.call({ op: 'nope' }, 30_000)));
      conn.close();
      for (const x of replies) if (x.ok || x.error.code !== 'RATE_LIMITED') worked++;
    }
    const seconds = (performance.now() - started) / 1000;
    // The address's bucket: a burst of 8,000, then 4,000 a second, whatever the connections.
    const bound = 8_000 + 4_000 * seconds;
    t.diagnostic(`${worked} of ${ROUNDS * PER_ROUND} frames worked on in ${seconds.toFixed(2)} s`);
    assert.ok(worked < ROUNDS * PER_ROUND, 'a new connection\'s full bucket let every frame through');
    assert.ok(worked <= bound, `${worked} of ${ROUNDS * PER_ROUND} frames worked on in ${seconds.toFixed(2)} s, more than the address's bucket allows (${Math.round(bound)})`);
  });
});
