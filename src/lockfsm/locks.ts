// The lock table: holders, FIFO waiters, semaphore limits and lock-delay.
//
// Rules (docs/lockfsm.md has the long form):
// - Waiters are served strictly in arrival order: a request is granted at once only when
//   nobody waits, and grants stop at the first waiter that cannot be granted. So a queued
//   exclusive request blocks later shared ones (no writer starvation).
// - Shared holders hold together, at most `limit` of them when the lock is a semaphore.
//   The limit belongs to the shared parties present (holders and waiters); every shared
//   request must agree with it, and it is forgotten when the last shared party leaves.
// - The fencing token of a grant is the index of the entry whose application granted it.
//   One entry may grant several shared waiters (one token for all), never two exclusive.
// - A lock freed by a session's expiry (not by a release or a close) enters lock-delay
//   when that holder's lockDelayMs is non-zero: nobody is granted until the leader's
//   lockDelayElapsed entry, because the expired holder may still be acting on the resource.
//
// Every operation is O(1) in the number of locks; a session's close is O(its locks).

import type { ApplyContext } from './context.js';
import type { MachineConfig } from './config.js';
import { conflict, withToken } from './errors.js';
import { sessionLoad, tooManyLocks, type SessionRecord } from './sessions.js';
import {
  fail,
  readArray,
  readEach,
  readIndex,
  readNullableIndex,
  readString,
  readTuple,
  readUint,
} from './snapshot-reader.js';
import type {
  MachineAcquireResult,
  BusyResult,
  Holder,
  LockDelayInfo,
  MachineLockInfo,
  LockMode,
  MachineError,
  OkResult,
  PendingLockDelay,
  QueuedResult,
  ReleaseReason,
} from './types.js';

/** How many holders a `busy` answer lists (a semaphore may have many). */
export const BUSY_HOLDERS_SHOWN = 16;

const OK: OkResult = Object.freeze({ type: 'ok' });

interface HolderRecord {
  readonly session: SessionRecord;
  readonly token: number;
  readonly mode: LockMode;
  /** The delay the lock enters if this holder's session expires while holding it. */
  readonly lockDelayMs: number;
}

interface Waiter {
  readonly session: SessionRecord;
  readonly mode: LockMode;
  readonly lockDelayMs: number;
}

/** The queue of every lock nobody waits for: never written to. */
const NO_WAITERS: ReadonlyMap<number, Waiter> = new Map();

class LockRecord {
  /** In grant order (so tokens never decrease along it). */
  readonly holders = new Map<number, HolderRecord>();
  /**
   * In arrival order: the FIFO queue. A Map gives O(1) removal from the middle (cancels,
   * session ends). Created on first use: most locks never have a waiter.
   */
  private queue: Map<number, Waiter> | null = null;
  heldMode: LockMode | null = null;
  /** Shared holders + shared waiters: the parties the limit belongs to. */
  sharedParties = 0;
  limit: number | null = null;
  delay: LockDelayInfo | null = null;

  constructor(readonly name: string) {}

  get waiters(): ReadonlyMap<number, Waiter> {
    return this.queue ?? NO_WAITERS;
  }

  enqueue(waiter: Waiter): void {
    (this.queue ??= new Map()).set(waiter.session.id, waiter);
  }

  /** Safe while iterating `waiters`: the Map stays valid when it is let go. */
  dequeue(session: number): void {
    if (this.queue !== null && this.queue.delete(session) && this.queue.size === 0) this.queue = null;
  }
}

export interface AcquireRequest {
  readonly name: string;
  readonly mode: LockMode;
  readonly limit: number | null;
  readonly wait: boolean;
  readonly lockDelayMs: number;
}

/** Snapshot form: [name, limit, delaySince, delayMs, holders, waiters]. */
type LockTuple = [string, number | null, number | null, number, HolderTuple[], WaiterTuple[]];
/** [session, token, mode (0 exclusive, 1 shared), lockDelayMs] */
type HolderTuple = [number, number, 0 | 1, number];
/** [session, mode, lockDelayMs] */
type WaiterTuple = [number, 0 | 1, number];

const modeFlag = (mode: LockMode): 0 | 1 => (mode === 'exclusive' ? 0 : 1);

export class LockTable {
  private readonly byName = new Map<string, LockRecord>();
  /** Locks in lock-delay, so a new leader can re-arm timers without scanning all locks. */
  private readonly delayed = new Map<string, LockRecord>();
  private holderCount = 0;
  private waiterCount = 0;

  constructor(private readonly settings: () => MachineConfig) {}

  // ---- commands ------------------------------------------------------------------------

  acquire(ctx: ApplyContext, rec: SessionRecord, req: AcquireRequest): MachineAcquireResult {
    let lock = this.byName.get(req.name);
    if (lock !== undefined) {
      // Asking again for what one holds or waits for answers the existing grant or place:
      // a second grant would mean two tokens (or two queue places) for one client.
      const held = lock.holders.get(rec.id);
      if (held !== undefined) {
        const mismatch = this.mismatch(lock, req, held.mode, 'holds');
        if (mismatch) return mismatch;
        return { type: 'granted', token: held.token, mode: held.mode };
      }
      const waiting = lock.waiters.get(rec.id);
      if (waiting !== undefined) {
        const mismatch = this.mismatch(lock, req, waiting.mode, 'waits for');
        if (mismatch) return mismatch;
        return { type: 'queued', position: positionOf(lock, rec.id) };
      }
      if (req.mode === 'shared' && lock.sharedParties > 0 && lock.limit !== req.limit) {
        return limitMismatch(lock, req.limit);
      }
    }
    const { maxLocksPerSession } = this.settings();
    if (sessionLoad(rec) >= maxLocksPerSession) return tooManyLocks(rec, maxLocksPerSession);
    if (lock === undefined) {
      lock = new LockRecord(req.name);
      this.byName.set(req.name, lock);
    }
    if (lock.waiters.size === 0 && lock.delay === null && canGrant(lock, req.mode)) {
      if (req.mode === 'shared') addSharedParty(lock, req.limit);
      this.addHolder(ctx, lock, rec, req.mode, req.lockDelayMs);
      return { type: 'granted', token: ctx.index, mode: req.mode };
    }
    if (!req.wait) return busyOf(lock); // not granted, so not idle: nothing to drop
    if (req.mode === 'shared') addSharedParty(lock, req.limit);
    lock.enqueue({ session: rec, mode: req.mode, lockDelayMs: req.lockDelayMs });
    rec.add('waits', lock.name);
    this.waiterCount++;
    const position = lock.waiters.size;
    ctx.events.push({ type: 'queued', session: rec.id, name: lock.name, position });
    return { type: 'queued', position } satisfies QueuedResult;
  }

  release(ctx: ApplyContext, rec: SessionRecord, name: string, token: number): OkResult | MachineError {
    const lock = this.byName.get(name);
    const holder = lock?.holders.get(rec.id);
    if (lock === undefined || holder === undefined || holder.token !== token) {
      const why =
        holder === undefined
          ? `session ${rec.id} does not hold lock ${JSON.stringify(name)}`
          : `session ${rec.id} holds lock ${JSON.stringify(name)} with token ${holder.token}, not ${token}`;
      return withToken('NOT_HOLDER', why, lock === undefined ? null : currentTokenOf(lock));
    }
    this.removeHolder(ctx, lock, holder, 'release');
    this.grantWaiters(ctx, lock);
    this.dropIfIdle(lock);
    return OK;
  }

  cancelWait(ctx: ApplyContext, rec: SessionRecord, name: string): OkResult | MachineError {
    const lock = this.byName.get(name);
    const waiter = lock?.waiters.get(rec.id);
    if (lock === undefined || waiter === undefined) {
      const holder = lock?.holders.get(rec.id);
      // The grant may have won the race with the cancel: say so, with the token to release.
      if (holder !== undefined) {
        return withToken(
          'CONFLICT',
          `session ${rec.id} no longer waits for lock ${JSON.stringify(name)}: it holds it with token ${holder.token}`,
          holder.token,
        );
      }
      return withToken(
        'CONFLICT',
        `session ${rec.id} does not wait for lock ${JSON.stringify(name)}`,
        lock === undefined ? null : currentTokenOf(lock),
      );
    }
    this.removeWaiter(lock, waiter);
    // The cancelled waiter may have been the one blocking those behind it.
    this.grantWaiters(ctx, lock);
    this.dropIfIdle(lock);
    return OK;
  }

  /** A session closed or expired: free what it holds, leave the queues it is in, grant. */
  dropSession(ctx: ApplyContext, rec: SessionRecord, reason: 'close' | 'expire'): void {
    const touched: LockRecord[] = [];
    // Sorted: the order of events must not depend on the order the sets were built in
    // (a restored node rebuilds them in another order).
    for (const name of [...rec.held].sort()) {
      const lock = this.byName.get(name)!;
      const holder = lock.holders.get(rec.id)!;
      this.removeHolder(ctx, lock, holder, reason);
      if (reason === 'expire' && holder.lockDelayMs > 0) this.startDelay(ctx, lock, holder.lockDelayMs);
      touched.push(lock);
    }
    for (const name of [...rec.waits].sort()) {
      const lock = this.byName.get(name)!;
      this.removeWaiter(lock, lock.waiters.get(rec.id)!);
      touched.push(lock);
    }
    for (const lock of touched) {
      this.grantWaiters(ctx, lock);
      this.dropIfIdle(lock);
    }
  }

  endLockDelay(ctx: ApplyContext, name: string, since: number | undefined): OkResult | MachineError {
    const lock = this.byName.get(name);
    if (lock === undefined || lock.delay === null) {
      return conflict(`lock ${JSON.stringify(name)} is not in lock-delay`);
    }
    if (since !== undefined && since !== lock.delay.since) {
      // A timer of an older delay (e.g. armed by a former leader): the current one stands.
      return conflict(
        `lock-delay of ${JSON.stringify(name)} started at index ${lock.delay.since}, not ${since}: stale timer`,
      );
    }
    const started = lock.delay.since;
    lock.delay = null;
    this.delayed.delete(name);
    ctx.events.push({ type: 'lockDelayEnded', name, since: started });
    this.grantWaiters(ctx, lock);
    this.dropIfIdle(lock);
    return OK;
  }

  // ---- fencing -------------------------------------------------------------------------

  /** The token with which `session` holds `name`, if it does. */
  tokenOf(name: string, session: number): number | undefined {
    return this.byName.get(name)?.holders.get(session)?.token;
  }

  /** The lock's newest holder token (the exclusive holder's), null when nobody holds it. */
  currentToken(name: string): number | null {
    const lock = this.byName.get(name);
    return lock === undefined ? null : currentTokenOf(lock);
  }

  // ---- reads ---------------------------------------------------------------------------

  get size(): number {
    return this.byName.size;
  }

  get holders(): number {
    return this.holderCount;
  }

  get waiters(): number {
    return this.waiterCount;
  }

  get delayedCount(): number {
    return this.delayed.size;
  }

  info(name: string): MachineLockInfo | null {
    const lock = this.byName.get(name);
    return lock === undefined ? null : infoOf(lock);
  }

  /** Names in code-unit order. O(locks) per call: meant for status pages, not hot paths. */
  list(prefix: string, limit: number): MachineLockInfo[] {
    const names: string[] = [];
    for (const name of this.byName.keys()) if (name.startsWith(prefix)) names.push(name);
    names.sort();
    return names.slice(0, Math.max(0, limit)).map((n) => infoOf(this.byName.get(n)!));
  }

  *pendingDelays(): IterableIterator<PendingLockDelay> {
    for (const lock of this.delayed.values()) {
      yield { name: lock.name, delayMs: lock.delay!.delayMs, since: lock.delay!.since };
    }
  }

  /** Mode and token of a session's hold on `name` (for session views). */
  holdOf(name: string, session: number): { token: number; mode: LockMode } | undefined {
    const h = this.byName.get(name)?.holders.get(session);
    return h === undefined ? undefined : { token: h.token, mode: h.mode };
  }

  waitModeOf(name: string, session: number): LockMode | undefined {
    return this.byName.get(name)?.waiters.get(session)?.mode;
  }

  // ---- internals -----------------------------------------------------------------------

  private mismatch(lock: LockRecord, req: AcquireRequest, mode: LockMode, verb: string): MachineError | null {
    if (mode !== req.mode) {
      return withToken(
        'CONFLICT',
        `session already ${verb} lock ${JSON.stringify(lock.name)} in ${mode} mode, not ${req.mode} (no upgrades or downgrades)`,
        currentTokenOf(lock),
      );
    }
    if (mode === 'shared' && lock.limit !== req.limit) return limitMismatch(lock, req.limit);
    return null;
  }

  private addHolder(ctx: ApplyContext, lock: LockRecord, rec: SessionRecord, mode: LockMode, lockDelayMs: number): void {
    lock.holders.set(rec.id, { session: rec, token: ctx.index, mode, lockDelayMs });
    lock.heldMode = mode;
    rec.add('held', lock.name);
    this.holderCount++;
    ctx.events.push({ type: 'granted', session: rec.id, name: lock.name, token: ctx.index, mode });
  }

  private removeHolder(ctx: ApplyContext, lock: LockRecord, holder: HolderRecord, reason: ReleaseReason): void {
    lock.holders.delete(holder.session.id);
    if (lock.holders.size === 0) lock.heldMode = null;
    if (holder.mode === 'shared') removeSharedParty(lock);
    holder.session.drop('held', lock.name);
    this.holderCount--;
    ctx.events.push({ type: 'released', session: holder.session.id, name: lock.name, token: holder.token, reason });
  }

  private removeWaiter(lock: LockRecord, waiter: Waiter): void {
    lock.dequeue(waiter.session.id);
    if (waiter.mode === 'shared') removeSharedParty(lock);
    waiter.session.drop('waits', lock.name);
    this.waiterCount--;
  }

  /** Grants waiters from the head of the queue, all with this entry's index as token. */
  private grantWaiters(ctx: ApplyContext, lock: LockRecord): void {
    if (lock.delay !== null) return;
    for (const waiter of lock.waiters.values()) {
      if (!canGrant(lock, waiter.mode)) break; // strict FIFO: nobody overtakes the head
      lock.dequeue(waiter.session.id);
      waiter.session.drop('waits', lock.name);
      this.waiterCount--;
      this.addHolder(ctx, lock, waiter.session, waiter.mode, waiter.lockDelayMs);
    }
  }

  private startDelay(ctx: ApplyContext, lock: LockRecord, delayMs: number): void {
    // A second expiry during a delay restarts it from this entry, never shortening it.
    const ms = lock.delay === null ? delayMs : Math.max(lock.delay.delayMs, delayMs);
    lock.delay = { since: ctx.index, delayMs: ms };
    this.delayed.set(lock.name, lock);
    ctx.events.push({ type: 'lockDelayStarted', name: lock.name, delayMs: ms, since: ctx.index });
  }

  private dropIfIdle(lock: LockRecord): void {
    if (lock.holders.size === 0 && lock.waiters.size === 0 && lock.delay === null) this.byName.delete(lock.name);
  }

  // ---- snapshot ------------------------------------------------------------------------

  toSnapshot(): LockTuple[] {
    const out: LockTuple[] = [];
    for (const lock of this.byName.values()) {
      const holders: HolderTuple[] = [];
      for (const h of lock.holders.values()) holders.push([h.session.id, h.token, modeFlag(h.mode), h.lockDelayMs]);
      const waiters: WaiterTuple[] = [];
      for (const w of lock.waiters.values()) waiters.push([w.session.id, modeFlag(w.mode), w.lockDelayMs]);
      out.push([
        lock.name,
        lock.limit,
        lock.delay === null ? null : lock.delay.since,
        lock.delay === null ? 0 : lock.delay.delayMs,
        holders,
        waiters,
      ]);
    }
    return out;
  }

  /** Rebuilds the table and the sessions' held/waits sets; checks every invariant. */
  restore(data: unknown, sessions: (id: number) => SessionRecord | undefined, appliedIndex: number): void {
    readEach(data, 'locks', (item) => this.restoreLock(item, sessions, appliedIndex));
  }

  private restoreLock(item: unknown, sessions: (id: number) => SessionRecord | undefined, appliedIndex: number): void {
    const t = readTuple(item, 6, 'lock');
    const name = readString(t[0], 'lock name');
    if (name.length === 0) fail('empty lock name');
    if (this.byName.has(name)) fail(`lock ${JSON.stringify(name)} appears twice`);
    const lock = new LockRecord(name);
    const limit = readNullableIndex(t[1], Number.MAX_SAFE_INTEGER, 'limit');
    const since = readNullableIndex(t[2], appliedIndex, 'delay since');
    const delayMs = readUint(t[3], 'delayMs');
    if (since !== null) lock.delay = { since, delayMs };
    const holders = readArray(t[4], 'holders');
    for (let j = 0; j < holders.length; j++) {
      const ht = readTuple(holders[j], 4, 'holder');
      const rec = sessionOf(ht[0], sessions, appliedIndex, 'holder');
      const token = readIndex(ht[1], appliedIndex, 'holder token');
      const mode = readMode(ht[2], 'holder mode');
      if (lock.holders.has(rec.id)) fail(`holder ${rec.id} appears twice`);
      if (lock.heldMode !== null && lock.heldMode !== mode) fail('exclusive and shared holders together');
      if (mode === 'exclusive' && lock.holders.size > 0) fail('two exclusive holders');
      lock.holders.set(rec.id, { session: rec, token, mode, lockDelayMs: readUint(ht[3], 'holder lock-delay') });
      lock.heldMode = mode;
      if (mode === 'shared') lock.sharedParties++;
    }
    const waiters = readArray(t[5], 'waiters');
    for (let j = 0; j < waiters.length; j++) {
      const wt = readTuple(waiters[j], 3, 'waiter');
      const rec = sessionOf(wt[0], sessions, appliedIndex, 'waiter');
      const mode = readMode(wt[1], 'waiter mode');
      if (lock.holders.has(rec.id) || lock.waiters.has(rec.id)) fail(`session ${rec.id} appears twice`);
      lock.enqueue({ session: rec, mode, lockDelayMs: readUint(wt[2], 'waiter lock-delay') });
      if (mode === 'shared') lock.sharedParties++;
    }
    if (lock.sharedParties === 0 && limit !== null) fail('a limit but no shared parties');
    if (limit !== null && lock.heldMode === 'shared' && lock.holders.size > limit) {
      fail(`${lock.holders.size} shared holders over the limit ${limit}`);
    }
    if (lock.holders.size === 0 && lock.waiters.size === 0 && lock.delay === null) fail('an idle lock');
    lock.limit = limit;
    // Only now, when the lock is known good, link it from the sessions and the counters.
    this.byName.set(name, lock);
    if (lock.delay !== null) this.delayed.set(name, lock);
    for (const h of lock.holders.values()) h.session.add('held', name);
    for (const w of lock.waiters.values()) w.session.add('waits', name);
    this.holderCount += lock.holders.size;
    this.waiterCount += lock.waiters.size;
  }
}

function readMode(v: unknown, what: string): LockMode {
  return v === 0 ? 'exclusive' : v === 1 ? 'shared' : fail(`${what} must be 0 or 1`);
}

function sessionOf(
  v: unknown,
  sessions: (id: number) => SessionRecord | undefined,
  appliedIndex: number,
  what: string,
): SessionRecord {
  const id = readIndex(v, appliedIndex, what);
  return sessions(id) ?? fail(`${what} ${id} is not a session of the snapshot`);
}

function canGrant(lock: LockRecord, mode: LockMode): boolean {
  if (mode === 'exclusive') return lock.holders.size === 0;
  return lock.heldMode !== 'exclusive' && (lock.limit === null || lock.holders.size < lock.limit);
}

function addSharedParty(lock: LockRecord, limit: number | null): void {
  if (lock.sharedParties === 0) lock.limit = limit;
  lock.sharedParties++;
}

function removeSharedParty(lock: LockRecord): void {
  lock.sharedParties--;
  if (lock.sharedParties === 0) lock.limit = null;
}

function limitMismatch(lock: LockRecord, asked: number | null): MachineError {
  return withToken(
    'CONFLICT',
    `lock ${JSON.stringify(lock.name)} is shared with limit ${lock.limit ?? 'none'}, not ${asked ?? 'none'}`,
    currentTokenOf(lock),
  );
}

function currentTokenOf(lock: LockRecord): number | null {
  let token: number | null = null;
  for (const h of lock.holders.values()) if (token === null || h.token > token) token = h.token;
  return token;
}

function positionOf(lock: LockRecord, session: number): number {
  let position = 1;
  for (const id of lock.waiters.keys()) {
    if (id === session) return position;
    position++;
  }
  return position;
}

function holderInfo(h: HolderRecord): Holder {
  return { session: h.session.id, token: h.token, mode: h.mode };
}

function busyOf(lock: LockRecord): BusyResult {
  const holders: Holder[] = [];
  for (const h of lock.holders.values()) {
    if (holders.length === BUSY_HOLDERS_SHOWN) break;
    holders.push(holderInfo(h));
  }
  return { type: 'busy', holders, holderCount: lock.holders.size, delayed: lock.delay !== null };
}

function infoOf(lock: LockRecord): MachineLockInfo {
  let position = 0;
  return {
    name: lock.name,
    mode: lock.heldMode,
    limit: lock.limit,
    holders: [...lock.holders.values()].map(holderInfo),
    waiters: [...lock.waiters.values()].map((w) => ({ session: w.session.id, mode: w.mode, position: ++position })),
    delayed: lock.delay !== null,
    lockDelay: lock.delay === null ? null : { since: lock.delay.since, delayMs: lock.delay.delayMs },
  };
}
