// Random histories of a correct lock service, for property and performance tests.
//
// The generator is its own small reference implementation (deliberately not the checker's
// model, so a bug in one is not mirrored in the other). It decides a sequence of
// linearization points 10 ms apart, runs each operation against its state there, then
// gives every operation a window around its point: tight windows make a sequential
// history, wide ones a concurrent history. Any window containing the point keeps the
// history linearizable, and so does turning an ok operation into an unknown one.

import type { LockMode, Operation } from '../checker/index.js';

export interface GenerateOptions {
  readonly seed: number;
  readonly ops: number;
  readonly locks?: readonly string[];
  /** Sessions alive at a time (an expired session is replaced by a new one). */
  readonly sessions?: number;
  /** Half-width of the random widening of windows, in ms; 0..2 keeps them disjoint. */
  readonly spreadMs?: number;
  /** Probability that an ok operation is recorded as unknown. */
  readonly unknownRate?: number;
  readonly withElection?: boolean;
  readonly withFence?: boolean;
}

const STEP_MS = 10;

function prng(seed: number): () => number {
  let a = seed >>> 0 || 1;
  return () => {
    a ^= a << 13;
    a >>>= 0;
    a ^= a >>> 17;
    a ^= a << 5;
    a >>>= 0;
    return a / 4294967296;
  };
}

interface HeldLock {
  readonly token: number;
  readonly mode: LockMode;
}

export function generateHistory(options: GenerateOptions): Operation[] {
  const rand = prng(options.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const locks = options.locks ?? ['A', 'B'];
  const sharedLimit = 2;
  const sessionCount = options.sessions ?? 4;
  const spread = options.spreadMs ?? 0;

  let logIndex = 1;
  let sessionSeq = 0;
  const alive: string[] = [];
  const newSession = (): string => `s${++sessionSeq}`;
  for (let i = 0; i < sessionCount; i++) alive.push(newSession());
  const holders = new Map<string, Map<string, HeldLock>>(locks.map((l) => [l, new Map()]));
  const fence = new Map<string, number>();
  const pastTokens = new Map<string, number[]>(locks.map((l) => [l, []]));
  type Leader = { session: string; token: number; value: string };
  let leader = null as Leader | null;

  const ops: Operation[] = [];
  let id = 0;
  // Records are assembled loosely here and typed once, at the end of emit.
  type Draft = { op: Operation['op']; outcome: Operation['outcome']; args: object; session?: string; process?: string; result?: object };
  const emit = (point: number, record: Draft): void => {
    const before = spread > 0 ? rand() * spread : 1;
    const after = spread > 0 ? rand() * spread : 1;
    ops.push({
      id: ++id,
      process: record.process ?? (record.session === undefined ? 'reader' : `p-${record.session}`),
      invokeMs: point - before,
      completeMs: point + after,
      ...record,
    } as Operation);
  };

  const grantable = (lock: string, mode: LockMode): boolean => {
    const held = [...holders.get(lock)!.values()];
    if (mode === 'exclusive') return held.length === 0;
    return held.every((h) => h.mode === 'shared') && held.length < sharedLimit;
  };

  for (let k = 0; k < options.ops; k++) {
    const t = (k + 1) * STEP_MS;
    const lock = pick(locks);
    const held = holders.get(lock)!;
    const roll = rand();
    const session = pick(alive);
    logIndex += 1 + Math.floor(rand() * 3); // other entries (keepalives, other locks) interleave

    if (options.withElection && roll < 0.08) {
      const kind = rand();
      if (leader === null && kind < 0.5) {
        leader = { session, token: logIndex, value: `v${k}` };
        emit(t, { session, op: 'campaign', args: { election: 'E', value: leader.value }, outcome: 'ok', result: { token: logIndex } });
      } else if (leader !== null && kind < 0.3) {
        emit(t, { session: leader.session, op: 'resign', args: { election: 'E' }, outcome: 'ok' });
        leader = null;
      } else if (leader !== null && kind < 0.6) {
        leader = { ...leader, value: `v${k}` };
        emit(t, { session: leader.session, op: 'proclaim', args: { election: 'E', value: leader.value }, outcome: 'ok' });
      } else {
        emit(t, { op: 'leader', args: { election: 'E' }, outcome: 'ok', result: { leader: leader === null ? null : { ...leader } } });
      }
      continue;
    }
    if (options.withFence && roll < 0.18) {
      // A write with the current token of a holder, or a stale token from the past.
      const past = pastTokens.get(lock)!;
      if (past.length === 0) continue;
      const token = rand() < 0.7 ? past[past.length - 1]! : pick(past);
      const current = fence.get(lock);
      if (current !== undefined && token < current) {
        emit(t, { session, op: 'fencedWrite', args: { lock, token, value: k }, outcome: 'ok', result: { rejected: true, fence: current } });
      } else {
        fence.set(lock, token);
        emit(t, { session, op: 'fencedWrite', args: { lock, token, value: k }, outcome: 'ok', result: {} });
      }
      continue;
    }
    if (roll < 0.45) {
      const mode: LockMode = lock === locks[0] ? 'exclusive' : rand() < 0.7 ? 'shared' : 'exclusive';
      const limitArgs = mode === 'shared' ? { limit: sharedLimit } : {};
      const blocking = rand() < 0.6;
      if (!held.has(session) && grantable(lock, mode)) {
        held.set(session, { token: logIndex, mode });
        pastTokens.get(lock)!.push(logIndex);
        const result = blocking ? { token: logIndex } : { granted: true, token: logIndex };
        emit(t, { session, op: blocking ? 'acquire' : 'tryAcquire', args: { lock, mode, ...limitArgs }, outcome: 'ok', result });
      } else if (!held.has(session)) {
        emit(t, { session, op: 'tryAcquire', args: { lock, mode, ...limitArgs }, outcome: 'ok', result: { granted: false } });
      } else {
        // Already held: the service answers busy-by-self; record as a failed acquire.
        emit(t, { session, op: 'acquire', args: { lock, mode, ...limitArgs }, outcome: 'fail' });
      }
      continue;
    }
    if (roll < 0.75) {
      // Mostly a holder releasing; sometimes a confused client, which the service refuses.
      const releaser = held.size > 0 && rand() < 0.85 ? pick([...held.keys()]) : session;
      const mine = held.get(releaser);
      if (mine !== undefined) {
        held.delete(releaser);
        emit(t, { session: releaser, op: 'release', args: { lock, token: mine.token }, outcome: 'ok', result: {} });
      } else {
        emit(t, { session: releaser, op: 'release', args: { lock, token: logIndex }, outcome: 'fail' });
      }
      continue;
    }
    if (roll < 0.95) {
      const seen = [...held.entries()].map(([s, h]) => ({ session: s, token: h.token }));
      emit(t, { op: 'read', args: { lock }, outcome: 'ok', result: { holders: seen } });
      continue;
    }
    // Expiry: the session loses everything; a fresh session takes its place.
    for (const m of holders.values()) m.delete(session);
    if (leader?.session === session) leader = null;
    alive.splice(alive.indexOf(session), 1, newSession());
    emit(t, { op: 'sessionExpired', args: { session }, outcome: 'ok', result: {}, process: 'cluster' });
  }

  const unknownRate = options.unknownRate ?? 0;
  if (unknownRate > 0) {
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (op.outcome === 'ok' && rand() < unknownRate) {
        const { result: _result, ...rest } = op;
        ops[i] = { ...rest, outcome: 'unknown', completeMs: null } as Operation;
      }
    }
  }
  return ops;
}

export interface ContendedOptions {
  readonly seed: number;
  /** Approximate number of operations to produce. */
  readonly ops: number;
  readonly locks: readonly string[];
  /** Client processes competing for each lock. */
  readonly processesPerLock: number;
  /** Probability that a grant's answer is lost (the acquire is unknown, the session expires). */
  readonly lostGrantRate?: number;
}

/**
 * Histories shaped like a chaos run: per lock, several processes loop acquire (blocking,
 * FIFO) → fenced write → release, so acquire windows span the holds of everyone queued
 * ahead; a reader process reads holders now and then. A grant whose answer is lost leaves
 * its holder unaware: the lock is freed only when its session expires.
 */
export function generateContendedHistory(options: ContendedOptions): Operation[] {
  const rand = prng(options.seed);
  const between = (lo: number, hi: number): number => lo + rand() * (hi - lo);
  const lostRate = options.lostGrantRate ?? 0;
  const perLock = Math.ceil(options.ops / options.locks.length);

  interface Draft {
    op: Operation;
    grantAt?: number;
  }
  const drafts: Draft[] = [];
  const intervals: { lock: string; session: string; from: number; to: number; draft: Draft }[] = [];
  let sessionSeq = 0;
  let id = 0;
  const add = (op: Omit<Operation, 'id'>, grantAt?: number): Draft => {
    const d: Draft = { op: { id: ++id, ...op } as Operation, ...(grantAt === undefined ? {} : { grantAt }) };
    drafts.push(d);
    return d;
  };

  for (const lock of options.locks) {
    const procs = Array.from({ length: options.processesPerLock }, (_, i) => ({
      name: `${lock}-p${i}`,
      session: `s${++sessionSeq}`,
      nextInvoke: between(0, 5),
    }));
    let freeAt = 0;
    let emitted = 0;
    while (emitted < perLock) {
      const p = procs.reduce((a, b) => (b.nextInvoke < a.nextInvoke ? b : a));
      const inv = p.nextInvoke;
      const grantAt = Math.max(inv, freeAt) + between(0.1, 1);
      const lost = rand() < lostRate;
      if (lost) {
        // The grant happened but its answer never arrived; the session expires later.
        const expireAt = grantAt + between(20, 60);
        const acquire = add({ process: p.name, session: p.session, op: 'acquire', args: { lock, mode: 'exclusive' }, invokeMs: inv, completeMs: null, outcome: 'unknown' }, grantAt);
        intervals.push({ lock, session: p.session, from: grantAt, to: expireAt, draft: acquire });
        const seen = rand() < 0.5;
        add({
          process: 'cluster',
          op: 'sessionExpired',
          args: { session: p.session },
          invokeMs: grantAt,
          completeMs: seen ? expireAt + between(0.1, 2) : null,
          outcome: seen ? 'ok' : 'unknown',
        });
        freeAt = expireAt;
        p.session = `s${++sessionSeq}`;
        p.nextInvoke = expireAt + between(1, 5);
        emitted += 2;
        continue;
      }
      const complete = grantAt + between(0.1, 2);
      const acquire = add({ process: p.name, session: p.session, op: 'acquire', args: { lock, mode: 'exclusive' }, invokeMs: inv, completeMs: complete, outcome: 'ok' }, grantAt);
      const writeInv = complete + between(0.1, 1);
      const writeDone = writeInv + between(0.1, 1);
      const write = add({ process: p.name, session: p.session, op: 'fencedWrite', args: { lock, token: 0, value: id }, invokeMs: writeInv, completeMs: writeDone, outcome: 'ok', result: {} });
      const relInv = writeDone + between(1, 15);
      const relAt = relInv + between(0.1, 1);
      const relDone = relAt + between(0.1, 1);
      const release = add({ process: p.name, session: p.session, op: 'release', args: { lock, token: 0 }, invokeMs: relInv, completeMs: relDone, outcome: 'ok', result: {} });
      intervals.push({ lock, session: p.session, from: grantAt, to: relAt, draft: acquire });
      (acquire as Draft & { linked?: Draft[] }).linked = [write, release];
      freeAt = relAt;
      p.nextInvoke = relDone + between(0.5, 5);
      emitted += 3;
      if (rand() < 0.3) {
        const at = between(Math.max(0, grantAt - 20), relAt + 20);
        add({ process: `${lock}-reader`, op: 'read', args: { lock }, invokeMs: at - between(0.1, 2), completeMs: at + between(0.1, 2), outcome: 'ok', result: { holders: [] } }, at);
        emitted++;
      }
    }
  }

  // Tokens: log indexes increase with grant time across all locks.
  const grants = drafts.filter((d) => d.op.op === 'acquire' && d.grantAt !== undefined).sort((a, b) => a.grantAt! - b.grantAt!);
  let index = 10;
  for (const g of grants) {
    index += 1 + Math.floor(rand() * 3);
    const token = index;
    if (g.op.outcome === 'ok') g.op = { ...g.op, result: { token } } as Operation;
    for (const d of (g as Draft & { linked?: Draft[] }).linked ?? []) d.op = { ...d.op, args: { ...d.op.args, token } } as Operation;
    const iv = intervals.find((i) => i.draft === g)!;
    (iv as { token?: number }).token = token;
  }
  // Reads see whoever held the lock at their point.
  for (const d of drafts) {
    if (d.op.op !== 'read') continue;
    const lock = d.op.args.lock;
    const holders = intervals
      .filter((i) => i.lock === lock && i.from <= d.grantAt! && d.grantAt! < i.to)
      .map((i) => ({ session: i.session, token: (i as { token?: number }).token! }));
    d.op = { ...d.op, result: { holders } };
  }
  return drafts.map((d) => d.op);
}
