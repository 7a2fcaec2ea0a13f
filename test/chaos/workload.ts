// What one chaos client process does: a loop of actions on an SDK LockClient, each
// operation recorded with its window and outcome as the checker reads them
// (checker/history.ts).
//
// Recording rules, because a wrong record is a false alarm (or a missed bug):
// - ok: the SDK resolved with an answer; fail: a typed error that means "not applied"
//   (UNAVAILABLE, NOT_HOLDER, FENCED, CONFLICT, INVALID_ARGUMENT); unknown: anything else
//   (timeouts, lost sessions, aborts) - it may have happened, at any time after invocation.
// - Lock.release() and Leadership.resign() resolve without telling whether the cluster freed
//   the grant or the session was already over (NOT_HOLDER, SessionExpired). They are ok only
//   when the SDK believed in the grant before and in the session after; else unknown.
// - One session per LockClient. After an operation whose outcome is unknown the SDK may
//   take a grant back on its own (withdrawing a timed-out acquire, resigning an aborted
//   campaign) and nothing records that release; so the session is retired at once, and its
//   recorded end may come from that operation's invocation on.
// - Session ends are recorded as 'sessionExpired' with outcome unknown from the last moment
//   the SDK still believed in the lease (the server promises never to expire a session
//   sooner), so the checker also tests that promise.
// - Actions never hold two things: acquire, use, release; then the next action.
import { LockClient, PalisadeError, type Leadership, type Lock } from '../../src/client/index.js';
import type { OpType, Outcome, SessionId } from './checker/index.js';
import { Prng } from '../support/prng.js';
import type { FencedWriteResult, Invocation, OperationResult, WorkerConfig } from './protocol.js';

/** How a worker reaches the harness (IPC in worker.ts). */
export interface WorkerIo {
  now(): number;
  invoke(invocation: Invocation): void;
  complete(
    id: string,
    outcome: Outcome,
    completeMs: number,
    extra: { result?: OperationResult; session?: SessionId; error?: string },
  ): void;
  fencedWrite(lock: string, token: number, value: string): Promise<FencedWriteResult>;
  sessionOpened(session: number, atMs: number): void;
  sessionEnded(session: number, expiryFromMs: number, why: string): void;
  holding(lock: string | null): void;
  note(text: string): void;
}

/** The session this worker speaks for, and what bounds its recorded end. */
interface Lease {
  readonly id: number;
  /** Last time the SDK still believed in the lease (client.sessionId === id). */
  lastLiveMs: number;
  /** Invocation of the earliest operation with an unknown outcome: the session must go. */
  inDoubtFromMs: number | null;
}

interface Classified {
  readonly outcome: Outcome;
  readonly error: string;
}

/** Codes that mean the cluster did not apply the request. */
const DEFINITE_REFUSALS = new Set(['UNAVAILABLE', 'NOT_HOLDER', 'FENCED', 'CONFLICT', 'INVALID_ARGUMENT']);

function describeError(e: unknown): string {
  if (e instanceof PalisadeError) return `${e.code}: ${e.message}`;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

export function classify(op: OpType, e: unknown): Classified {
  const error = describeError(e);
  if (e instanceof PalisadeError) {
    if (DEFINITE_REFUSALS.has(e.code)) return { outcome: 'fail', error };
    // proclaim throws LockLostError only when it did not send, or the cluster refused it.
    if (e.code === 'LOCK_LOST' && op === 'proclaim') return { outcome: 'fail', error };
  }
  return { outcome: 'unknown', error };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

type Action = () => Promise<void>;

export class ClientWorkload {
  private readonly rng: Prng;
  /** The SDK's own randomness (endpoint order, backoff jitter): a separate stream, so that
   *  how often it draws, which depends on timing, does not shift the workload's choices. */
  private readonly sdkRng: Prng;
  private client: LockClient | null = null;
  private lease: Lease | null = null;
  private stopping = false;
  private opCounter = 0;
  private valueCounter = 0;
  private readonly actions: { weight: number; run: Action }[];

  constructor(
    private readonly config: WorkerConfig,
    private readonly io: WorkerIo,
  ) {
    this.rng = new Prng(config.seed);
    this.sdkRng = this.rng.fork();
    const { exclusiveLocks, semaphore, election } = config.shape;
    const allLocks = [...exclusiveLocks, semaphore.name];
    this.actions = [
      { weight: 30, run: () => this.holdExclusive(this.rng.pick(exclusiveLocks), 'acquire') },
      { weight: 10, run: () => this.holdExclusive(this.rng.pick(exclusiveLocks), 'tryAcquire') },
      { weight: 12, run: () => this.holdShared() },
      { weight: 4, run: () => this.holdExclusive(semaphore.name, 'acquire') },
      { weight: 18, run: () => this.readLock(this.rng.pick(allLocks)) },
      { weight: 12, run: () => this.lead(election) },
      { weight: 8, run: () => this.readLeader(election) },
    ];
  }

  stop(): void {
    this.stopping = true;
  }

  async run(): Promise<void> {
    // Sample the SDK's belief often, so a session's recorded end is tight.
    const sampler = setInterval(() => this.sampleLiveness(), 10);
    try {
      while (!this.stopping) {
        if (!(await this.ensureSession())) {
          await sleep(200);
          continue;
        }
        await this.pickAction()();
        await sleep(this.rng.int(100));
      }
    } finally {
      await this.retire('the worker stopped');
      clearInterval(sampler);
    }
  }

  // ---- sessions ---------------------------------------------------------------------------

  private sampleLiveness(): void {
    // The time is read before the belief: were the process stopped between the two reads,
    // the belief would then be the later one, and the recorded time must not be.
    const at = this.io.now();
    const lease = this.lease;
    if (lease !== null && this.client?.sessionId === lease.id) lease.lastLiveMs = Math.max(lease.lastLiveMs, at);
  }

  /** A client with a live session nobody doubts, connecting a new one when needed. */
  private async ensureSession(): Promise<boolean> {
    this.sampleLiveness();
    const lease = this.lease;
    if (lease !== null && lease.inDoubtFromMs === null && this.client?.sessionId === lease.id) return true;
    if (this.client !== null) {
      await this.retire(lease?.inDoubtFromMs != null ? 'an operation on it had an unknown outcome' : 'the SDK no longer vouches for it');
    }
    if (this.stopping) return false;
    let client: LockClient;
    const startedMs = this.io.now();
    try {
      client = await LockClient.connect({
        endpoints: this.config.endpoints,
        ttlMs: this.config.ttlMs,
        requestTimeoutMs: 5_000,
        attemptTimeoutMs: 1_500,
        random: () => this.sdkRng.float(),
        ...(this.config.safetyMarginMs === undefined ? {} : { safetyMarginMs: this.config.safetyMarginMs }),
      });
    } catch (e) {
      this.io.note(`connect failed: ${describeError(e)}`);
      return false;
    }
    const id = client.sessionId;
    if (id === null) {
      await client.close();
      return false;
    }
    this.client = client;
    // Live at least since connect was called; the sampler moves this on.
    this.lease = { id, lastLiveMs: startedMs, inDoubtFromMs: null };
    this.io.sessionOpened(id, startedMs - this.config.clockSlackMs);
    return true;
  }

  /** Closes the client (which closes the session on the cluster) and reports the session's end. */
  private async retire(why: string): Promise<void> {
    this.sampleLiveness();
    const { client, lease } = this;
    this.client = null;
    this.lease = null;
    if (client !== null) {
      try {
        await client.close();
      } catch (e) {
        this.io.note(`close failed: ${describeError(e)}`);
      }
    }
    if (lease !== null) {
      const from = Math.min(lease.lastLiveMs, lease.inDoubtFromMs ?? Infinity) - this.config.clockSlackMs;
      this.io.sessionEnded(lease.id, from, why);
    }
  }

  // ---- recording --------------------------------------------------------------------------

  private begin(invocation: DistributiveOmit<Invocation, 'id' | 'process' | 'invokeMs'>): Pending {
    this.sampleLiveness();
    const id = `${this.config.process}:${++this.opCounter}`;
    const invokeMs = this.io.now() - this.config.clockSlackMs;
    const full = { ...invocation, id, process: this.config.process, invokeMs } as Invocation;
    this.io.invoke(full);
    return { id, op: invocation.op, invokeMs, session: 'session' in invocation && invocation.session !== undefined ? Number(invocation.session) : null };
  }

  private end(p: Pending, outcome: Outcome, extra: { result?: OperationResult; error?: string } = {}): void {
    const completeMs = this.io.now() + this.config.clockSlackMs;
    let session: SessionId | undefined;
    // The SDK opens a new session inside an operation only if the old one lapsed between
    // our check and its own (microseconds); the operation then acted for the new one.
    const now = this.client?.sessionId ?? null;
    if (p.session !== null && now !== null && now !== p.session) {
      session = now;
      this.io.note(`operation ${p.id} (${p.op}) ran on session ${now}, not ${p.session}`);
      this.io.sessionOpened(now, p.invokeMs);
      this.markInDoubt(p.invokeMs);
    }
    if (outcome === 'unknown' && STATE_CHANGING.has(p.op)) this.markInDoubt(p.invokeMs);
    this.sampleLiveness();
    this.io.complete(p.id, outcome, completeMs, { ...extra, ...(session === undefined ? {} : { session }) });
  }

  private markInDoubt(fromMs: number): void {
    const lease = this.lease;
    if (lease !== null) lease.inDoubtFromMs = Math.min(lease.inDoubtFromMs ?? Infinity, fromMs);
  }

  private fail(p: Pending, e: unknown): void {
    const c = classify(p.op, e);
    this.end(p, c.outcome, { error: c.error });
  }

  // ---- actions ----------------------------------------------------------------------------

  private pickAction(): Action {
    const total = this.actions.reduce((s, a) => s + a.weight, 0);
    let r = this.rng.int(total);
    for (const a of this.actions) {
      if (r < a.weight) return a.run;
      r -= a.weight;
    }
    return this.actions[0]!.run;
  }

  private async holdExclusive(lock: string, how: 'acquire' | 'tryAcquire'): Promise<void> {
    const client = this.client!;
    const session = this.lease!.id;
    let held: Lock | null;
    if (how === 'acquire') {
      const p = this.begin({ op: 'acquire', session, args: { lock, mode: 'exclusive' } });
      try {
        held = await client.acquire(lock, { mode: 'exclusive', waitMs: this.rng.range(300, 3000) });
      } catch (e) {
        return this.fail(p, e);
      }
      this.end(p, 'ok', { result: { token: held.token } });
    } else {
      const p = this.begin({ op: 'tryAcquire', session, args: { lock, mode: 'exclusive' } });
      try {
        held = await client.tryAcquire(lock, { mode: 'exclusive' });
      } catch (e) {
        return this.fail(p, e);
      }
      this.end(p, 'ok', { result: held === null ? { granted: false } : { granted: true, token: held.token } });
      if (held === null) return;
    }
    await this.useLock(held, true);
  }

  private async holdShared(): Promise<void> {
    const client = this.client!;
    const { name, limit } = this.config.shape.semaphore;
    const p = this.begin({ op: 'acquire', session: this.lease!.id, args: { lock: name, mode: 'shared', limit } });
    let held: Lock;
    try {
      held = await client.acquire(name, { mode: 'shared', limit, waitMs: this.rng.range(300, 3000) });
    } catch (e) {
      return this.fail(p, e);
    }
    this.end(p, 'ok', { result: { token: held.token } });
    await this.useLock(held, false);
  }

  /**
   * Holds `lock` for a while; an exclusive holder writes its fenced register before and
   * after. The second write deliberately does not ask whether the lock is still held: a
   * client paused in between resumes and writes with its old token, and the resource alone
   * must refuse it.
   */
  private async useLock(lock: Lock, fenced: boolean): Promise<void> {
    const session = this.lease!.id;
    this.watchLoss(lock.signal, `lock ${lock.name}@${lock.token}`, session);
    this.io.holding(lock.name);
    if (fenced) await this.fencedWrite(lock.name, lock.token);
    await sleep(this.rng.range(20, 400));
    if (fenced) await this.fencedWrite(lock.name, lock.token);
    this.io.holding(null);
    const believed = lock.held && this.client?.sessionId === session;
    const p = this.begin({ op: 'release', session, args: { lock: lock.name, token: lock.token } });
    try {
      await lock.release();
    } catch (e) {
      return this.fail(p, e);
    }
    this.endLetGo(p, believed, session);
  }

  /** release / resign: ok only if the SDK believed in the grant before and the session after. */
  private endLetGo(p: Pending, believedBefore: boolean, session: number): void {
    if (believedBefore && this.client?.sessionId === session) return this.end(p, 'ok');
    this.end(p, 'unknown', { error: 'the grant or its session may have been gone already: the SDK may not have sent it' });
  }

  private async fencedWrite(lock: string, token: number): Promise<void> {
    const value = `${this.config.process}/${++this.valueCounter}`;
    const p = this.begin({ op: 'fencedWrite', args: { lock, token, value } });
    let result: FencedWriteResult;
    try {
      result = await this.io.fencedWrite(lock, token, value);
    } catch (e) {
      return this.fail(p, e);
    }
    this.end(p, 'ok', result.rejected === true ? { result } : {});
  }

  private async readLock(lock: string): Promise<void> {
    const p = this.begin({ op: 'read', args: { lock } });
    try {
      const info = await this.client!.get(lock, { timeoutMs: 3_000 });
      this.end(p, 'ok', { result: { holders: info.holders.map((h) => ({ session: h.session, token: h.token })) } });
    } catch (e) {
      this.fail(p, e);
    }
  }

  private async lead(election: string): Promise<void> {
    const client = this.client!;
    const session = this.lease!.id;
    const value = `${this.config.process}/${++this.valueCounter}`;
    let leadership: Leadership;
    const p = this.begin({ op: 'campaign', session, args: { election, value } });
    try {
      leadership = await client.election(election).campaign(value, { signal: AbortSignal.timeout(this.rng.range(500, 4000)) });
    } catch (e) {
      return this.fail(p, e);
    }
    this.end(p, 'ok', { result: { token: leadership.token } });
    this.watchLoss(leadership.signal, `leadership of ${election}@${leadership.token}`, session);
    this.io.holding(election);
    await this.fencedWrite(election, leadership.token);
    const next = `${this.config.process}/${++this.valueCounter}`;
    const pp = this.begin({ op: 'proclaim', session, args: { election, value: next, token: leadership.token } });
    let proclaimed = true;
    try {
      await leadership.proclaim(next);
      this.end(pp, 'ok');
    } catch (e) {
      proclaimed = false;
      this.fail(pp, e);
    }
    if (proclaimed) {
      await this.readLeader(election);
      await sleep(this.rng.range(20, 400));
      await this.fencedWrite(election, leadership.token);
    }
    this.io.holding(null);
    if (this.lease?.inDoubtFromMs != null) return; // the session is about to be retired anyway
    const believed = leadership.held && this.client?.sessionId === session;
    const pr = this.begin({ op: 'resign', session, args: { election, token: leadership.token } });
    try {
      await leadership.resign();
    } catch (e) {
      return this.fail(pr, e);
    }
    this.endLetGo(pr, believed, session);
  }

  private async readLeader(election: string): Promise<void> {
    const p = this.begin({ op: 'leader', args: { election } });
    try {
      const state = await this.client!.election(election).leader();
      if (state.leader !== null && state.token === null) {
        this.end(p, 'unknown', { error: `malformed answer: leader ${state.leader} without a token` });
        return;
      }
      const leader = state.leader === null ? null : { session: state.leader, token: state.token!, value: state.value };
      this.end(p, 'ok', { result: { leader } });
    } catch (e) {
      this.fail(p, e);
    }
  }

  /** Notes a grant lost while the SDK still believed in its session: a broken promise, or the cluster freeing it. */
  private watchLoss(signal: AbortSignal, what: string, session: number): void {
    signal.addEventListener(
      'abort',
      () => {
        const reason: unknown = signal.reason;
        const text = reason instanceof Error ? reason.message : String(reason);
        if (text.endsWith('released') || text.endsWith('resigned')) return;
        const live = this.client?.sessionId === session;
        this.io.note(`${what} of session ${session} lost (${text})${live ? ' while the session was still believed live' : ''}`);
      },
      { once: true },
    );
  }
}

/** Operations after which an unknown outcome may leave a grant the SDK later takes back. */
const STATE_CHANGING: ReadonlySet<OpType> = new Set(['acquire', 'tryAcquire', 'release', 'campaign', 'proclaim', 'resign']);

interface Pending {
  readonly id: string;
  readonly op: OpType;
  readonly invokeMs: number;
  /** The session the operation was invoked for (null for reads and fenced writes). */
  readonly session: number | null;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
