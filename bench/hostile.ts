// npm run bench:hostile [-- --root DIR] [--only watch,sessions,logs,ledger] [--label NAME]
//
// What hostile but ordinary-looking traffic costs a real 3-node cluster at the default
// limits (docs/security.md, "Measured: round three"). Each case starts a fresh cluster of
// `palisade serve` processes, drives it from this process on 127.0.0.1, and samples each
// node every 100 ms: resident memory (/proc), the longest event-loop delay since the last
// sample (prom-client's nodejs_eventloop_lag_max_seconds on /metrics), the highest term
// (term changes: lost leaderships), and the bytes its log grew by.
//   watch     1,000 values of 65,000 bytes of 0x01 (65 MB of key-value space, inside the
//             limits), then one SSE watch of them read to its end on a follower, one on the
//             leader, and four that nobody reads, for 15 s, on a follower;
//   sessions  20,000 POST /v1/session/open {"ttlMs":3600000} from one address, 64 at a time;
//   logs      20,000 requests with `Authorization: Bearer nope`, then 10 s of peer
//             handshakes answered with a wrong MAC, 8 at a time;
//   ledger    3,000 beginOp/completeOp pairs with 60 KB results (the lock machine's byte
//             budgets, not this change, are what will bound it).
// --root runs the nodes of another checkout (its dist/cli/main.js, built): the same
// traffic against an older build. Never a test: it asserts nothing, it prints a table and
// writes bench/results/hostile-<label>.json.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from '../src/protocol/codec.js';
import { rpc } from '../src/protocol/rpc.js';
import type { NodeStatus } from '../src/protocol/client-protocol.js';
import { ROOT, agreedLeader, cliOf, freePorts, settleAll, signalNode, startNode } from '../test/support/node-process.js';
import { RawClient } from '../test/support/raw-client.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const root = resolve(opt('root') ?? ROOT);
const label = opt('label') ?? (root === ROOT ? 'this build' : root);
const only = new Set((opt('only') ?? 'watch,sessions,logs,ledger').split(','));
const cli = cliOf(root);
const TOKEN = 'hostile-bench-token-0123456789abcdef';

interface Node {
  id: string;
  peerUrl: string;
  clientUrl: string;
  httpUrl: string;
  dataDir: string;
}

class Cluster {
  readonly procs = new Map<string, ChildProcess>();
  private constructor(
    readonly dir: string,
    readonly configPath: string,
    readonly nodes: Node[],
  ) {}

  static async start(extra: Record<string, unknown> = {}): Promise<Cluster> {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-hostile-'));
    const ports = await freePorts(9);
    const nodes = [0, 1, 2].map((i) => ({
      id: `n${i + 1}`,
      peerUrl: `ws://127.0.0.1:${ports[3 * i]!}`,
      clientUrl: `ws://127.0.0.1:${ports[3 * i + 1]!}`,
      httpUrl: `http://127.0.0.1:${ports[3 * i + 2]!}`,
      dataDir: join(dir, `n${i + 1}`),
    }));
    const shipped = JSON.parse(readFileSync(join(ROOT, 'cluster.config.json'), 'utf8')) as Record<string, unknown>;
    const configPath = join(dir, 'cluster.config.json');
    // The shipped config's timing, sessions and snapshot settings, and default limits.
    writeFileSync(configPath, JSON.stringify({ clusterId: 'palisade-hostile', secret: 'palisade-hostile-secret-0123456789', nodes, raft: shipped.raft, sessions: shipped.sessions, snapshot: shipped.snapshot, ...extra }, null, 2));
    const c = new Cluster(dir, configPath, nodes);
    const creds = extra.auth ? { token: TOKEN } : {};
    const started = await settleAll(nodes.map((n) => startNode({ id: n.id, configPath, logPath: c.logPath(n.id), clientUrl: n.clientUrl, cli, credentials: creds })));
    started.forEach((p, i) => c.procs.set(nodes[i]!.id, p));
    for (let i = 0; agreedLeader(await c.statuses(creds)) === null; i++) {
      if (i > 400) throw new Error('no leader');
      await new Promise((r) => setTimeout(r, 25));
    }
    return c;
  }

  logPath(id: string): string {
    return join(this.dir, `${id}.log`);
  }

  async statuses(creds: { token?: string } = {}): Promise<(NodeStatus | null)[]> {
    return Promise.all(this.nodes.map((n) => rpc(n.clientUrl, { op: 'status' }, 1_000, creds).catch(() => null)));
  }

  async leader(creds: { token?: string } = {}): Promise<Node> {
    const id = agreedLeader(await this.statuses(creds));
    return this.nodes.find((n) => n.id === id) ?? this.nodes[0]!;
  }

  async stop(): Promise<void> {
    for (const p of this.procs.values()) await signalNode(p, 'SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Per node, over a phase: peak RSS, longest event-loop delay, log bytes, highest term. */
class Sampler {
  private readonly peakRss = new Map<string, number>();
  private readonly maxLag = new Map<string, number>();
  private readonly logStart = new Map<string, number>();
  private readonly rssStart = new Map<string, number>();
  private termStart = 0;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private readonly scrapers: Promise<void>[] = [];

  constructor(private readonly c: Cluster) {}

  async start(creds: { token?: string } = {}): Promise<void> {
    this.termStart = Math.max(...(await this.c.statuses(creds)).map((s) => s?.term ?? 0));
    for (const n of this.c.nodes) {
      this.logStart.set(n.id, statSync(this.c.logPath(n.id)).size);
      this.rssStart.set(n.id, rssMb(this.c.procs.get(n.id)!.pid!));
      await lagMs(n.httpUrl); // resets the maximum
    }
    this.running = true;
    this.timer = setInterval(() => this.sampleRss(), 100);
    // One scrape in flight per node, back to back, never abandoned: a scrape that a stalled
    // node answers late still reports the stall (the node resets its maximum when it answers,
    // so a scrape given up on would lose it).
    for (const n of this.c.nodes) {
      this.scrapers.push(
        (async () => {
          while (this.running) {
            this.maxLag.set(n.id, Math.max(this.maxLag.get(n.id) ?? 0, await lagMs(n.httpUrl)));
            await new Promise((r) => setTimeout(r, 100));
          }
        })(),
      );
    }
  }

  private sampleRss(): void {
    for (const n of this.c.nodes) {
      const pid = this.c.procs.get(n.id)?.pid;
      if (pid) this.peakRss.set(n.id, Math.max(this.peakRss.get(n.id) ?? 0, rssMb(pid)));
    }
  }

  async stop(creds: { token?: string } = {}): Promise<Record<string, unknown>> {
    if (this.timer) clearInterval(this.timer);
    this.sampleRss();
    this.running = false;
    await Promise.all(this.scrapers);
    const termEnd = Math.max(...(await this.c.statuses(creds)).map((s) => s?.term ?? 0));
    const nodes = Object.fromEntries(
      this.c.nodes.map((n) => [
        n.id,
        {
          rssMb: `${Math.round(this.rssStart.get(n.id)!)} -> ${Math.round(this.peakRss.get(n.id) ?? 0)}`,
          lagMaxMs: Math.round(this.maxLag.get(n.id) ?? 0),
          logBytes: statSync(this.c.logPath(n.id)).size - this.logStart.get(n.id)!,
        },
      ]),
    );
    return { termChanges: termEnd - this.termStart, nodes };
  }
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function lagMs(httpUrl: string): Promise<number> {
  try {
    // No client-side timeout: see Sampler (a node stalled for seconds answers late).
    const text = await (await fetch(new URL('/metrics', httpUrl), { signal: AbortSignal.timeout(120_000) })).text();
    const m = /^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})?\s+(\S+)/m.exec(text);
    return m ? Number(m[1]) * 1000 : 0;
  } catch {
    return 0;
  }
}

function httpOf(clientUrl: string): string {
  return clientUrl.replace(/^ws/, 'http');
}

/** One HTTP request; resolves with the status and the number of body bytes. */
function call(url: string, o: { method?: string; body?: string; headers?: Record<string, string>; agent?: Agent } = {}): Promise<{ status: number; bytes: number }> {
  return new Promise((resolveCall) => {
    const headers = { ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers };
    const req = request(url, { method: o.method ?? 'GET', headers, ...(o.agent ? { agent: o.agent } : {}) }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => (bytes += d.length));
      res.on('end', () => resolveCall({ status: res.statusCode ?? 0, bytes }));
      res.on('close', () => resolveCall({ status: res.statusCode ?? 0, bytes }));
    });
    req.on('error', () => resolveCall({ status: 0, bytes: 0 }));
    req.end(o.body);
  });
}

/** An SSE watch read until its snapshot ends (or the node ends it); the bytes it took. */
async function readWatch(clientUrl: string, prefix: string): Promise<{ bytes: number; ms: number; complete: boolean }> {
  const started = performance.now();
  const ac = new AbortController();
  let bytes = 0;
  let complete = false;
  let tail = '';
  try {
    const res = await fetch(`${httpOf(clientUrl)}/v1/kv/watch?prefix=${prefix}`, { signal: ac.signal });
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      tail = (tail + Buffer.from(chunk).toString('latin1')).slice(-64);
      // The end of the snapshot: the one event of older builds ("...]}"), or the last page.
      if (tail.endsWith(']}\n\n') || tail.endsWith('"more":false}\n\n')) {
        complete = true;
        break;
      }
    }
  } catch {
    // cut by the node
  } finally {
    ac.abort();
  }
  return { bytes, ms: Math.round(performance.now() - started), complete };
}

async function watchCase(): Promise<Record<string, unknown>> {
  const c = await Cluster.start();
  try {
    const leader = await c.leader();
    const follower = c.nodes.find((n) => n.id !== leader.id)!;
    const w = await RawClient.connect(leader.clientUrl);
    const session = (await w.ok({ op: 'openSession', ttlMs: 600_000 })).session as number;
    const value = new Uint8Array(65_000).fill(0x01);
    for (let i = 0; i < 1_000; i++) await w.ok({ op: 'put', session, seq: i + 1, ackedSeq: i, key: `t/${String(i).padStart(4, '0')}`, value });
    w.close();
    const out: Record<string, unknown> = {};
    for (const [phase, node] of [['one watch, follower', follower], ['one watch, leader', leader]] as const) {
      const s = new Sampler(c);
      await s.start();
      const r = await readWatch(node.clientUrl, 't/');
      out[phase] = { ...r, ...(await s.stop()) };
    }
    const s = new Sampler(c);
    await s.start();
    const url = new URL(httpOf(follower.clientUrl));
    const sockets = Array.from({ length: 4 }, () => {
      const sock = connect(Number(url.port), url.hostname);
      sock.on('error', () => {});
      sock.on('connect', () => {
        sock.pause();
        sock.write(`GET /v1/kv/watch?prefix=t/ HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      });
      return sock;
    });
    await new Promise((r) => setTimeout(r, 15_000));
    for (const x of sockets) x.destroy();
    out['four unread watches, 15 s'] = await s.stop();
    return out;
  } finally {
    await c.stop();
  }
}

async function sessionsCase(): Promise<Record<string, unknown>> {
  const c = await Cluster.start();
  try {
    const node = c.nodes[0]!;
    const s = new Sampler(c);
    await s.start();
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const started = performance.now();
    const statuses = new Map<number, number>();
    const N = 20_000;
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < N) {
          next++;
          const r = await call(`${httpOf(node.clientUrl)}/v1/session/open`, { method: 'POST', body: '{"ttlMs":3600000}', agent });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    agent.destroy();
    const seconds = (performance.now() - started) / 1000;
    const other = await call(`${httpOf(c.nodes[1]!.clientUrl)}/v1/session/open`, { method: 'POST', body: '{"ttlMs":60000}' });
    return { requests: N, opened: statuses.get(200) ?? 0, answers: Object.fromEntries(statuses), seconds: Number(seconds.toFixed(1)), anotherClientCanOpen: other.status === 200, ...(await s.stop()) };
  } finally {
    await c.stop();
  }
}

async function logsCase(): Promise<Record<string, unknown>> {
  const c = await Cluster.start({ auth: { tokens: [{ name: 'app', token: TOKEN }] } });
  const creds = { token: TOKEN };
  try {
    const out: Record<string, unknown> = {};
    const node = c.nodes[0]!;
    let s = new Sampler(c);
    await s.start(creds);
    const agent = new Agent({ keepAlive: false, maxSockets: 64 });
    const N = 20_000;
    let next = 0;
    let refused = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < N) {
          next++;
          if ((await call(`${httpOf(node.clientUrl)}/v1/status`, { headers: { authorization: 'Bearer nope' }, agent })).status === 401) refused++;
        }
      }),
    );
    agent.destroy();
    out['20,000 bad tokens'] = { refused, seconds: Number(((performance.now() - started) / 1000).toFixed(1)), ...(await s.stop(creds)) };
    s = new Sampler(c);
    await s.start(creds);
    const target = c.nodes[1]!;
    let attempts = 0;
    const deadline = Date.now() + 10_000;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < deadline) {
          await wrongMac(target.peerUrl);
          attempts++;
        }
      }),
    );
    out['10 s of wrong-MAC handshakes'] = { attempts, ...(await s.stop(creds)) };
    return out;
  } finally {
    await c.stop();
  }
}

function wrongMac(peerUrl: string): Promise<void> {
  return new Promise((done) => {
    const ws = new WebSocket(peerUrl);
    ws.on('error', () => {});
    ws.on('message', (data: Buffer) => {
      if ((decodeFrame(data) as { k?: string }).k !== 'hello') return;
      ws.send(encodeFrame({ k: 'auth', v: 2, clusterId: 'palisade-hostile', from: 'n1', to: 'n2', nonce: new Uint8Array(randomBytes(32)), mac: new Uint8Array(randomBytes(32)) }));
    });
    ws.on('close', () => done());
    setTimeout(() => ws.terminate(), 6_000).unref();
  });
}

async function ledgerCase(): Promise<Record<string, unknown>> {
  const c = await Cluster.start();
  try {
    const leader = await c.leader();
    const s = new Sampler(c);
    await s.start();
    const w = await RawClient.connect(leader.clientUrl);
    const session = (await w.ok({ op: 'openSession', ttlMs: 600_000 })).session as number;
    let seq = 0;
    const next = (): { seq: number; ackedSeq: number } => ({ seq: ++seq, ackedSeq: seq - 1 });
    const lock = await w.ok({ op: 'acquire', session, ...next(), name: 'ledger/fence', mode: 'exclusive', wait: false });
    const fence = { lock: 'ledger/fence', token: lock.token as number };
    const result = new Uint8Array(60_000).fill(0x2a);
    let done = 0;
    const errors = new Map<string, number>();
    const started = performance.now();
    for (let i = 0; i < 3_000; i++) {
      const b = await w.call({ op: 'beginOp', session, ...next(), opKey: `op/${i}`, fence }, 30_000);
      const r = b.ok ? await w.call({ op: 'completeOp', session, ...next(), opKey: `op/${i}`, result, fence }, 30_000) : b;
      if (r.ok) done++;
      else errors.set(r.error.code, (errors.get(r.error.code) ?? 0) + 1);
    }
    w.close();
    return { completed: done, errors: Object.fromEntries(errors), seconds: Number(((performance.now() - started) / 1000).toFixed(1)), ...(await s.stop()) };
  } finally {
    await c.stop();
  }
}

const CASES: Record<string, () => Promise<Record<string, unknown>>> = { watch: watchCase, sessions: sessionsCase, logs: logsCase, ledger: ledgerCase };

const report: Record<string, unknown> = { label, root, cli, at: new Date().toISOString(), cases: {} };
for (const [name, run] of Object.entries(CASES)) {
  if (!only.has(name)) continue;
  console.log(`[hostile] ${label}: ${name} ...`);
  try {
    (report.cases as Record<string, unknown>)[name] = await run();
  } catch (e) {
    (report.cases as Record<string, unknown>)[name] = { error: (e as Error).message.slice(0, 2_000) };
  }
  console.log(JSON.stringify((report.cases as Record<string, unknown>)[name], null, 2));
}
const dir = join(ROOT, 'bench/results');
mkdirSync(dir, { recursive: true });
const file = join(dir, `hostile-${label.replace(/[^A-Za-z0-9._-]+/g, '_')}.json`);
writeFileSync(file, JSON.stringify(report, null, 2));
console.log(`[hostile] wrote ${file}`);
