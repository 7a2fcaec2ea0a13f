// memory: resident memory of each node with L locks held: S sessions (raw connections, kept
// alive every TTL/3) each acquiring L/S locks of its own. RSS (/proc/<pid>/status VmRSS) is
// read on a fresh cluster with the sessions open and again once every node has applied all
// the grants; the difference over the number of locks is the cost of one held lock.
import { epochMs, sleep } from '../lib/clock.js';
import { findLeader } from '../lib/leader.js';
import { nodeStatus, rssBytesOf } from '../lib/node-sampler.js';
import { SessionPool } from '../lib/session-pool.js';
import type { WorkloadTiming } from '../lib/spec.js';

export interface MemorySpec extends WorkloadTiming {
  readonly kind: 'memory';
  readonly sessions: number;
  readonly locksPerSession: number;
  readonly sessionsPerConnection: number;
  readonly ttlMs: number;
}

export interface NodeMemory {
  readonly id: string;
  readonly role: string;
  readonly baselineRssBytes: number | null;
  readonly loadedRssBytes: number | null;
}

export interface MemoryResult {
  readonly kind: 'memory';
  readonly sessions: number;
  readonly locks: number;
  readonly locksGranted: number;
  readonly loadSeconds: number;
  readonly acquiresPerSec: number;
  readonly nodes: readonly NodeMemory[];
  /** (loaded − baseline) / locks on the leader. */
  readonly leaderBytesPerLock: number | null;
  /** Acquires re-sent with the same seq after an answer that left the outcome open. */
  readonly retries: number;
  readonly errors: number;
  readonly firstError: string | null;
}

export async function runMemory(spec: MemorySpec, log: (line: string) => void): Promise<MemoryResult> {
  const leader = await findLeader(spec.nodes);
  const connections = Math.max(1, Math.ceil(spec.sessions / spec.sessionsPerConnection));
  const pool = await SessionPool.open([leader.clientUrl], connections, spec.ttlMs, spec.sessions);
  try {
    await pool.openSessions(spec.sessions, 256);
    await sleep(1_000);
    const baseline = new Map(spec.nodes.map((n) => [n.id, rssBytesOf(n.pid)]));
    let granted = 0;
    let errors = 0;
    let firstError: string | null = null;
    const t0 = epochMs();
    let lastReport = t0;
    await Promise.all(
      pool.sessions.map(async (s, i) => {
        for (let j = 0; j < spec.locksPerSession; j++) {
          const r = await pool.write(s, { op: 'acquire', name: `bench/mem/s${i}/l${j}`, mode: 'exclusive', wait: false });
          const status = r.ok ? (r.result as { status?: string }).status : undefined;
          if (status === 'granted') granted++;
          else {
            errors++;
            firstError ??= r.ok ? `acquire: ${String(status)}` : `acquire: ${r.error.code} ${r.error.message}`;
          }
          if (epochMs() - lastReport > 5_000) {
            lastReport = epochMs();
            log(`memory: ${granted} locks granted`);
          }
        }
      }),
    );
    const loadSeconds = (epochMs() - t0) / 1000;
    const leaderStatus = await nodeStatus(leader.clientUrl);
    const target = leaderStatus?.commitIndex ?? 0;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const all = await Promise.all(spec.nodes.map((n) => nodeStatus(n.clientUrl)));
      if (all.every((st) => st !== null && st.appliedIndex >= target)) break;
      await sleep(100);
    }
    await sleep(2_000);
    const roles = await Promise.all(spec.nodes.map((n) => nodeStatus(n.clientUrl)));
    const nodes: NodeMemory[] = spec.nodes.map((n, i) => ({
      id: n.id,
      role: roles[i]?.role ?? 'unknown',
      baselineRssBytes: baseline.get(n.id) ?? null,
      loadedRssBytes: rssBytesOf(n.pid),
    }));
    const lm = nodes.find((n) => n.id === leader.id);
    const locks = spec.sessions * spec.locksPerSession;
    return {
      kind: 'memory',
      sessions: spec.sessions,
      locks,
      locksGranted: granted,
      loadSeconds,
      acquiresPerSec: locks / loadSeconds,
      nodes,
      leaderBytesPerLock: lm?.baselineRssBytes != null && lm.loadedRssBytes != null ? (lm.loadedRssBytes - lm.baselineRssBytes) / locks : null,
      retries: pool.writeRetries,
      errors: errors + pool.unknownOnKeepAlive + pool.keepAliveErrors,
      firstError: firstError ?? pool.firstError,
    };
  } finally {
    pool.close();
  }
}
