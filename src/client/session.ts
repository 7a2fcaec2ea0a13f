// The client's session (lease): opening it, keeping it alive every TTL/3, re-attaching it
// to each new connection, numbering its requests, and deciding when the client can no
// longer vouch for it.
//
// Safe deadline. The server expires a session at (time the leader received its last
// keepalive) + TTL. The client cannot know when the leader received it, only that it was
// after the client sent it, so it counts from the send:
//     safeDeadline = sentAt(last acknowledged keepalive) + TTL × (1 − maxClockDrift) − margin
// maxClockDrift (default 1 %) covers the two monotonic clocks running at different rates;
// margin (default max(50 ms, 5 % of TTL)) covers event-loop delay between the deadline
// passing and the SDK noticing. Past that instant the SDK treats the session as over: it
// aborts every lock's signal, asks the cluster to close the session (so a session that is
// in fact alive frees its locks rather than holding them for nobody), and opens a fresh
// session for whatever the application does next.
import { setMaxListeners } from 'node:events';
import type { ResultOf } from '../protocol/ops.js';
import type { Clock, TimerHandle } from './clock.js';
import { ConnectionLostError, type Connection, type RequestBody } from './connection.js';
import { ClientClosedError, PalisadeError, SessionExpiredError, UnavailableError } from './errors.js';
import type { CallOptions, ClusterLink } from './link.js';
import { readAnswer } from '../protocol/results.js';
import { anySignal } from './signals.js';
import { DeadlineReached, within } from './wait.js';

type SequencedRequest = Extract<RequestBody, { seq: number }>;
type WithoutSequence<R> = R extends unknown ? Omit<R, 'session' | 'seq' | 'ackedSeq'> : never;
/** A session-scoped write as callers build it; the session adds session, seq and ackedSeq. */
export type SequencedBody = WithoutSequence<SequencedRequest>;

export interface SessionOptions {
  readonly ttlMs: number;
  readonly label: string;
  readonly maxClockDrift: number;
  /** Undefined: max(50 ms, 5 % of the TTL the server granted). */
  readonly safetyMarginMs: number | undefined;
  readonly requestTimeoutMs: number;
  readonly clock: Clock;
}

export interface SequencedOptions {
  readonly deadline: number;
  readonly signal?: AbortSignal;
  /** The session to speak for; default the current one (opened if need be). */
  readonly session?: Session;
  /** Judges the answer (link.ts CallOptions.vet). */
  readonly vet?: CallOptions['vet'];
}

/** One lease on the cluster. Locks and leaderships belong to exactly one session. */
export class Session {
  readonly id: number;
  readonly ttlMs: number;
  /** Until this instant (client clock) the server will not have expired the session. */
  safeDeadline: number;
  private readonly ended = new AbortController();
  private readonly clock: Clock;
  private readonly margin: number;
  private readonly drift: number;
  private nextSeq = 1;
  private readonly unanswered = new Set<number>();
  /** @internal timers owned by SessionManager */
  keepAliveTimer: TimerHandle | undefined;
  /** @internal */
  deadlineTimer: TimerHandle | undefined;
  /** @internal */
  keepAliveInFlight = false;

  constructor(id: number, ttlMs: number, openSentAt: number, options: SessionOptions) {
    this.id = id;
    this.ttlMs = ttlMs;
    // Every lock, leadership and pending write of the session listens for its end: many
    // listeners are expected, not a leak.
    setMaxListeners(0, this.ended.signal);
    this.clock = options.clock;
    this.drift = options.maxClockDrift;
    this.margin = options.safetyMarginMs ?? Math.max(50, 0.05 * ttlMs);
    // The server starts the lease no earlier than it received openSession.
    this.safeDeadline = this.deadlineFrom(openSentAt);
  }

  /** Aborted, with a SessionExpiredError as reason, when the session is over. */
  get signal(): AbortSignal {
    return this.ended.signal;
  }

  /** True while the session has not ended and its safe deadline has not passed (checked now, not by a timer). */
  get isLive(): boolean {
    return !this.ended.signal.aborted && this.clock.now() < this.safeDeadline;
  }

  /** The safe deadline a keepalive sent at `sentAt` earns. */
  deadlineFrom(sentAt: number): number {
    return sentAt + this.ttlMs * (1 - this.drift) - this.margin;
  }

  /** @internal A keepalive sent at `sentAt` was acknowledged. Returns whether the deadline moved. */
  extend(sentAt: number): boolean {
    if (this.ended.signal.aborted) return false;
    const candidate = this.deadlineFrom(sentAt);
    if (candidate <= this.safeDeadline) return false;
    this.safeDeadline = candidate;
    return true;
  }

  /** @internal */
  takeSeq(): number {
    const seq = this.nextSeq++;
    this.unanswered.add(seq);
    return seq;
  }

  /** @internal The request will not be sent again (answered, or given up on). */
  settleSeq(seq: number): void {
    this.unanswered.delete(seq);
  }

  /** Highest seq such that every seq at or below it is settled: the node may forget their results. */
  get ackedSeq(): number {
    let lowest = this.nextSeq;
    for (const seq of this.unanswered) if (seq < lowest) lowest = seq;
    return lowest - 1;
  }

  /** @internal */
  end(reason: PalisadeError): boolean {
    if (this.ended.signal.aborted) return false;
    this.ended.abort(reason);
    return true;
  }
}

export class SessionManager {
  private readonly link: ClusterLink;
  private readonly options: SessionOptions;
  private readonly clock: Clock;
  private current: Session | null = null;
  private opening: Promise<Session> | null = null;
  private closed = false;

  constructor(link: ClusterLink, options: SessionOptions) {
    this.link = link;
    this.options = options;
    this.clock = options.clock;
  }

  /** The current session if it is live (without opening one). */
  get active(): Session | null {
    return this.current?.isLive ? this.current : null;
  }

  /**
   * The live session, opening a new one when there is none. Keeps the caller's deadline:
   * an open still going then goes on in the background (for the next caller), and this
   * caller gets UnavailableError (nothing was done on its behalf).
   */
  async ensure(deadline: number, signal?: AbortSignal): Promise<Session> {
    for (;;) {
      if (this.closed) throw new ClientClosedError();
      const s = this.current;
      if (s) {
        if (s.isLive) return s;
        // The deadline may have passed before its timer ran (a paused process).
        this.endSession(s, deadlineReason(), true);
      }
      this.opening ??= this.open().finally(() => {
        this.opening = null;
      });
      let opened: Session;
      try {
        opened = await within(this.opening, { clock: this.clock, deadline, signal });
      } catch (e) {
        if (e instanceof DeadlineReached) {
          const why = this.link.lastConnectFailure;
          throw new UnavailableError(`no session could be opened before the deadline${why === null ? '' : ` (last connection attempt: ${why})`}`);
        }
        throw e;
      }
      if (opened.isLive) return opened;
      if (this.clock.now() >= deadline) throw new SessionExpiredError('the session ended while it was being opened');
    }
  }

  /**
   * Sends a session-scoped write with one seq, retried with that same seq until a node
   * answers definitely or the deadline passes. UNKNOWN_SESSION ends the session.
   */
  async sequenced<O extends SequencedBody['op']>(makeBody: () => SequencedBody & { readonly op: O }, options: SequencedOptions): Promise<ResultOf<O>> {
    const session = options.session ?? (await this.ensure(options.deadline, options.signal));
    this.checkLive(session);
    const seq = session.takeSeq();
    const linked = options.signal ? anySignal([options.signal, session.signal]) : null;
    try {
      // The added fields go first: spread-then-add is ~1 µs a request on Node 20 (see Message in raft.ts).
      // The cast puts back what WithoutSequence took off: the same request, sequenced.
      const sequencedBody = (): RequestBody & { readonly op: O } => ({ session: session.id, seq, ackedSeq: session.ackedSeq, ...makeBody() }) as RequestBody & { readonly op: O };
      return await this.link.call<O>(
        sequencedBody,
        { deadline: options.deadline, signal: linked?.signal ?? session.signal, ...(options.vet ? { vet: options.vet } : {}) },
      );
    } catch (e) {
      if (e instanceof SessionExpiredError) this.endSession(session, e, false);
      if (session.signal.aborted && !options.signal?.aborted) throw session.signal.reason;
      throw e;
    } finally {
      linked?.dispose();
      // Answered, or given up on: either way it is never re-sent, so the node may forget it.
      // A late copy still in flight is refused by the node as STALE_SEQUENCE.
      session.settleSeq(seq);
    }
  }

  /** Link hook: binds the live session to a new connection before it serves requests. */
  async prepare(connection: Connection): Promise<void> {
    const s = this.current;
    if (!s || !s.isLive) return;
    // attach is also a keepalive: the old connection may have been gone a while.
    const sentAt = this.clock.now();
    const response = readAnswer('attach', await connection.request({ op: 'attach', session: s.id }, this.link.attemptTimeoutMs));
    if (response.ok) {
      if (s.extend(sentAt)) this.armDeadline(s);
      return;
    }
    const { error } = response;
    if (error.code === 'UNKNOWN_SESSION') {
      this.endSession(s, new SessionExpiredError('the cluster no longer knows the session'), false);
      return;
    }
    throw new ConnectionLostError(`attach refused: ${error.code} ${error.message}`, error.leaderHint);
  }

  /** Throws the session's end reason when it is over (ending it first if only its deadline says so). */
  checkLive(s: Session): void {
    if (s.isLive) return;
    this.endSession(s, deadlineReason(), true);
    throw sessionReason(s);
  }

  /** A sessionExpired event: the lease ran out, or an operator revoked the session (with
   *  their token's name and words, when given). */
  expiredByServer(e: { readonly session: number; readonly reason?: 'expire' | 'revoke'; readonly detail?: string; readonly by?: string }): void {
    const s = this.current;
    if (!s || s.id !== e.session) return;
    const why =
      e.reason === 'revoke'
        ? `the session was revoked by an operator${e.by !== undefined ? ` (token "${e.by}")` : ''}${e.detail !== undefined ? `: ${e.detail}` : ''}`
        : 'the session expired on the server';
    this.endSession(s, new SessionExpiredError(why), false);
  }

  /** Closes the session on the cluster (releasing its locks) and stops the timers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const s = this.current;
    this.current = null;
    if (!s) return;
    if (s.isLive) {
      try {
        // Bounded by one attempt's time: if the cluster cannot hear it now, the session
        // expires on its own after its TTL, and close() should not hang on an outage.
        await this.sequenced(() => ({ op: 'closeSession' }), {
          session: s,
          deadline: this.clock.now() + this.link.attemptTimeoutMs,
        });
      } catch {
        // Unreachable cluster: the session expires on its own after its TTL.
      }
    }
    this.endSession(s, new ClientClosedError(), false);
  }

  private async open(): Promise<Session> {
    const sentAt = this.clock.now();
    const deadline = sentAt + this.options.requestTimeoutMs;
    const result = await this.link.call(() => ({ op: 'openSession', ttlMs: this.options.ttlMs, label: this.options.label }), { deadline });
    const s = new Session(result.session, result.ttlMs, sentAt, this.options);
    if (this.closed) {
      void this.link.call(() => ({ op: 'closeSession', session: s.id, seq: 1, ackedSeq: 0 }), { deadline }).catch(() => {});
      throw new ClientClosedError();
    }
    // The node that answered openSession already carries the session's events (grants,
    // expiry) on that connection; a later connection re-attaches in prepare().
    this.current = s;
    this.armDeadline(s);
    this.armKeepAlive(s);
    return s;
  }

  private armKeepAlive(s: Session): void {
    s.keepAliveTimer = this.clock.setTimeout(() => {
      if (!s.isLive) return;
      this.armKeepAlive(s);
      void this.keepAlive(s);
    }, s.ttlMs / 3);
  }

  private async keepAlive(s: Session): Promise<void> {
    if (s.keepAliveInFlight) return;
    s.keepAliveInFlight = true;
    const sentAt = this.clock.now();
    try {
      // Its retries stop by the next keepalive's turn, which starts afresh.
      await this.link.call(() => ({ op: 'keepAlive', session: s.id }), {
        deadline: sentAt + s.ttlMs / 3,
        signal: s.signal,
      });
      if (s.extend(sentAt)) this.armDeadline(s);
    } catch (e) {
      if (e instanceof SessionExpiredError) this.endSession(s, e, false);
      // Anything else: the next keepalive tries again; the deadline timer guards the lease.
    } finally {
      s.keepAliveInFlight = false;
    }
  }

  private armDeadline(s: Session): void {
    if (s.deadlineTimer !== undefined) this.clock.clearTimeout(s.deadlineTimer);
    s.deadlineTimer = this.clock.setTimeout(() => {
      s.deadlineTimer = undefined;
      if (s.signal.aborted) return;
      if (this.clock.now() >= s.safeDeadline) this.endSession(s, deadlineReason(), true);
      else this.armDeadline(s);
    }, s.safeDeadline - this.clock.now());
  }

  /**
   * Ends `s` locally. When the client gave up on it (its deadline passed) while the cluster
   * may still hold it, ask the cluster to close it so its locks do not outlive the client's
   * belief in them.
   */
  private endSession(s: Session, reason: PalisadeError, closeOnServer: boolean): void {
    if (!s.end(reason)) return;
    if (this.current === s) this.current = null;
    if (s.keepAliveTimer !== undefined) this.clock.clearTimeout(s.keepAliveTimer);
    if (s.deadlineTimer !== undefined) this.clock.clearTimeout(s.deadlineTimer);
    if (closeOnServer && !this.closed) {
      const seq = s.takeSeq();
      void this.link
        .call(() => ({ op: 'closeSession', session: s.id, seq, ackedSeq: s.ackedSeq }), {
          deadline: this.clock.now() + this.options.requestTimeoutMs,
        })
        .catch(() => {});
    }
  }
}

function deadlineReason(): SessionExpiredError {
  return new SessionExpiredError('no keepalive was acknowledged before the safe deadline: the lease may have expired');
}

function sessionReason(s: Session): PalisadeError {
  const reason: unknown = s.signal.reason;
  return reason instanceof PalisadeError ? reason : deadlineReason();
}

