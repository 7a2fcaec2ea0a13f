// Real `palisade serve` processes on 127.0.0.1 with real LevelDB in a temp folder, for
// integration tests. Ports are picked free by the OS, so suites can run side by side.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { rpc, type RpcCredentials } from '../../src/transport/rpc.js';
import type { NodeStatus } from '../../src/transport/client-protocol.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist/cli/main.js');

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

export interface HarnessOptions {
  nodes?: number;
  raft?: { tickMs?: number; heartbeatMs?: number; electionTimeoutMs?: number };
  sessions?: { defaultTtlMs?: number; minTtlMs?: number; maxTtlMs?: number; lockDelayMs?: number };
  snapshot?: { entries?: number; keepTail?: number };
  secret?: string;
  /** Further top-level config sections (auth, tls, limits ...), written as given. */
  extraConfig?: Record<string, unknown>;
  /** wss:// URLs for these ports (their tls sections come in extraConfig). */
  secure?: { peer?: boolean; client?: boolean };
  /** How the harness itself reaches the client ports (status probes): token, CA. */
  credentials?: RpcCredentials;
}

export interface NodeInfo {
  id: string;
  peerUrl: string;
  clientUrl: string;
  /** Metrics, health checks and the status page. */
  httpUrl: string;
  dataDir: string;
}

export class TestCluster {
  readonly dir: string;
  readonly configPath: string;
  readonly nodes: NodeInfo[] = [];
  readonly procs = new Map<string, ChildProcess>();
  credentials: RpcCredentials = {};
  private peerScheme = 'ws';
  /** Ports handed out to this cluster: the OS may offer a just-freed one twice. */
  private readonly ports = new Set<number>();
  private clientScheme = 'ws';
  private constructor(dir: string) {
    this.dir = dir;
    this.configPath = join(dir, 'cluster.config.json');
  }

  static async create(opts: HarnessOptions = {}): Promise<TestCluster> {
    const c = new TestCluster(mkdtempSync(join(tmpdir(), 'palisade-it-')));
    c.credentials = opts.credentials ?? {};
    if (opts.secure?.peer) c.peerScheme = 'wss';
    if (opts.secure?.client) c.clientScheme = 'wss';
    const n = opts.nodes ?? 3;
    for (let i = 1; i <= n; i++) {
      c.nodes.push({
        id: `n${i}`,
        peerUrl: `${c.peerScheme}://127.0.0.1:${await c.newPort()}`,
        clientUrl: `${c.clientScheme}://127.0.0.1:${await c.newPort()}`,
        httpUrl: `http://127.0.0.1:${await c.newPort()}`,
        dataDir: join(c.dir, `n${i}`),
      });
    }
    const config = {
      clusterId: 'palisade-test',
      secret: opts.secret ?? 'integration-test-secret-0123456789',
      nodes: c.nodes,
      raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300, ...opts.raft },
      sessions: { defaultTtlMs: 10000, minTtlMs: 600, maxTtlMs: 600000, lockDelayMs: 0, ...opts.sessions },
      snapshot: { entries: 20000, keepTail: 5000, ...opts.snapshot },
      ...opts.extraConfig,
    };
    writeFileSync(c.configPath, JSON.stringify(config, null, 2));
    c.baseConfig = { ...config, nodes: [...c.nodes] };
    return c;
  }

  /** A cluster with every node running and an agreed leader; stopped again if it gets neither. */
  static async started(opts: HarnessOptions = {}): Promise<TestCluster> {
    const c = await TestCluster.create(opts);
    try {
      await c.startAll();
      await c.waitForLeader();
      return c;
    } catch (e) {
      await c.stop();
      throw e;
    }
  }

  private baseConfig: Record<string, unknown> & { nodes: NodeInfo[] } = { nodes: [] };
  private readonly joiners = new Set<string>();

  /** Describe a new node (not a founding member): it starts with `--join` and its own
   *  config file, which lists the founding members and itself. */
  async addNodeSpec(id: string): Promise<NodeInfo> {
    const n: NodeInfo = {
      id,
      peerUrl: `${this.peerScheme}://127.0.0.1:${await this.newPort()}`,
      clientUrl: `${this.clientScheme}://127.0.0.1:${await this.newPort()}`,
      httpUrl: `http://127.0.0.1:${await this.newPort()}`,
      dataDir: join(this.dir, id),
    };
    this.nodes.push(n);
    this.joiners.add(id);
    writeFileSync(this.configFile(id), JSON.stringify({ ...this.baseConfig, nodes: [...this.baseConfig.nodes, n] }, null, 2));
    return n;
  }

  private configFile(id: string): string {
    return this.joiners.has(id) ? join(this.dir, `${id}.config.json`) : this.configPath;
  }

  private async newPort(): Promise<number> {
    for (;;) {
      const port = await freePort();
      if (this.ports.has(port)) continue;
      this.ports.add(port);
      return port;
    }
  }

  get endpoints(): string[] {
    return this.nodes.map((n) => n.clientUrl);
  }

  node(id: string): NodeInfo {
    const n = this.nodes.find((x) => x.id === id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /** Start one node; resolves once its client port answers. */
  async start(id: string, opts: { join?: string[] } = {}): Promise<ChildProcess> {
    const log = openSync(join(this.dir, `${id}.log`), 'a');
    const join_ = opts.join ? ['--join', opts.join.join(',')] : [];
    const p = spawn(process.execPath, [CLI, 'serve', '--config', this.configFile(id), '--id', id, '--log-level', 'info', ...join_], {
      stdio: ['ignore', log, log],
    });
    this.procs.set(id, p);
    p.on('exit', () => {
      if (this.procs.get(id) === p) this.procs.delete(id);
    });
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`node ${id} exited at start-up:\n${this.logOf(id).slice(-2000)}`);
      try {
        await rpc(this.node(id).clientUrl, { op: 'status' }, 500, this.credentials);
        return p;
      } catch {
        if (Date.now() > deadline) throw new Error(`node ${id} did not come up`);
        await sleep(50);
      }
    }
  }

  async startAll(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.start(n.id)));
  }

  logOf(id: string): string {
    try {
      return readFileSync(join(this.dir, `${id}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  pid(id: string): number {
    const p = this.procs.get(id);
    if (!p?.pid) throw new Error(`node ${id} is not running`);
    return p.pid;
  }

  /** Send a signal; for SIGKILL/SIGTERM resolve once the process has exited. */
  async signal(id: string, sig: NodeJS.Signals): Promise<void> {
    const p = this.procs.get(id);
    if (!p) return;
    if (sig === 'SIGKILL' || sig === 'SIGTERM') {
      const exited = new Promise<void>((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', () => r())));
      p.kill(sig);
      await exited;
    } else {
      p.kill(sig);
    }
  }

  async status(id: string): Promise<NodeStatus | null> {
    try {
      return await rpc<NodeStatus>(this.node(id).clientUrl, { op: 'status' }, 1000, this.credentials);
    } catch {
      return null;
    }
  }

  async statuses(): Promise<(NodeStatus | null)[]> {
    return Promise.all(this.nodes.map((n) => (this.procs.has(n.id) ? this.status(n.id) : Promise.resolve(null))));
  }

  /** Wait until the running nodes agree on one leader; returns its id. */
  async waitForLeader(timeoutMs = 10_000, exclude: string[] = []): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ss = (await this.statuses()).filter((s): s is NodeStatus => s !== null);
      const leaders = ss.filter((s) => s.role === 'leader' && !exclude.includes(s.id));
      if (leaders.length === 1) {
        const l = leaders[0]!;
        if (ss.every((s) => s.leader === l.id && s.term === l.term)) return l.id;
      }
      if (Date.now() > deadline) throw new Error(`no agreed leader within ${timeoutMs} ms: ${JSON.stringify(ss)}`);
      await sleep(25);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.procs.keys()].map((id) => this.signal(id, 'SIGKILL')));
    if (!process.env.KEEP_TEST_DATA) rmSync(this.dir, { recursive: true, force: true });
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Poll `fn` until it returns a truthy value (an event-free condition on another process). */
export async function until<T>(fn: () => Promise<T> | T, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
