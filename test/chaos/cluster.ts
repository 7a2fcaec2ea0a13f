// A cluster of real `palisade serve` processes (from dist/) for chaos runs. Unlike the
// integration harness, every node gets a config file of its own, in which the peerUrl of
// every other node is a fault proxy dedicated to that directed pair (see proxy.ts): the
// nemesis can then cut any link silently. Client URLs stay direct.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rpc } from '../../src/protocol/rpc.js';
import type { NodeStatus } from '../../src/protocol/client-protocol.js';
import { CLI, agreedLeader, freePorts, settleAll, signalNode, sleep, startNode } from '../support/node-process.js';
import { ProxyMesh } from './proxy.js';

export interface ClusterTiming {
  readonly raft: { readonly tickMs: number; readonly heartbeatMs: number; readonly electionTimeoutMs: number };
  readonly sessions: { readonly defaultTtlMs: number; readonly minTtlMs: number; readonly maxTtlMs: number; readonly lockDelayMs: number };
  readonly snapshot: { readonly entries: number; readonly keepTail: number };
}

export interface ClusterOptions extends ClusterTiming {
  readonly nodes: number;
  /** LevelDB directories and the generated configs. */
  readonly dataDir: string;
  /** One log file per node. */
  readonly logDir: string;
  /** The `palisade` entry point the nodes run (default: dist/cli/main.js). */
  readonly cli?: string;
}

interface NodeSpec {
  readonly id: string;
  readonly peerPort: number;
  readonly clientUrl: string;
  readonly dataDir: string;
  readonly configPath: string;
}

export class ChaosCluster {
  readonly ids: readonly string[];
  readonly mesh: ProxyMesh;
  private readonly specs: ReadonlyMap<string, NodeSpec>;
  private readonly procs = new Map<string, ChildProcess>();
  private readonly paused = new Set<string>();
  private readonly logDir: string;
  private readonly cli: string;

  private constructor(specs: NodeSpec[], mesh: ProxyMesh, logDir: string, cli: string) {
    this.specs = new Map(specs.map((s) => [s.id, s]));
    this.ids = specs.map((s) => s.id);
    this.mesh = mesh;
    this.logDir = logDir;
    this.cli = cli;
  }

  static async create(options: ClusterOptions): Promise<ChaosCluster> {
    mkdirSync(options.dataDir, { recursive: true });
    mkdirSync(options.logDir, { recursive: true });
    // Every port of the cluster at once, so that no two are the same: a proxy listening on
    // "any free port" could take a node's port before the node starts.
    const n = options.nodes;
    const ports = await freePorts(2 * n + n * (n - 1));
    const take = (): number => ports.pop()!;
    const specs: NodeSpec[] = [];
    for (let i = 1; i <= n; i++) {
      const id = `n${i}`;
      specs.push({
        id,
        peerPort: take(),
        clientUrl: `ws://127.0.0.1:${take()}`,
        dataDir: join(options.dataDir, id),
        configPath: join(options.dataDir, `${id}.config.json`),
      });
    }
    const mesh = await ProxyMesh.create(new Map(specs.map((s) => [s.id, s.peerPort])), take);
    for (const self of specs) {
      const config = {
        clusterId: 'palisade-chaos',
        secret: 'chaos-test-secret-0123456789abcdef',
        nodes: specs.map((n) => ({
          id: n.id,
          // A node listens on its own real port and reaches every other node through the
          // proxy for that directed pair.
          peerUrl: n.id === self.id ? `ws://127.0.0.1:${n.peerPort}` : mesh.urlFor(self.id, n.id),
          clientUrl: n.clientUrl,
          dataDir: n.dataDir,
        })),
        raft: options.raft,
        sessions: options.sessions,
        snapshot: options.snapshot,
      };
      writeFileSync(self.configPath, JSON.stringify(config, null, 2));
    }
    return new ChaosCluster(specs, mesh, options.logDir, options.cli ?? CLI);
  }

  get endpoints(): string[] {
    return this.ids.map((id) => this.spec(id).clientUrl);
  }

  isRunning(id: string): boolean {
    return this.procs.has(id);
  }

  isPaused(id: string): boolean {
    return this.paused.has(id);
  }

  /** Nodes that run and are not paused. */
  get responsive(): string[] {
    return this.ids.filter((id) => this.isRunning(id) && !this.isPaused(id));
  }

  /** Starts a node; resolves once its client port answers. */
  async start(id: string): Promise<void> {
    const spec = this.spec(id);
    const p = await startNode({ id, configPath: spec.configPath, logPath: join(this.logDir, `${id}.log`), clientUrl: spec.clientUrl, cli: this.cli });
    this.procs.set(id, p);
    p.once('exit', () => {
      if (this.procs.get(id) === p) this.procs.delete(id);
      this.paused.delete(id);
    });
  }

  async startAll(): Promise<void> {
    await settleAll(this.ids.map((id) => this.start(id)));
  }

  /** SIGKILL; resolves once the process is gone. */
  async kill(id: string): Promise<void> {
    const p = this.procs.get(id);
    if (p) await signalNode(p, 'SIGKILL');
  }

  pause(id: string): void {
    const p = this.procs.get(id);
    if (!p || this.paused.has(id)) return;
    p.kill('SIGSTOP');
    this.paused.add(id);
  }

  resume(id: string): void {
    const p = this.procs.get(id);
    this.paused.delete(id);
    p?.kill('SIGCONT');
  }

  async status(id: string, timeoutMs = 1_000): Promise<NodeStatus | null> {
    try {
      return await rpc(this.spec(id).clientUrl, { op: 'status' }, timeoutMs);
    } catch {
      return null;
    }
  }

  async statuses(timeoutMs = 1_000): Promise<NodeStatus[]> {
    const all = await Promise.all(this.responsive.map((id) => this.status(id, timeoutMs)));
    return all.filter((s): s is NodeStatus => s !== null);
  }

  /** The node that claims leadership in the highest term, among those that answer. */
  async currentLeader(): Promise<string | null> {
    const leaders = (await this.statuses(500)).filter((s) => s.role === 'leader');
    leaders.sort((a, b) => b.term - a.term);
    return leaders[0]?.id ?? null;
  }

  /** Waits until every responsive node names the same leader in the same term. */
  async waitForLeader(timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ss = await this.statuses(500);
      const leader = agreedLeader(ss);
      if (leader !== null && ss.length === this.responsive.length) return leader;
      if (Date.now() > deadline) throw new Error(`no agreed leader within ${timeoutMs} ms: ${JSON.stringify(ss.map((s) => [s.id, s.role, s.term, s.leader]))}`);
      await sleep(50);
    }
  }

  /** Ends every fault: links healed, paused nodes resumed, killed nodes started again. */
  async healAll(): Promise<void> {
    this.mesh.healAll();
    for (const id of [...this.paused]) this.resume(id);
    await settleAll(this.ids.filter((id) => !this.isRunning(id)).map((id) => this.start(id)));
  }

  async stop(): Promise<void> {
    for (const id of [...this.paused]) this.resume(id);
    await Promise.all(this.ids.map((id) => this.kill(id)));
    await this.mesh.close();
  }

  private spec(id: string): NodeSpec {
    const s = this.specs.get(id);
    if (!s) throw new Error(`no node ${id}`);
    return s;
  }
}
