// sessions: N open sessions kept alive every TTL/3, multiplexed over raw connections
// (1,000 sessions per connection) spread over every node in turn, as clients that connect
// to any node are (`at: 'leader'`: all to the leader, as SDK clients that prefer the leader
// are). A follower relays its keepalives to the leader in batches and forwards the opens.
// Figures: the leader's CPU over the window, each node's, the
// keepalive rate and latency, and that no session that kept alive expired (no sessionExpired
// event, no UNKNOWN_SESSION answer, and a final keepalive acknowledged for every session).
import { epochMs } from '../lib/clock.js';
import { findLeader } from '../lib/leader.js';
import type { LatencySummary } from '../lib/latency.js';
import { rssBytesOf, type WindowCost } from '../lib/node-sampler.js';
import { SessionPool, type KeepAliveFrames } from '../lib/session-pool.js';
import type { WorkloadTiming } from '../lib/spec.js';
import { measureWindow, type WindowState } from '../lib/window.js';
import { sleep } from '../lib/clock.js';

export interface SessionsSpec extends WorkloadTiming {
  readonly kind: 'sessions';
  readonly sessions: number;
  readonly sessionsPerConnection: number;
  readonly ttlMs: number;
  readonly at: 'all' | 'leader';
  readonly keepAliveFrames: KeepAliveFrames;
}

export interface SessionsResult {
  readonly kind: 'sessions';
  readonly sessions: number;
  readonly connections: number;
  readonly ttlMs: number;
  readonly keepAliveFrames: KeepAliveFrames;
  readonly openSeconds: number;
  readonly opensPerSec: number;
  readonly keepAlivesPerSec: number;
  readonly keepAliveMs: LatencySummary;
  /** The nodes the sessions' connections go to (with at: 'leader', the leader when they were opened). */
  readonly connectedTo: readonly string[];
  /** The leader over the window; when it is not the one `connectedTo` of at: 'leader', keepalives were forwarded. */
  readonly leader: string | null;
  readonly leaderCpuPct: number | null;
  readonly openRetries: number;
  readonly expiredEvents: number;
  readonly unknownOnKeepAlive: number;
  readonly finalKeepAliveFailed: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly window: WindowCost;
  /** Each node's RSS at the end of the window, every session open (/proc VmRSS). */
  readonly rssBytes: Readonly<Record<string, number | null>>;
}

export async function runSessions(spec: SessionsSpec, log: (line: string) => void): Promise<SessionsResult> {
  const leader = await findLeader(spec.nodes);
  const connections = Math.max(1, Math.ceil(spec.sessions / spec.sessionsPerConnection));
  const targets = spec.at === 'leader' ? [leader] : spec.nodes;
  const pool = await SessionPool.open(targets.map((n) => n.clientUrl), connections, spec.ttlMs, spec.sessions, spec.keepAliveFrames);
  try {
    const t0 = epochMs();
    try {
      await pool.openSessions(spec.sessions, 256, (n) => log(`sessions: ${n} open`));
    } catch (e) {
      const at = ((epochMs() - t0) / 1000).toFixed(0);
      throw new Error(`${(e as Error).message} (with ${pool.sessions.length} of ${spec.sessions} sessions open after ${at} s)`);
    }
    const openSeconds = (epochMs() - t0) / 1000;
    log(`sessions: ${spec.sessions} open in ${openSeconds.toFixed(1)} s; keepalives every ${spec.ttlMs / 3000} s`);
    pool.spreadEvenly();
    await sleep(spec.warmupMs);
    const state: WindowState = { phase: 'warmup', stop: false };
    pool.recording = true;
    const w = await measureWindow(spec.nodes, spec.durationMs, state);
    pool.recording = false;
    const rssBytes = Object.fromEntries(spec.nodes.map((n) => [n.id, rssBytesOf(n.pid)]));
    await pool.stopKeepAlive();
    const finalFailed = await pool.keepAliveAll();
    return {
      kind: 'sessions',
      sessions: spec.sessions,
      connections,
      ttlMs: spec.ttlMs,
      keepAliveFrames: spec.keepAliveFrames,
      openSeconds,
      opensPerSec: spec.sessions / openSeconds,
      keepAlivesPerSec: pool.keepAlivesRecorded / (w.elapsedMs / 1000),
      keepAliveMs: pool.keepAliveMs.summary(),
      connectedTo: targets.map((n) => n.id),
      leader: w.cost.leader,
      leaderCpuPct: w.cost.leader === null ? null : (w.cost.cpuPct.nodes[w.cost.leader] ?? null),
      openRetries: pool.openRetries,
      expiredEvents: pool.expiredByEvent.size,
      unknownOnKeepAlive: pool.unknownOnKeepAlive,
      finalKeepAliveFailed: finalFailed,
      errors: pool.keepAliveErrors,
      firstError: pool.firstError,
      window: w.cost,
      rssBytes,
    };
  } finally {
    pool.close();
  }
}
