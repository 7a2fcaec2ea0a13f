// Finding the new leader while a request is late. A leader that is cut off from the others
// (isolated, or deaf to them) keeps answering its clients: it answers the liveness pings,
// and once it has stepped down it holds their requests while it waits for a leader it will
// never hear of. Meanwhile the others elected a new leader within an election timeout or
// two. So when a request on the connection has gone unanswered for an election timeout plus
// two heartbeats (400 ms at the defaults; a healthy cluster answers in milliseconds), the
// SDK asks the other nodes (`status`, over short-lived connections) who leads, every half
// election timeout while it stays late. A node that leads in a higher term than the
// connected node (or while the connected node does not lead) is where the client moves:
// what was in flight is retried there with the same seq. On a cluster that is merely slow
// the connected node is the leader of the highest term, and nothing moves. A node that
// says it knows no leader (its hello, or its answer to the scout) does not make its client
// wait that long: the scout asks once a request has waited two heartbeats.
import type { HelloResult, NodeStatus } from '../protocol/client-protocol.js';
import type { Clock, TimerHandle } from './clock.js';
import type { Connection } from './connection.js';

/** For nodes that do not say their timing (older versions): Palisade's defaults. */
const DEFAULT_TIMING = { heartbeatMs: 50, electionTimeoutMs: 300 };

export interface ScoutTiming {
  /** A request unanswered this long is late: look for the leader elsewhere. */
  readonly lateMs: number;
  /** The same, on a node that says it knows no leader. */
  readonly leaderlessLateMs: number;
  /** While late, ask again this often. */
  readonly everyMs: number;
}

export function scoutFor(hello: HelloResult | null): ScoutTiming {
  const t = hello?.timing ?? DEFAULT_TIMING;
  return {
    lateMs: t.electionTimeoutMs + 2 * t.heartbeatMs,
    leaderlessLateMs: 2 * t.heartbeatMs,
    everyMs: Math.max(50, t.electionTimeoutMs / 2),
  };
}

export interface ScoutHooks {
  /** The other nodes to ask. */
  others(): readonly string[];
  /** A short-lived connection to `url` (rejects when there is none in time). */
  dial(url: string, timeoutMs: number): Promise<Connection>;
  /** A node leads where `connection` cannot serve: move there. */
  found(url: string): void;
}

interface Claim {
  readonly url: string;
  readonly status: NodeStatus;
}

/** Watches `connection` until it closes; returns the function that stops watching. */
export function scoutWhenLate(connection: Connection, clock: Clock, timing: ScoutTiming, hooks: ScoutHooks): () => void {
  let timer: TimerHandle | undefined;
  let stopped = false;
  let asking = false;
  let lastRoundAt = -Infinity;
  /** The connected node said it knows no leader (at hello, or in the last round). */
  let leaderless = connection.hello.leader === null;
  const open = new Set<Connection>();
  const status = async (c: Connection): Promise<NodeStatus | null> => {
    try {
      const r = await c.request({ op: 'status' }, timing.everyMs);
      return r.ok ? (r.result as NodeStatus) : null;
    } catch {
      return null;
    }
  };
  const ask = async (url: string): Promise<Claim | null> => {
    let c: Connection;
    try {
      c = await hooks.dial(url, timing.everyMs);
    } catch {
      return null;
    }
    if (stopped) {
      c.close();
      return null;
    }
    open.add(c);
    try {
      const s = await status(c);
      return s ? { url, status: s } : null;
    } finally {
      open.delete(c);
      c.close();
    }
  };
  const round = async (): Promise<void> => {
    const [own, ...claims] = await Promise.all([status(connection), ...hooks.others().map(ask)]);
    if (stopped) return;
    if (own !== null) leaderless = own.leader === null;
    let best: Claim | null = null;
    for (const c of claims) {
      if (c?.status.role === 'leader' && (best === null || c.status.term > best.status.term)) best = c;
    }
    if (best === null) return;
    // The connected node still leads in the highest term: it is slow, not cut off.
    if (own !== null && own.role === 'leader' && own.term >= best.status.term) return;
    hooks.found(best.url);
  };
  /** When the next round is due (Infinity: nothing outstanding). */
  const dueAt = (): number => {
    const oldest = connection.oldestOutstandingAt;
    if (oldest === null) return Infinity;
    return Math.max(oldest + (leaderless ? timing.leaderlessLateMs : timing.lateMs), lastRoundAt + timing.everyMs);
  };
  const tick = (): void => {
    timer = undefined;
    if (stopped || !connection.isOpen) return;
    const now = clock.now();
    if (!asking && dueAt() <= now) {
      asking = true;
      lastRoundAt = now;
      void round().finally(() => {
        asking = false;
      });
    }
    // Requests come and go between ticks: look again at least every `everyMs`.
    const due = dueAt();
    timer = clock.setTimeout(tick, Math.max(1, Math.min(timing.everyMs, due - now)));
  };
  timer = clock.setTimeout(tick, 1);
  return () => {
    stopped = true;
    if (timer !== undefined) clock.clearTimeout(timer);
    for (const c of open) c.close();
  };
}
