// Finding the new leader while a request is late. A leader that is cut off from the others
// (isolated, or deaf to them) keeps answering its clients: it answers the liveness pings,
// and once it has stepped down it holds their requests while it waits for a leader it will
// never hear of. Meanwhile the others elected a new leader within an election timeout or
// two. So when a request on the connection has gone unanswered for an election timeout plus
// two heartbeats (400 ms at the defaults; a healthy cluster answers in milliseconds), the
// SDK asks the other nodes who leads (`status`, over connections it keeps only while the
// request stays late), and again every two heartbeats (every election timeout once it has
// been late for four: a long outage with many clients must not flood the nodes). A node
// that leads in a higher term than the connected node (or while the connected node does not
// lead, or has gone silent) is where the client moves: what was in flight is retried there
// with the same seq. On a cluster that is merely slow the connected node is the leader of
// the highest term, and nothing moves. A node that says it knows no leader (its hello, or
// its answer to the scout) does not make its client wait that long: the scout asks once a
// request has waited two heartbeats.
import type { HelloResult, NodeStatus } from '../protocol/client-protocol.js';
import type { Clock, TimerHandle } from './clock.js';
import type { Connection } from './connection.js';
import { readAnswer } from '../protocol/results.js';

/** For nodes that do not say their timing (older versions): Palisade's defaults. */
const DEFAULT_TIMING = { heartbeatMs: 50, electionTimeoutMs: 300 };

export interface ScoutTiming {
  /** A request unanswered this long is late: look for the leader elsewhere. */
  readonly lateMs: number;
  /** The same, on a node that says it knows no leader. */
  readonly leaderlessLateMs: number;
  /** While late, ask again this often. */
  readonly everyMs: number;
  /** Once a request has been late this long (an election has had its chance), ask only
   *  every `slowEveryMs`: a long outage with many waiting clients must not flood the nodes. */
  readonly slowAfterMs: number;
  readonly slowEveryMs: number;
}

export function scoutFor(hello: HelloResult | null): ScoutTiming {
  const t = hello?.timing ?? DEFAULT_TIMING;
  return {
    lateMs: t.electionTimeoutMs + 2 * t.heartbeatMs,
    leaderlessLateMs: 2 * t.heartbeatMs,
    everyMs: Math.max(50, 2 * t.heartbeatMs),
    slowAfterMs: 4 * t.electionTimeoutMs,
    slowEveryMs: Math.max(100, t.electionTimeoutMs),
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

/** Rounds in flight at once (each asks every other node). */
const MAX_ROUNDS = 3;

interface Claim {
  readonly url: string;
  readonly status: NodeStatus;
}

/** Watches `connection` until it closes; returns the function that stops watching. */
export function scoutWhenLate(connection: Connection, clock: Clock, timing: ScoutTiming, hooks: ScoutHooks): () => void {
  let timer: TimerHandle | undefined;
  let stopped = false;
  /** Rounds still waiting for answers; a slow one does not hold up the next. */
  let asking = 0;
  let lastRoundAt = -Infinity;
  /** The connected node said it knows no leader (at hello, or in the last round). */
  let leaderless = connection.hello.leader === null;
  /** Connections to the other nodes, kept while a request stays late, so that a round after
   *  the first costs one status round trip per node, not a new connection. */
  const scouts = new Map<string, Promise<Connection | null>>();
  // A loaded machine may take a while to open a connection: each question may take as long
  // as a request takes to be late, while rounds start every `everyMs`.
  const patienceMs = timing.lateMs;
  const status = async (c: Connection, timeoutMs: number): Promise<NodeStatus | null> => {
    try {
      const r = readAnswer('status', await c.request({ op: 'status' }, timeoutMs));
      return r.ok ? r.result : null;
    } catch {
      return null;
    }
  };
  const scout = (url: string): Promise<Connection | null> => {
    let c = scouts.get(url);
    if (!c) {
      c = hooks.dial(url, patienceMs).then(
        (opened) => {
          if (stopped || scouts.get(url) !== c) opened.close();
          opened.onClose = () => {
            if (scouts.get(url) === c) scouts.delete(url);
          };
          return opened.isOpen ? opened : null;
        },
        () => {
          if (scouts.get(url) === c) scouts.delete(url);
          return null;
        },
      );
      scouts.set(url, c);
    }
    return c;
  };
  const dismiss = (): void => {
    const all = [...scouts.values()];
    scouts.clear();
    for (const c of all) void c.then((opened) => opened?.close());
  };
  const ask = async (url: string): Promise<Claim | null> => {
    const c = await scout(url);
    if (c === null || stopped) return null;
    const s = await status(c, patienceMs);
    return s ? { url, status: s } : null;
  };
  /** One round: the first node that leads where the connected node does not is taken. */
  const round = async (): Promise<void> => {
    // The connected node is not kept waiting for: a paused one would hold every move.
    const own = status(connection, timing.everyMs).then((s) => {
      if (s !== null) leaderless = s.leader === null;
      return s;
    });
    let moved = false;
    const consider = async (claim: Claim | null): Promise<void> => {
      if (claim === null || claim.status.role !== 'leader') return;
      // A node that has not even answered the liveness pings lately (paused) is not waited for.
      const silent = clock.now() - connection.lastHeardAt > 2 * timing.everyMs;
      const mine = silent ? null : await own;
      // The connected node still leads in the highest term: it is slow, not cut off.
      if (mine !== null && mine.role === 'leader' && mine.term >= claim.status.term) return;
      if (stopped || moved) return;
      moved = true;
      hooks.found(claim.url);
    };
    await Promise.all(hooks.others().map((url) => ask(url).then(consider)));
  };
  /** When the next round is due (Infinity: nothing outstanding). */
  const dueAt = (): number => {
    const oldest = connection.oldestOutstandingAt;
    if (oldest === null) return Infinity;
    const lateAt = oldest + (leaderless ? timing.leaderlessLateMs : timing.lateMs);
    const every = clock.now() - lateAt > timing.slowAfterMs ? timing.slowEveryMs : timing.everyMs;
    return Math.max(lateAt, lastRoundAt + every);
  };
  const tick = (): void => {
    timer = undefined;
    if (stopped || !connection.isOpen) return;
    const now = clock.now();
    if (asking < MAX_ROUNDS && dueAt() <= now) {
      asking++;
      lastRoundAt = now;
      void round().finally(() => {
        asking--;
      });
    }
    // Requests come and go between ticks: look again at least every `everyMs`.
    const due = dueAt();
    if (due === Infinity && asking === 0) dismiss();
    timer = clock.setTimeout(tick, Math.max(1, Math.min(timing.everyMs, due - now)));
  };
  timer = clock.setTimeout(tick, 1);
  return () => {
    stopped = true;
    if (timer !== undefined) clock.clearTimeout(timer);
    dismiss();
  };
}
