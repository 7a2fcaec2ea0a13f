// Locks: acquiring (at once, or queued until a `granted` event), the Lock handle, and the
// bookkeeping that keeps a grant from leaking when a caller gives up or a connection drops.
//
// Within one client, acquires of one name take turns (FIFO) before they reach the cluster:
// one session holds a name once, so a second handle to the same grant would be a lie.
import type { AcquireResult, Fence, LockInfo, LockMode, ServerEvent } from '../protocol/client-protocol.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { isRecord } from '../protocol/results.js';
import {
  ConflictError,
  FencedError,
  InvalidArgumentError,
  LockLostError,
  LockTimeoutError,
  NotHolderError,
  PalisadeError,
  SessionExpiredError,
  TimeoutError,
  TokenRegressionError,
  UnavailableError,
  ClientClosedError,
} from './errors.js';
import {
  deleteKey,
  putKey,
  runOnce,
  type DeleteResult,
  type FenceHolder,
  type KvValue,
  type OnceFn,
  type OnceOptions,
  type PutResult,
} from './kv.js';
import type { Session } from './session.js';
import { LocalTurns } from './turns.js';
import { DeadlineReached, waitFor, within } from './wait.js';
import { LeaseHandle } from './handle.js';

export interface AcquireOptions {
  /**
   * Advisory: a lock lives as long as the client's session, whose TTL is set once at
   * connect (LockClient options `ttlMs`). Accepted for symmetry with other lock services.
   */
  readonly ttlMs?: number;
  /** Give up after this long (LockTimeoutError); default: wait as long as it takes. */
  readonly waitMs?: number;
  readonly mode?: LockMode;
  /** Shared mode only: at most this many holders at once (a semaphore). */
  readonly limit?: number;
  /** If the holder's session expires while holding, the lock stays unavailable this long. */
  readonly lockDelayMs?: number;
  /** Abort to stop waiting (rejects with the signal's reason; nothing is left held or queued). */
  readonly signal?: AbortSignal;
}

export type TryAcquireOptions = Omit<AcquireOptions, 'waitMs'>;

export interface LockPutOptions {
  readonly ifRevision?: number;
  readonly timeoutMs?: number;
}

/**
 * A granted lock. The lock is a belief; `token` is what a protected resource enforces:
 * send it with every write and let the resource (FenceGuard) refuse lower ones.
 */
export class Lock extends LeaseHandle implements FenceHolder {
  readonly name: string;
  /** The fencing token: the log index of the entry that granted this lock. Grows cluster-wide. */
  readonly token: number;
  readonly mode: LockMode;
  private releasing: Promise<void> | null = null;
  private readonly onGone: (lock: Lock) => void;

  /** @internal Created by ClientLocks. */
  constructor(core: ClientCore, session: Session, name: string, token: number, mode: LockMode, onGone: (lock: Lock) => void) {
    super(core, session, name);
    this.name = name;
    this.token = token;
    this.mode = mode;
    this.onGone = onGone;
  }

  /** This lock as a fence for guarded writes. */
  get fence(): Fence {
    return { lock: this.name, token: this.token };
  }

  /**
   * Releases the lock. Idempotent; resolves once the cluster has freed it (or the session
   * it belonged to is over, which frees it too). The handle is unusable from the call on.
   */
  release(): Promise<void> {
    this.releasing ??= this.doRelease();
    return this.releasing;
  }

  /** put fenced by this lock: applies only while this lock is held with this token. */
  put(key: string, value: KvValue, options: LockPutOptions = {}): Promise<PutResult> {
    return putKey(this.core, key, value, Object.assign({}, options, { fence: this })); // not spread-then-add: RaftNode.send
  }

  /** delete fenced by this lock. */
  delete(key: string, options: LockPutOptions = {}): Promise<DeleteResult> {
    return deleteKey(this.core, key, Object.assign({}, options, { fence: this }));
  }

  /**
   * Runs `fn` at most once for `opKey` among all holders of this lock (the ledger). A
   * recorded result is returned without running fn. See OnceOptions for in-doubt attempts.
   */
  once<T>(opKey: string, fn: OnceFn<T>, options?: OnceOptions): Promise<T> {
    return runOnce(this.core, this, opKey, fn, options);
  }

  /** @internal */
  fencedOut(cause: FencedError): LockLostError {
    this.markLost(`the cluster refused its token (current token ${cause.currentToken ?? 'none'})`, cause);
    return this.lostError();
  }

  /**
   * Lost: free the name in this client (a release in progress frees it when done). While
   * the session lives the cluster may still hold the grant (a lease that lapsed here, a
   * process paused past it): it is released by token first, as release() would, so that
   * nothing stays held for nobody and the next acquire of the name here is not answered
   * with this old grant (its token is below that acquire's floor: token-floor.ts).
   */
  protected onLost(): void {
    if (this.releasing) return;
    // Not `isLive`: a session past its safe deadline here may be alive on the cluster (a
    // keepalive answered later revives it), and with it this grant.
    if (this.session.signal.aborted) return this.onGone(this);
    this.releasing = releaseByToken(this.core, this.session, this.name, this.token)
      .catch(() => {})
      .finally(() => this.onGone(this));
  }

  private async doRelease(): Promise<void> {
    this.endByHolder('released');
    try {
      // Even a handle already lost (fenced, or freed by the cluster) is released by token
      // while its session lives: harmless if it is gone, and nothing can stay held.
      if (!this.session.signal.aborted) {
        await releaseByToken(this.core, this.session, this.name, this.token);
      }
    } finally {
      this.onGone(this);
    }
  }
}

/**
 * Releases `token` of `name` for `session`, retrying until the cluster answers or the
 * session is over. NOT_HOLDER and an ended session mean it is not held: done.
 */
async function releaseByToken(core: ClientCore, session: Session, name: string, token: number): Promise<void> {
  try {
    await core.sessions.sequenced(() => ({ op: 'release', name, token }), { session, deadline: Infinity });
  } catch (e) {
    if (e instanceof NotHolderError || e instanceof SessionExpiredError || e instanceof ClientClosedError) return;
    throw e;
  }
}

// ---- acquiring --------------------------------------------------------------------------------

/**
 * How long past its deadline (or abort) an acquire waits for the cluster to confirm its
 * withdrawal before it reports anyway and withdraws in the background. Within the 100 ms
 * the deadline rule allows, with room for a busy event loop.
 */
const WITHDRAW_GRACE_MS = 25;

/** This client's turn on a name; handed off when a background withdrawal keeps it. */
interface Turn {
  readonly pass: () => void;
  handedOff: boolean;
}

/** A grant as a node told it: the token, and the node's URL (to set it aside if it lies). */
interface GrantNews {
  readonly token: number;
  readonly url: string;
}

/** An acquire in flight: where its grant will be recorded, whichever way it arrives. */
class Waiter {
  readonly session: Session;
  /** The token floor when the acquire was first sent: its grant must be above it (token-floor.ts). */
  readonly floor: number;
  /** Index of the entry that queued us; a grant counts only from a later entry. */
  queuedIndex: number | null = null;
  /** Highest-index `granted` event seen for this name (it may precede the `queued` answer). */
  grantEvent: (GrantNews & { readonly index: number }) | null = null;
  /** Grant confirmed by reading the lock after a reconnect. */
  confirmed: GrantNews | null = null;
  /** The grant told was refused (below the floor): it says nothing of what the cluster holds. */
  refused = false;
  wake: () => void = () => {};

  constructor(session: Session, floor: number) {
    this.session = session;
    this.floor = floor;
  }

  get grant(): GrantNews | null {
    if (this.confirmed !== null) return this.confirmed;
    if (this.queuedIndex !== null && this.grantEvent && this.grantEvent.index > this.queuedIndex) return this.grantEvent;
    return null;
  }
}

/** Every lock and pending acquire of one client. */
export class ClientLocks {
  private readonly core: ClientCore;
  private readonly turns = new LocalTurns();
  private readonly waiters = new Map<string, Waiter>();
  private readonly held = new Map<string, { lock: Lock; passTurn: () => void }>();

  constructor(core: ClientCore) {
    this.core = core;
  }

  async acquire(name: string, options: AcquireOptions = {}): Promise<Lock> {
    checkAcquire(name, options);
    const { clock } = this.core;
    const waitMs = options.waitMs;
    const waitDeadline = waitMs === undefined ? Infinity : clock.now() + waitMs;
    let passTurn: () => void;
    try {
      passTurn = await this.turns.take(name, waitDeadline, this.core, options.signal);
    } catch (e) {
      if (e instanceof DeadlineReached) throw new LockTimeoutError(name, waitMs ?? 0);
      throw e;
    }
    const turn = { pass: passTurn, handedOff: false };
    try {
      return await this.acquireRemote(name, options, waitDeadline, turn);
    } catch (e) {
      if (!turn.handedOff) passTurn();
      throw e;
    }
  }

  async tryAcquire(name: string, options: TryAcquireOptions = {}): Promise<Lock | null> {
    checkAcquire(name, options);
    const passTurn = this.turns.tryTake(name);
    if (!passTurn) return null; // this client holds or is acquiring it
    const turn: Turn = { pass: passTurn, handedOff: false };
    try {
      const session = await this.core.sessions.ensure(defaultDeadline(this.core), options.signal);
      const waiter = this.register(name, session);
      let withdrawing = false;
      try {
        let result: AcquireResult;
        try {
          result = await this.core.sessions.sequenced(() => acquireBody(name, options, false), {
            session,
            deadline: defaultDeadline(this.core),
            vet: this.vetGrant(name, waiter),
            ...(options.signal ? { signal: options.signal } : {}),
          });
        } catch (e) {
          // A refused grant says nothing of what the cluster did with the request: undo it.
          if (e instanceof TokenRegressionError) {
            withdrawing = true;
            await this.withdrawWithin(name, waiter, turn);
          }
          throw e;
        }
        if (result.status === 'granted') return this.grant(session, name, result.token, options.mode ?? 'exclusive', passTurn);
        if (result.status === 'busy') {
          passTurn();
          return null;
        }
        // wait:false never queues; if a node did, undo it rather than leave a waiter behind.
        waiter.queuedIndex = result.index;
        await this.withdraw(name, waiter);
        passTurn();
        return null;
      } finally {
        if (!withdrawing || !turn.handedOff) this.unregister(name, waiter);
      }
    } catch (e) {
      if (!turn.handedOff) passTurn();
      throw e;
    }
  }

  /** A granted/released event for the client's current session, pushed by the node at `url`. */
  handleEvent(e: Extract<ServerEvent, { event: 'granted' | 'released' }>, url: string): void {
    if (e.event === 'granted') {
      const waiter = this.waiters.get(e.name);
      if (waiter && waiter.session.id === e.session) {
        if (!waiter.grantEvent || e.index > waiter.grantEvent.index) waiter.grantEvent = { token: e.token, index: e.index, url };
        waiter.wake();
        return;
      }
      const held = this.held.get(e.name);
      if (held && held.lock.token === e.token) return; // a repeat of our own grant
      // Nobody here asked for this grant any more (a caller gave up while it was in
      // flight): free it rather than hold it for nobody.
      const session = this.core.sessions.active;
      if (session && session.id === e.session) void releaseByToken(this.core, session, e.name, e.token).catch(() => {});
      return;
    }
    const held = this.held.get(e.name);
    if (held && held.lock.token === e.token && held.lock.session.id === e.session) {
      held.lock.markLost(`the cluster released it (${e.reason})`);
    }
  }

  /** After a reconnect: a grant may have happened while no connection carried its event. */
  recheckWaiters(): void {
    for (const [name, waiter] of this.waiters) {
      if (waiter.queuedIndex === null || waiter.grant !== null) continue;
      let url = '';
      void this.readGrant(name, waiter.session, false, (answeredBy) => (url = answeredBy))
        .then((token) => {
          if (token !== null && this.waiters.get(name) === waiter) {
            waiter.confirmed = { token, url };
            waiter.wake();
          }
        })
        .catch(() => {
          // The next reconnect reads again; events cover the rest.
        });
    }
  }

  private async acquireRemote(name: string, options: AcquireOptions, waitDeadline: number, turn: Turn): Promise<Lock> {
    const { clock, sessions } = this.core;
    const mode = options.mode ?? 'exclusive';
    const timedOut = (withdrawn: boolean): LockTimeoutError => new LockTimeoutError(name, options.waitMs ?? 0, withdrawn);
    // With waitMs the caller bounded everything, the request included; without, the request
    // itself (not the wait for the grant) gets the client's request timeout.
    const requestDeadline = options.waitMs === undefined ? defaultDeadline(this.core) : waitDeadline;
    let session: Session;
    try {
      session = await sessions.ensure(requestDeadline, options.signal);
    } catch (e) {
      // No session in time: nothing was asked of the cluster on this call's behalf.
      if (e instanceof UnavailableError && clock.now() >= waitDeadline) throw timedOut(true);
      throw e;
    }
    const waiter = this.register(name, session);
    let withdrawing = false;
    try {
      let result: AcquireResult;
      try {
        result = await sessions.sequenced(() => acquireBody(name, options, true), {
          session,
          deadline: requestDeadline,
          vet: this.vetGrant(name, waiter),
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch (e) {
        // In doubt (it may have queued or granted after all, a refused grant too: the node
        // that answered it is not the cluster): undo whatever it did.
        let withdrawn = true;
        if (e instanceof TimeoutError || e instanceof TokenRegressionError || options.signal?.aborted) {
          withdrawing = true;
          withdrawn = await this.withdrawWithin(name, waiter, turn);
        }
        if ((e instanceof TimeoutError || e instanceof UnavailableError) && clock.now() >= waitDeadline) throw timedOut(withdrawn);
        throw e;
      }
      if (result.status === 'granted') return this.grant(session, name, result.token, mode, turn.pass);
      if (result.status === 'busy') throw new PalisadeError('INTERNAL', 'a waiting acquire was answered busy');
      waiter.queuedIndex = result.index;
      try {
        const token = await this.waitForGrant(name, waiter, waitDeadline, options.signal);
        return this.grant(session, name, token, mode, turn.pass);
      } catch (e) {
        if (e instanceof DeadlineReached || e instanceof TokenRegressionError || options.signal?.aborted) {
          withdrawing = true;
          const withdrawn = await this.withdrawWithin(name, waiter, turn);
          if (e instanceof DeadlineReached) throw timedOut(withdrawn);
        }
        throw e;
      }
    } finally {
      // A withdrawal handed to the background unregisters the waiter when it is done.
      if (!withdrawing || !turn.handedOff) this.unregister(name, waiter);
    }
  }

  /**
   * Withdraws an acquire the caller gave up on, waiting for the cluster's confirmation for
   * at most WITHDRAW_GRACE_MS, so that the caller hears of its timeout or abort on time
   * (docs/protocol.md, "Deadlines"). True when the withdrawal is confirmed. Otherwise it
   * goes on in the background for as long as the session lives, and keeps this client's
   * turn on the name and the waiter until it is done: the next acquire of the name in this
   * client waits behind it, so a late cancelWait or release can never hit the next grant.
   */
  private async withdrawWithin(name: string, waiter: Waiter, turn: Turn): Promise<boolean> {
    const { clock } = this.core;
    const withdrawal = this.withdraw(name, waiter);
    try {
      await within(withdrawal, { clock, deadline: clock.now() + WITHDRAW_GRACE_MS });
      return true;
    } catch (e) {
      if (!(e instanceof DeadlineReached)) throw e;
    }
    turn.handedOff = true;
    void withdrawal
      .catch(() => {})
      .finally(() => {
        this.unregister(name, waiter);
        turn.pass();
      });
    return false;
  }

  /**
   * Resolves with the granted token; rejects on deadline (DeadlineReached), abort, session
   * end or close, and with TokenRegressionError when the grant's token is not above the
   * waiter's floor (the node that told it is set aside).
   */
  private waitForGrant(name: string, waiter: Waiter, deadline: number, signal?: AbortSignal): Promise<number> {
    const sessionSignal = waiter.session.signal;
    return waitFor<number>({ clock: this.core.clock, deadline, signal }, (resolve, reject) => {
      const check = (): void => {
        const grant = waiter.grant;
        if (grant === null) return;
        const refused = this.core.floor.check(grant.token, waiter.floor, name, grant.url);
        if (refused === null) return resolve(grant.token);
        waiter.refused = true;
        this.core.link.distrust(grant.url, { kind: 'TOKEN_REGRESSION', url: grant.url, message: refused.message });
        reject(refused);
      };
      const onSessionEnd = (): void => reject(sessionSignal.reason);
      waiter.wake = check;
      sessionSignal.addEventListener('abort', onSessionEnd, { once: true });
      if (sessionSignal.aborted) onSessionEnd();
      else check();
      return () => {
        waiter.wake = () => {};
        sessionSignal.removeEventListener('abort', onSessionEnd);
      };
    });
  }

  /**
   * Takes back an acquire the caller gave up on: cancelWait; if the grant won the race
   * (CONFLICT "not waiting", or a grant event already here), release it. Waits for the
   * answers, so nothing is left held or queued when the caller hears of the timeout.
   */
  private async withdraw(name: string, waiter: Waiter): Promise<void> {
    const { session } = waiter;
    if (!session.isLive) return; // its end frees everything
    let mayHold = false;
    try {
      // Retried (same seq) until answered or the session is over: the turn waits for it.
      await this.core.sessions.sequenced(() => ({ op: 'cancelWait', name }), { session, deadline: Infinity });
    } catch (e) {
      if (!(e instanceof ConflictError)) {
        // The session ended (which frees everything), or a definite refusal.
        if (e instanceof PalisadeError) return;
        throw e;
      }
      mayHold = true; // not waiting: granted meanwhile, or never queued
    }
    // A refused grant is no news of the cluster's: what it holds for us is read.
    let token = waiter.refused ? null : (waiter.grant?.token ?? waiter.grantEvent?.token ?? null);
    if (token === null && mayHold) token = await this.readGrant(name, session, true);
    if (token !== null) await releaseByToken(this.core, session, name, token).catch(() => {});
  }

  /**
   * The token `session` holds `name` with, by a linearizable read, or null. With `persist`,
   * reads again until answered while the session lives (null once it is over). `answeredBy`
   * is told which node answered.
   */
  private async readGrant(name: string, session: Session, persist = false, answeredBy?: (url: string) => void): Promise<number | null> {
    for (;;) {
      try {
        const info = await readLock(this.core, name, undefined, answeredBy);
        return info.holders.find((h) => h.session === session.id)?.token ?? null;
      } catch (e) {
        if (!persist) throw e;
        // Only a read that found no node in time is worth another try.
        if (!session.isLive || !(e instanceof UnavailableError || e instanceof TimeoutError)) return null;
      }
    }
  }

  /**
   * The check of an acquire's answer (link.ts vet): a grant must come with a token above the
   * floor the acquire was first sent with (token-floor.ts).
   */
  private vetGrant(name: string, waiter: Waiter): (result: unknown, url: string) => TokenRegressionError | null {
    return (result, url) => (isGrant(result) ? this.core.floor.check(result.token, waiter.floor, name, url) : null);
  }

  private register(name: string, session: Session): Waiter {
    const waiter = new Waiter(session, this.core.floor.current);
    this.waiters.set(name, waiter);
    return waiter;
  }

  private unregister(name: string, waiter: Waiter): void {
    if (this.waiters.get(name) === waiter) this.waiters.delete(name);
  }

  private grant(session: Session, name: string, token: number, mode: LockMode, passTurn: () => void): Lock {
    const lock = new Lock(this.core, session, name, token, mode, (gone) => {
      const entry = this.held.get(gone.name);
      if (entry?.lock === gone) {
        this.held.delete(gone.name);
        entry.passTurn();
      }
    });
    this.held.set(name, { lock, passTurn });
    if (!session.isLive) {
      // Granted just as the session ended: the grant went with it.
      lock.markLost('its session ended as it was granted');
      throw new SessionExpiredError(`the session ended while lock ${JSON.stringify(name)} was being granted`);
    }
    return lock;
  }
}

/** Linearizable read of a lock: holders, waiters, token. `answeredBy` is told which node answered. */
export async function readLock(core: ClientCore, name: string, timeoutMs?: number, answeredBy?: (url: string) => void): Promise<LockInfo> {
  const deadline = timeoutMs === undefined ? defaultDeadline(core) : core.clock.now() + timeoutMs;
  return core.link.call(() => ({ op: 'get', name }), { deadline, ...(answeredBy ? { answeredBy } : {}) });
}

function isGrant(v: unknown): v is { status: 'granted'; token: number } {
  return isRecord(v) && v.status === 'granted' && typeof v.token === 'number';
}

function acquireBody(name: string, options: TryAcquireOptions, wait: boolean) {
  return {
    op: 'acquire' as const,
    name,
    mode: options.mode ?? 'exclusive',
    wait,
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(options.lockDelayMs === undefined ? {} : { lockDelayMs: options.lockDelayMs }),
  };
}

function checkAcquire(name: string, options: TryAcquireOptions & { waitMs?: number }): void {
  if (typeof name !== 'string' || name === '') throw new InvalidArgumentError('lock name must be a non-empty string');
  if (options.mode !== undefined && options.mode !== 'exclusive' && options.mode !== 'shared') {
    throw new InvalidArgumentError(`mode must be 'exclusive' or 'shared'`);
  }
  if (options.waitMs !== undefined && !(options.waitMs >= 0)) throw new InvalidArgumentError('waitMs must be >= 0');
  if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit >= 1)) {
    throw new InvalidArgumentError('limit must be a positive integer');
  }
}


