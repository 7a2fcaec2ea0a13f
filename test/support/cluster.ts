// Real `palisade serve` processes on 127.0.0.1 with real LevelDB in a temp folder, for
// integration tests. Ports are picked free by the OS, so suites can run side by side.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rpc, type RpcCredentials } from '../../src/protocol/rpc.js';
import type { NodeStatus } from '../../src/protocol/client-protocol.js';
import { agreedLeader, freePort, logTail, settleAll, signalNode, sleep, startNode } from './node-process.js';

export { CLI, ROOT, freePort, settleAll, sleep, until } from './node-process.js';

export interface HarnessOptions {
  nodes?: number;
  raft?: { tickMs?: number; heartbeatMs?: number; electionTimeoutMs?: number };
  sessions?: { defaultTtlMs?: number; minTtlMs?: number; maxTtlMs?: number; lockDelayMs?: number; maxSessions?: number; maxSessionsPerToken?: number };
  snapshot?: { entries?: number; keepTail?: number };
  secret?: string;
  /** Further top-level config sections (auth, tls, limits ...), written as given. */
  extraConfig?: Record<string, unknown>;
  /** wss:// URLs for these ports (their tls sections come in extraConfig). */
  secure?: { peer?: boolean; client?: boolean };
  /** How the harness itself reaches the client ports (status probes): token, CA. */
  credentials?: RpcCredentials;
  /** Nodes whose file differs from the others' (a rolling config change): each section given
   *  here is merged into that section of the node's own config file. */
  perNode?: Record<string, Record<string, Record<string, unknown>>>;
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
        peerUrl: `${c.peerScheme}://127.0.0.1:${await freePort()}`,
        clientUrl: `${c.clientScheme}://127.0.0.1:${await freePort()}`,
        httpUrl: `http://127.0.0.1:${await freePort()}`,
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
    for (const [id, sections] of Object.entries(opts.perNode ?? {})) {
      const own: Record<string, unknown> = { ...config };
      for (const [section, values] of Object.entries(sections)) own[section] = { ...(own[section] as Record<string, unknown> | undefined), ...values };
      c.ownFiles.add(id);
      writeFileSync(c.configFile(id), JSON.stringify(own, null, 2));
    }
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
  /** Founding nodes with a config file of their own (perNode). */
  private readonly ownFiles = new Set<string>();

  /** Describe a new node (not a founding member): it starts with `--join` and its own
   *  config file, which lists the founding members and itself. */
  async addNodeSpec(id: string): Promise<NodeInfo> {
    const n: NodeInfo = {
      id,
      peerUrl: `${this.peerScheme}://127.0.0.1:${await freePort()}`,
      clientUrl: `${this.clientScheme}://127.0.0.1:${await freePort()}`,
      httpUrl: `http://127.0.0.1:${await freePort()}`,
      dataDir: join(this.dir, id),
    };
    this.nodes.push(n);
    this.joiners.add(id);
    writeFileSync(this.configFile(id), JSON.stringify({ ...this.baseConfig, nodes: [...this.baseConfig.nodes, n] }, null, 2));
    return n;
  }

  private configFile(id: string): string {
    return this.joiners.has(id) || this.ownFiles.has(id) ? join(this.dir, `${id}.config.json`) : this.configPath;
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
    const p = await startNode({
      id,
      configPath: this.configFile(id),
      logPath: join(this.dir, `${id}.log`),
      clientUrl: this.node(id).clientUrl,
      args: opts.join ? ['--join', opts.join.join(',')] : [],
      credentials: this.credentials,
      startTimeoutMs: 15_000,
    });
    this.procs.set(id, p);
    p.once('exit', () => {
      if (this.procs.get(id) === p) this.procs.delete(id);
    });
    if (p.exitCode !== null || p.signalCode !== null) this.procs.delete(id);
    return p;
  }

  async startAll(): Promise<void> {
    await settleAll(this.nodes.map((n) => this.start(n.id)));
  }

  logOf(id: string): string {
    return logTail(join(this.dir, `${id}.log`), Infinity);
  }

  pid(id: string): number {
    const p = this.procs.get(id);
    if (!p?.pid) throw new Error(`node ${id} is not running`);
    return p.pid;
  }

  /** Send a signal; for SIGKILL/SIGTERM resolve once the process has exited. */
  async signal(id: string, sig: NodeJS.Signals): Promise<void> {
    const p = this.procs.get(id);
    if (p) await signalNode(p, sig);
  }

  async status(id: string): Promise<NodeStatus | null> {
    try {
      return await rpc(this.node(id).clientUrl, { op: 'status' }, 1000, this.credentials);
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
      const leader = agreedLeader(ss);
      if (leader !== null && !exclude.includes(leader)) return leader;
      if (Date.now() > deadline) throw new Error(`no agreed leader within ${timeoutMs} ms: ${JSON.stringify(ss)}`);
      await sleep(25);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.procs.keys()].map((id) => this.signal(id, 'SIGKILL')));
    if (!process.env.KEEP_TEST_DATA) rmSync(this.dir, { recursive: true, force: true });
  }
}
