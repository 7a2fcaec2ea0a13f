// Many sessions multiplexed over a few raw connections, kept alive every TTL/3: each
// session's keepalive is due one period after its last one. The sessions of one connection
// that are due in one tick (5 ms) go in one `keepAlives` frame ('batch'), or in a `keepAlive`
// frame each ('each', as before the frame existed, and as against a node of an older
// release). Once all are open, 'batch' puts every session of a connection on one timer (a
// frame of up to 1,000 per period, as a multiplexing client would), 'each' spreads the
// sessions evenly (as that many SDK clients would). Once every
// session is open the pool spreads them evenly over the period, so the keepalive rate is
// steady (sessions / period). Expiry is watched two ways: `sessionExpired` events pushed to
// the connection that opened a session, and UNKNOWN_SESSION answers to keepalives.
import { performance } from 'node:perf_hooks';
import type { ServerEvent } from '../../src/protocol/client-protocol.js';
import { epochMs, sleep } from './clock.js';
import { LatencyRecorder } from './latency.js';
import { MAX_KEEPALIVE_SESSIONS } from '../../src/protocol/client-protocol.js';
import { RawConnection, resultOf, type Reply } from './raw-connection.js';

const RETRYABLE = new Set(['UNAVAILABLE', 'TIMEOUT', 'NOT_LEADER', 'RATE_LIMITED']);

/** How the pool sends keepalives: one frame per connection and tick, or one per session. */
export type KeepAliveFrames = 'batch' | 'each';

export interface PoolSession {
  readonly id: number;
  readonly conn: RawConnection;
  /** Next sequence number for session-scoped writes. */
  seq: number;
}

/** A ring of session indexes ordered by when their keepalive is due. */
class DueQueue {
  private readonly index: Int32Array;
  private readonly due: Float64Array;
  private head = 0;
  private count = 0;

  constructor(capacity: number) {
    this.index = new Int32Array(capacity);
    this.due = new Float64Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  push(session: number, dueAt: number): void {
    const at = (this.head + this.count) % this.index.length;
    this.index[at] = session;
    this.due[at] = dueAt;
    this.count++;
  }

  /** The front entry if it is due by `now`, removed; else -1. */
  popDue(now: number): { session: number; due: number } | null {
    if (this.count === 0 || this.due[this.head]! > now) return null;
    const out = { session: this.index[this.head]!, due: this.due[this.head]! };
    this.head = (this.head + 1) % this.index.length;
    this.count--;
    return out;
  }

  drain(): number[] {
    const out: number[] = [];
    while (this.count > 0) {
      out.push(this.index[this.head]!);
      this.head = (this.head + 1) % this.index.length;
      this.count--;
    }
    return out;
  }
}

export class SessionPool {
  readonly sessions: PoolSession[] = [];
  readonly keepAliveMs = new LatencyRecorder();
  /** Keepalives answered while recording (the measurement window). */
  keepAlivesRecorded = 0;
  recording = false;
  /** Sessions the cluster said expired (events), and keepalives answered UNKNOWN_SESSION. */
  readonly expiredByEvent = new Set<number>();
  unknownOnKeepAlive = 0;
  keepAliveErrors = 0;
  firstError: string | null = null;
  private readonly queue: DueQueue;
  private readonly periodMs: number;
  private ticker: NodeJS.Timeout | null = null;
  private inFlight = 0;
  private readonly ids = new Set<number>();

  private constructor(
    private readonly connections: readonly RawConnection[],
    readonly ttlMs: number,
    capacity: number,
    private readonly frames: KeepAliveFrames,
  ) {
    this.periodMs = ttlMs / 3;
    this.queue = new DueQueue(capacity);
    for (const c of connections) c.onEvent((e) => this.onEvent(e));
  }

  /** `connections` connections, to `urls` in turn. */
  static async open(urls: readonly string[], connections: number, ttlMs: number, capacity: number, frames: KeepAliveFrames = 'batch'): Promise<SessionPool> {
    const conns = await Promise.all(Array.from({ length: connections }, (_, i) => RawConnection.open(urls[i % urls.length]!)));
    return new SessionPool(conns, ttlMs, capacity, frames);
  }

  /** Open `count` sessions spread over the connections, `inFlight` at a time in all. An
   *  answer that leaves the outcome open (no leader, a leader change) is retried; a retried
   *  open may leave an orphan session behind, which the cluster expires after its TTL. */
  async openSessions(count: number, inFlight = 256, onProgress?: (opened: number) => void): Promise<void> {
    this.startKeepAlive();
    const k = this.connections.length;
    let next = 0;
    let lastReport = epochMs();
    const worker = async (conn: RawConnection): Promise<void> => {
      while (next < count) {
        next++;
        const session = await this.openOne(conn);
        const s: PoolSession = { id: session, conn, seq: 0 };
        this.ids.add(session);
        this.queue.push(this.sessions.length, epochMs() + this.periodMs);
        this.sessions.push(s);
        if (onProgress && epochMs() - lastReport > 5_000) {
          lastReport = epochMs();
          onProgress(this.sessions.length);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, count) }, (_, i) => worker(this.connections[i % k]!)));
  }

  /** Answers to openSession that were retried (no leader, leader change, timeout). */
  openRetries = 0;

  private async openOne(conn: RawConnection): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const reply = await conn.call({ op: 'openSession', ttlMs: this.ttlMs });
      if (reply.ok) return (reply.result as { session: number }).session;
      if (!RETRYABLE.has(reply.error.code) || attempt >= 10) resultOf(reply, 'openSession');
      this.openRetries++;
      await sleep(50);
    }
  }

  /** Spread the keepalives evenly over one period from now: each session's ('each'), or each
   *  connection's ('batch': all the sessions of a connection are then due together, one
   *  frame of them per period, as a client that multiplexes sessions keeps them on one
   *  timer). No session waits longer than two periods (< TTL) across the change. */
  spreadEvenly(): void {
    const order = this.queue.drain();
    const now = epochMs();
    if (this.frames === 'each') {
      order.forEach((s, k) => this.queue.push(s, now + ((k + 1) / order.length) * this.periodMs));
      return;
    }
    const connIndex = new Map(this.connections.map((c, k) => [c, k]));
    const byConn = this.connections.map((): number[] => []);
    for (const s of order) byConn[connIndex.get(this.sessions[s]!.conn)!]!.push(s);
    byConn.forEach((list, k) => {
      for (const s of list) this.queue.push(s, now + ((k + 1) / byConn.length) * this.periodMs);
    });
  }

  startKeepAlive(): void {
    this.ticker ??= setInterval(() => this.tick(), 5);
  }

  async stopKeepAlive(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    while (this.inFlight > 0) await sleep(5);
  }

  /** One more keepalive for every session (a bounded number in flight per connection);
   *  returns how many were not acknowledged. */
  async keepAliveAll(perConnection = 64): Promise<number> {
    let failed = 0;
    const byConn = new Map<RawConnection, PoolSession[]>();
    for (const s of this.sessions) (byConn.get(s.conn) ?? byConn.set(s.conn, []).get(s.conn)!).push(s);
    const perFrame = this.frames === 'each' ? 1 : MAX_KEEPALIVE_SESSIONS;
    await Promise.all(
      [...byConn.values()].flatMap((list) => {
        let i = 0;
        return Array.from({ length: Math.min(perConnection, Math.ceil(list.length / perFrame)) }, async () => {
          while (i < list.length) {
            const frame = list.slice(i, (i += perFrame));
            const unknown = await this.renew(frame[0]!.conn, frame.map((s) => s.id));
            failed += typeof unknown === 'number' ? unknown : frame.length;
          }
        });
      }),
    );
    return failed;
  }

  /** Writes retried because their outcome was open (no leader, leader change, timeout). */
  writeRetries = 0;

  /** A session-scoped write with the session's next seq (every earlier one answered),
   *  retried with the same seq while the answer leaves the outcome open, as the SDK does. */
  async write(s: PoolSession, body: { op: 'acquire'; name: string; mode: 'exclusive'; wait: boolean }, attempts = 20): Promise<Reply> {
    const seq = ++s.seq;
    for (let attempt = 1; ; attempt++) {
      const reply = await s.conn.call({ ...body, session: s.id, seq, ackedSeq: seq - 1 });
      if (reply.ok || !RETRYABLE.has(reply.error.code) || attempt >= attempts) return reply;
      this.writeRetries++;
      await sleep(50);
    }
  }

  close(): void {
    if (this.ticker) clearInterval(this.ticker);
    for (const c of this.connections) c.close();
  }

  private tick(): void {
    const now = epochMs();
    const due = new Map<RawConnection, number[]>();
    for (let d = this.queue.popDue(now); d; d = this.queue.popDue(now)) {
      const s = this.sessions[d.session]!;
      this.queue.push(d.session, d.due + this.periodMs);
      if (this.frames === 'each') this.sendKeepAlives(s.conn, [s.id]);
      else (due.get(s.conn) ?? due.set(s.conn, []).get(s.conn)!).push(s.id);
    }
    for (const [conn, ids] of due) {
      for (let i = 0; i < ids.length; i += MAX_KEEPALIVE_SESSIONS) this.sendKeepAlives(conn, ids.slice(i, i + MAX_KEEPALIVE_SESSIONS));
    }
  }

  /** One frame: keepAlive for one session in 'each' mode, keepAlives otherwise. Latency is
   *  recorded per frame, the keepalive count per session. */
  private sendKeepAlives(conn: RawConnection, ids: readonly number[]): void {
    const started = performance.now();
    const recording = this.recording;
    this.inFlight++;
    void this.renew(conn, ids).then((unknown) => {
      this.inFlight--;
      if (recording && this.recording) {
        this.keepAliveMs.push(performance.now() - started);
        this.keepAlivesRecorded += ids.length;
      }
      if (typeof unknown === 'number') this.unknownOnKeepAlive += unknown;
      else {
        this.keepAliveErrors++;
        this.firstError ??= unknown;
      }
    });
  }

  /** How many of `ids` the cluster did not know, or why the frame failed. */
  private async renew(conn: RawConnection, ids: readonly number[]): Promise<number | string> {
    if (this.frames === 'each' && ids.length === 1) {
      const r = await conn.call({ op: 'keepAlive', session: ids[0]! });
      if (r.ok) return 0;
      return r.error.code === 'UNKNOWN_SESSION' ? 1 : `keepAlive: ${r.error.code} ${r.error.message}`;
    }
    const r = await conn.call({ op: 'keepAlives', sessions: ids });
    if (!r.ok) return `keepAlives: ${r.error.code} ${r.error.message}`;
    return (r.result as { ttls: readonly (number | null)[] }).ttls.filter((t) => t === null).length;
  }

  private onEvent(e: ServerEvent): void {
    if (e.event === 'sessionExpired' && this.ids.has(e.session)) this.expiredByEvent.add(e.session);
  }
}
