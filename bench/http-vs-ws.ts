// Latency of one acquire + release on one client, over the websocket protocol and over the
// HTTP/JSON API, in the same sitting against the same fresh 3-node cluster, both talking
// to the leader (a follower adds one forwarding hop to each write on either transport).
// Sequential: one request in flight, so the figure is the round trip plus the commit.
//   node --import tsx bench/http-vs-ws.ts [cycles]
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'node:http';
import { RawClient } from '../test/support/raw-client.js';
import { BenchCluster, ROOT } from './cluster.js';

const cycles = Number(process.argv[2] ?? 300);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
function post(base: string, path: string, body: unknown): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(base + path, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', reject);
    req.end(data);
  });
}

const c = await BenchCluster.launch(ROOT);
try {
  const leader = await c.waitForLeader();
  const url = c.clientUrl(leader);
  const base = url.replace(/^ws/, 'http');
  const ws = await RawClient.connect(url);
  const wsSession = (await ws.ok({ op: 'openSession', ttlMs: 30_000 })).session as number;
  const httpSession = (await post(base, '/v1/session/open', { ttlMs: 30_000 })).session as number;
  const times: Record<string, number[]> = { ws: [], http: [] };
  let wsSeq = 0;
  let httpSeq = 0;
  // Interleaved rounds, so both transports see the same machine state and load.
  for (let i = 0; i < cycles; i++) {
    let t = performance.now();
    const g = await ws.ok({ op: 'acquire', session: wsSession, seq: ++wsSeq, ackedSeq: wsSeq - 1, name: 'bench/ws', mode: 'exclusive', wait: false });
    await ws.ok({ op: 'release', session: wsSession, seq: ++wsSeq, ackedSeq: wsSeq - 1, name: 'bench/ws', token: g.token });
    times.ws!.push(performance.now() - t);
    t = performance.now();
    const h = await post(base, '/v1/lock/acquire', { session: httpSession, seq: ++httpSeq, ackedSeq: httpSeq - 1, name: 'bench/http' });
    await post(base, '/v1/lock/release', { session: httpSession, seq: ++httpSeq, ackedSeq: httpSeq - 1, name: 'bench/http', token: h.token });
    times.http!.push(performance.now() - t);
  }
  ws.close();
  for (const [k, xs] of Object.entries(times)) {
    const w = xs.slice(Math.floor(xs.length / 10)); // the first tenth warms up
    console.log(`${k.padEnd(5)} acquire+release  p50 ${pct(w, 50).toFixed(2)} ms  p99 ${pct(w, 99).toFixed(2)} ms  (${w.length} cycles)`);
  }
} finally {
  agent.destroy();
  await c.stop();
}
