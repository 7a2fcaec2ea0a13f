// What the bench reads from the nodes at the edges of a measurement window: each node's own
// counters (the `status` op: commit index, the Raft driver's fsync and entry counts, the peer
// transport's bytes) and, from /proc, its CPU time and resident memory. Two samples make a
// window's server-side cost.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rpc } from '../../src/protocol/rpc.js';
import { epochMs } from './clock.js';
import { RawConnection } from './raw-connection.js';

/** A node as the client process knows it. */
export interface BenchNode {
  readonly id: string;
  readonly clientUrl: string;
  readonly pid: number;
}

/** The parts of a node's status the bench uses (missing counters read as null). */
export interface NodeCounters {
  readonly role: string;
  readonly term: number;
  readonly leader: string | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly lastIndex: number | null;
  readonly sessions: number | null;
  readonly fsyncs: number | null;
  readonly fsyncBatches: number | null;
  readonly entriesPersisted: number | null;
  readonly readies: number | null;
  readonly bytesSent: number | null;
  readonly messagesSent: number | null;
}

export interface NodeSample {
  readonly id: string;
  readonly at: number;
  /** utime + stime in clock ticks; null when the process is gone. */
  readonly cpuTicks: number | null;
  readonly rssBytes: number | null;
  readonly counters: NodeCounters | null;
}

export interface ClusterSample {
  readonly at: number;
  readonly nodes: readonly NodeSample[];
  /** process.cpuUsage() of the process that took the sample (the client), µs. */
  readonly selfCpuMicros: number;
}

const CLOCK_TICKS_PER_SECOND = clockTicks();

function clockTicks(): number {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

export function cpuTicksOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  } catch {
    return null;
  }
}

export function rssBytesOf(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
}

export function countersFrom(status: unknown): NodeCounters {
  const s = record(status);
  const driver = record(s['driver']);
  const transport = record(s['transport']);
  return {
    role: typeof s['role'] === 'string' ? s['role'] : 'unknown',
    term: num(s['term']) ?? 0,
    leader: typeof s['leader'] === 'string' ? s['leader'] : null,
    commitIndex: num(s['commitIndex']) ?? 0,
    appliedIndex: num(s['appliedIndex']) ?? 0,
    lastIndex: num(s['lastIndex']),
    sessions: num(s['sessions']),
    fsyncs: num(driver['fsyncs']),
    fsyncBatches: num(driver['fsyncBatches']),
    entriesPersisted: num(driver['entriesPersisted']),
    readies: num(driver['readies']),
    bytesSent: num(transport['bytesSent']),
    messagesSent: num(transport['messagesSent']),
  };
}

export async function nodeStatus(url: string, timeoutMs = 2_000): Promise<NodeCounters | null> {
  try {
    return countersFrom(await rpc(url, { op: 'status' }, timeoutMs));
  } catch {
    return null;
  }
}

/** Samples the nodes over connections opened once, so that a sample takes about a round trip. */
export class ClusterSampler {
  private constructor(
    private readonly nodes: readonly BenchNode[],
    private readonly connections: Map<string, RawConnection>,
  ) {}

  static async open(nodes: readonly BenchNode[]): Promise<ClusterSampler> {
    const connections = new Map<string, RawConnection>();
    await Promise.all(
      nodes.map(async (n) => {
        try {
          connections.set(n.id, await RawConnection.open(n.clientUrl));
        } catch {
          // sampled as absent
        }
      }),
    );
    return new ClusterSampler(nodes, connections);
  }

  async sample(): Promise<ClusterSample> {
    const counters = await Promise.all(
      this.nodes.map(async (n) => {
        const c = this.connections.get(n.id);
        if (!c || c.closed) return null;
        const reply = await Promise.race([c.call({ op: 'status' }), new Promise<null>((r) => setTimeout(() => r(null), 2_000))]);
        return reply?.ok ? countersFrom(reply.result) : null;
      }),
    );
    const at = epochMs();
    const cpu = process.cpuUsage();
    return {
      at,
      selfCpuMicros: cpu.user + cpu.system,
      nodes: this.nodes.map((n, i) => ({ id: n.id, at, cpuTicks: cpuTicksOf(n.pid), rssBytes: rssBytesOf(n.pid), counters: counters[i]! })),
    };
  }

  close(): void {
    for (const c of this.connections.values()) c.close();
  }
}

/** Server-side cost of one window, from the leader's counters and every process's CPU. */
export interface WindowCost {
  readonly seconds: number;
  /** The node that led at both edges; null if leadership moved (the deltas are then null). */
  readonly leader: string | null;
  readonly commits: number | null;
  readonly fsyncs: number | null;
  readonly fsyncBatches: number | null;
  readonly entriesPersisted: number | null;
  readonly leaderBytesSent: number | null;
  /** % of one core over the window: the client process and each node. */
  readonly cpuPct: { readonly client: number; readonly nodes: Readonly<Record<string, number | null>> };
}

export function windowCost(a: ClusterSample, b: ClusterSample): WindowCost {
  const seconds = (b.at - a.at) / 1000;
  const nodes: Record<string, number | null> = {};
  for (const na of a.nodes) {
    const nb = b.nodes.find((x) => x.id === na.id);
    nodes[na.id] =
      na.cpuTicks !== null && nb?.cpuTicks != null ? ((nb.cpuTicks - na.cpuTicks) / CLOCK_TICKS_PER_SECOND / seconds) * 100 : null;
  }
  const leaderA = a.nodes.find((n) => n.counters?.role === 'leader');
  const leaderB = leaderA ? b.nodes.find((n) => n.id === leaderA.id && n.counters?.role === 'leader' && n.counters.term === leaderA.counters!.term) : undefined;
  const ca = leaderA?.counters ?? null;
  const cb = leaderB?.counters ?? null;
  const delta = (k: keyof NodeCounters): number | null => {
    if (!ca || !cb) return null;
    const x = ca[k];
    const y = cb[k];
    return typeof x === 'number' && typeof y === 'number' ? y - x : null;
  };
  return {
    seconds,
    leader: cb ? leaderA!.id : null,
    commits: delta('commitIndex'),
    fsyncs: delta('fsyncs') ?? delta('fsyncBatches'),
    fsyncBatches: delta('fsyncBatches'),
    entriesPersisted: delta('entriesPersisted'),
    leaderBytesSent: delta('bytesSent'),
    cpuPct: { client: ((b.selfCpuMicros - a.selfCpuMicros) / 1e6 / seconds) * 100, nodes },
  };
}

/** The per-operation view of a window's cost. */
export interface OpCost {
  /** Raft entries committed per operation (cycle, handoff, put, keepalive). */
  readonly commitsPerOp: number | null;
  /** The leader's synchronous writes per committed entry (≪ 1 with group commit). */
  readonly fsyncsPerCommit: number | null;
  /** Entries persisted per synchronous batch on the leader. */
  readonly entriesPerFsyncBatch: number | null;
  /** CPU time per committed entry, in µs: the leader's and the followers' mean. Steadier
   *  than throughput on a busy machine, and what "per-entry cost on followers" means. */
  readonly cpuMicrosPerCommit: { readonly leader: number | null; readonly followers: number | null };
}

export function opCost(w: WindowCost, ops: number): OpCost {
  const ratio = (x: number | null, y: number | null): number | null => (x === null || y === null || y === 0 ? null : x / y);
  return {
    commitsPerOp: ratio(w.commits, ops),
    fsyncsPerCommit: ratio(w.fsyncs, w.commits),
    entriesPerFsyncBatch: ratio(w.entriesPersisted, w.fsyncBatches),
    cpuMicrosPerCommit: cpuPerCommit(w),
  };
}

function cpuPerCommit(w: WindowCost): OpCost['cpuMicrosPerCommit'] {
  const perCommit = (pct: number | null | undefined): number | null =>
    pct == null || !w.commits ? null : ((pct / 100) * w.seconds * 1e6) / w.commits;
  const followers = Object.entries(w.cpuPct.nodes)
    .filter(([id]) => id !== w.leader)
    .map(([, pct]) => perCommit(pct))
    .filter((x): x is number => x !== null);
  return {
    leader: w.leader === null ? null : perCommit(w.cpuPct.nodes[w.leader]),
    followers: w.leader === null || followers.length === 0 ? null : followers.reduce((a, b) => a + b, 0) / followers.length,
  };
}
