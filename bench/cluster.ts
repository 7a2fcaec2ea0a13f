// A fresh 3-node cluster of real `palisade serve` processes (dist/cli/main.js of the build
// under test) for one workload: generated config in a temporary folder, distinct free ports, LevelDB with fsync
// on, and the Raft timing of the project's cluster.config.json (tick 10 ms, heartbeat 50 ms,
// election 300 ms). The client-port limits that protect a node from one client address are
// lifted, because every bench client connects from 127.0.0.1 (see docs/benchmarks.md).
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/cluster-config.js';
import { ROOT, cliOf, freePorts, logTail, settleAll, signalNode, startNode } from '../test/support/node-process.js';
import { epochMs, sleep } from './lib/clock.js';
import { nodeStatus, type BenchNode, type NodeCounters } from './lib/node-sampler.js';

export { CLI, ROOT } from '../test/support/node-process.js';

/** Limits lifted for the bench: all its clients share one address and many sessions share a connection. */
export const BENCH_LIMITS = {
  requestsPerSecond: 0,
  requestsPerSecondPerAddress: 0,
  maxConnectionsPerAddress: 100_000,
  maxSessionsPerConnection: 100_000,
  maxSessionsPerAddress: 2_000_000,
  maxInFlightPerAddress: 1_000_000,
} as const;

interface NodeSpec {
  readonly id: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly dataDir: string;
}

/** The raft, sessions and snapshot sections of the project's cluster.config.json. */
export interface ClusterTiming {
  readonly raft: { readonly tickMs: number; readonly heartbeatMs: number; readonly electionTimeoutMs: number };
  readonly sessions: Readonly<Record<string, number>>;
  readonly snapshot: Readonly<Record<string, number>>;
}

export function projectTiming(): ClusterTiming {
  const path = join(ROOT, 'cluster.config.json');
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Partial<ClusterTiming>;
  return {
    // The timings its raft.profile stands for, as numbers (the bench report prints them).
    raft: loadConfig(path).raft,
    sessions: raw.sessions ?? {},
    snapshot: raw.snapshot ?? {},
  };
}

/** Every node process this process started and that still runs, and every cluster folder
 *  not yet removed: none outlives us, even when we are interrupted. */
const running = new Set<ChildProcess>();
const folders = new Set<string>();
export function killAllNodes(): void {
  for (const p of running) p.kill('SIGKILL');
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    killAllNodes();
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  });
}

export class BenchCluster {
  private readonly procs = new Map<string, ChildProcess>();

  private constructor(
    readonly dir: string,
    readonly configPath: string,
    private readonly specs: readonly NodeSpec[],
    readonly timing: ClusterTiming,
    private readonly cli: string,
  ) {}

  /**
   * `build` is the root of the checkout whose dist/ the nodes run: this one (ROOT), or an
   * older commit's for `npm run bench -- --abba`. The config is this checkout's either way,
   * so that two builds are compared under the same settings.
   */
  static async create(build: string, size = 3): Promise<BenchCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-bench-'));
    const ports = await freePorts(2 * size);
    const specs: NodeSpec[] = Array.from({ length: size }, (_, i) => ({
      id: `n${i + 1}`,
      peerUrl: `ws://127.0.0.1:${ports[2 * i]!}`,
      clientUrl: `ws://127.0.0.1:${ports[2 * i + 1]!}`,
      dataDir: join(dir, `n${i + 1}`),
    }));
    const timing = projectTiming();
    const configPath = join(dir, 'cluster.config.json');
    const config = {
      clusterId: 'palisade-bench',
      secret: 'palisade-bench-secret-0123456789abcdef',
      nodes: specs,
      raft: timing.raft,
      // The sessions workload opens up to 1,000,000 sessions (the default cluster-wide cap is
      // 100,000), and an open retried after a leader change may leave an orphan that counts
      // until it expires: room for twice that.
      sessions: { ...timing.sessions, maxSessions: 2_000_000 },
      snapshot: timing.snapshot,
      limits: BENCH_LIMITS,
    };
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    folders.add(dir);
    return new BenchCluster(dir, configPath, specs, timing, cliOf(build));
  }

  /** create + startAll, on fresh ports again if a node could not start (a port taken meanwhile). */
  static async launch(build: string, attempts = 3): Promise<BenchCluster> {
    for (let i = 1; ; i++) {
      const c = await BenchCluster.create(build);
      try {
        await c.startAll();
        await c.waitCaughtUp();
        return c;
      } catch (e) {
        const tails = c.ids.map((id) => `--- ${id} ---\n${c.logTail(id, 800)}`).join('\n');
        await c.stop();
        if (i >= attempts) throw new Error(`${(e as Error).message}\n${tails}`);
      }
    }
  }

  get ids(): string[] {
    return this.specs.map((s) => s.id);
  }

  get endpoints(): string[] {
    return this.specs.map((s) => s.clientUrl);
  }

  clientUrl(id: string): string {
    return this.spec(id).clientUrl;
  }

  /** The running nodes with their pids, as the client process needs them. */
  nodes(): BenchNode[] {
    return this.specs.filter((s) => this.procs.has(s.id)).map((s) => ({ id: s.id, clientUrl: s.clientUrl, pid: this.pid(s.id) }));
  }

  pid(id: string): number {
    const pid = this.procs.get(id)?.pid;
    if (pid === undefined) throw new Error(`node ${id} is not running`);
    return pid;
  }

  isRunning(id: string): boolean {
    return this.procs.has(id);
  }

  async startAll(): Promise<void> {
    await settleAll(this.specs.map((s) => this.start(s.id)));
    await this.waitForLeader();
  }

  /** Start one node on its data directory; resolves once its client port answers. */
  async start(id: string): Promise<void> {
    const spec = this.spec(id);
    const p = await startNode({ id, configPath: this.configPath, logPath: join(this.dir, `${id}.log`), clientUrl: spec.clientUrl, cli: this.cli });
    this.procs.set(id, p);
    running.add(p);
    p.once('exit', () => {
      running.delete(p);
      if (this.procs.get(id) === p) this.procs.delete(id);
    });
  }

  /** SIGKILL a node; resolves with the time the signal was sent, once the process is gone. */
  async kill(id: string): Promise<number> {
    const p = this.procs.get(id);
    if (!p) throw new Error(`node ${id} is not running`);
    const exited = new Promise<void>((res) => p.once('exit', () => res()));
    const at = epochMs();
    p.kill('SIGKILL');
    await exited;
    return at;
  }

  async status(id: string): Promise<NodeCounters | null> {
    return this.procs.has(id) ? nodeStatus(this.spec(id).clientUrl, 1_000) : null;
  }

  /** Wait until every running node names the same leader in the same term. */
  async waitForLeader(timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ids = [...this.procs.keys()];
      const all = await Promise.all(ids.map((id) => this.status(id)));
      const leader = all.find((s) => s?.role === 'leader');
      if (leader && all.every((s) => s !== null && s.leader === leader.leader && s.term === leader.term) && leader.leader !== null) {
        return leader.leader;
      }
      if (Date.now() > deadline) throw new Error(`no agreed leader within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  /** Wait until every running node has applied what the leader had committed when asked. */
  async waitCaughtUp(timeoutMs = 60_000): Promise<void> {
    const leader = await this.waitForLeader(timeoutMs);
    const target = (await this.status(leader))?.commitIndex ?? 0;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const all = await Promise.all([...this.procs.keys()].map((id) => this.status(id)));
      if (all.every((s) => s !== null && s.appliedIndex >= target)) return;
      if (Date.now() > deadline) throw new Error(`nodes did not catch up to ${target} within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  logTail(id: string, chars = 2_000): string {
    return logTail(join(this.dir, `${id}.log`), chars);
  }

  async stop(options: { keepData?: boolean } = {}): Promise<void> {
    // A node run with a CPU profiler (PALISADE_NODE_FLAGS=--cpu-prof) writes its profile
    // only on a clean exit.
    const signal = (process.env.PALISADE_NODE_FLAGS ?? '').includes('--cpu-prof') ? 'SIGTERM' : 'SIGKILL';
    await Promise.all([...this.procs.values()].map((p) => signalNode(p, signal)));
    folders.delete(this.dir);
    if (!options.keepData) rmSync(this.dir, { recursive: true, force: true });
  }

  private spec(id: string): NodeSpec {
    const s = this.specs.find((x) => x.id === id);
    if (!s) throw new Error(`no node ${id}`);
    return s;
  }
}
