// Splitting a history into independently checkable objects, and compiling one object's
// operations into search input.
//
// Linearizability is compositional (Herlihy & Wing): a history is linearizable iff each
// object's sub-history is. The objects are each lock, each election and each fenced
// resource. A session expiry touches every lock the session holds; it is projected into
// each of those locks' sub-histories, where it may be placed anywhere inside its window
// independently per lock. That is a relaxation (the checker does not insist the expiry hit
// all locks at one instant), so it can only miss bugs, never invent them.

import { canonicalJson, sessionKey, sessionOf, type Operation } from './history.js';
import { fenceModel, lockModel, type FenceModelOp, type LockModelOp } from './model.js';
import { searchLinearization, type SearchBudget, type SearchOp, type SearchOptions, type SearchOutcome } from './search.js';

export type ObjectKind = 'lock' | 'election' | 'fence';

export interface ObjectRef {
  readonly kind: ObjectKind;
  /** The lock or election name (for 'fence': the lock whose tokens the resource checks). */
  readonly name: string;
}

export interface ObjectHistory {
  readonly ref: ObjectRef;
  readonly ops: readonly Operation[];
}

export function objectKey(ref: ObjectRef): string {
  return `${ref.kind}:${ref.name}`;
}

/** The object an operation belongs to; undefined for session expiries (they span objects). */
export function objectOf(op: Operation): ObjectRef | undefined {
  switch (op.op) {
    case 'acquire':
    case 'tryAcquire':
    case 'release':
    case 'read':
      return { kind: 'lock', name: op.args.lock };
    case 'campaign':
    case 'proclaim':
    case 'resign':
    case 'leader':
      return { kind: 'election', name: op.args.election };
    case 'fencedWrite':
      return { kind: 'fence', name: op.args.lock };
    case 'sessionExpired':
      return undefined;
  }
}

/** Sessions an operation mentions: its own and any it observed as holder or leader. */
function sessionsMentioned(op: Operation): string[] {
  const out: string[] = [];
  const own = sessionOf(op);
  if (own !== undefined) out.push(own);
  if (op.outcome === 'ok' && op.result !== undefined) {
    if (op.op === 'read') for (const h of op.result.holders) out.push(sessionKey(h.session));
    if (op.op === 'leader' && op.result.leader !== null) out.push(sessionKey(op.result.leader.session));
  }
  return out;
}

/** Per-object sub-histories, sorted by object key for stable output. */
export function partitionHistory(history: readonly Operation[]): ObjectHistory[] {
  const byObject = new Map<string, { ref: ObjectRef; ops: Operation[]; sessions: Set<string> }>();
  const expiries: Operation[] = [];
  for (const op of history) {
    if (op.op === 'sessionExpired') {
      expiries.push(op);
      continue;
    }
    const ref = objectOf(op)!;
    const key = objectKey(ref);
    let entry = byObject.get(key);
    if (entry === undefined) {
      entry = { ref, ops: [], sessions: new Set() };
      byObject.set(key, entry);
    }
    entry.ops.push(op);
    for (const s of sessionsMentioned(op)) entry.sessions.add(s);
  }
  for (const entry of byObject.values()) {
    if (entry.ref.kind === 'fence') continue;
    for (const e of expiries) if (entry.sessions.has(sessionOf(e)!)) entry.ops.push(e);
  }
  return [...byObject.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => ({ ref: e.ref, ops: e.ops }));
}

// ---------------------------------------------------------------------------------------
// Compilation

/**
 * How the search should treat a recorded operation:
 *  - recorded: as the harness recorded it (ok: happened inside its window; unknown: may
 *    have happened any time after invocation, or never);
 *  - relaxed: may or may not have happened, inside its recorded window, with its recorded
 *    result if it did (the shrinker uses this to take an operation out of a failing
 *    window without inventing failures: it only ever adds possibilities);
 *  - open: may or may not have happened, any time after invocation (an operation still
 *    in flight at the cut-off of a truncated history).
 */
export type Treatment = 'recorded' | 'relaxed' | 'open';

export interface ViewOp {
  readonly source: Operation;
  readonly treatment: Treatment;
}

export interface CompiledObject {
  readonly ref: ObjectRef;
  /** The recorded operation behind each search operation. */
  readonly sources: readonly Operation[];
  run(budget: SearchBudget, options?: SearchOptions): SearchOutcome;
}

// Counter 0 counts linearized definite operations that take part in token ordering.
const TOKEN_ORDER_COUNTER = 0;

type Certainty = { optional: boolean; returnMs: number; useResult: boolean };

function certaintyOf(v: ViewOp): Certainty | undefined {
  const op = v.source;
  if (op.outcome === 'fail') return undefined; // definitely did not happen
  if (op.outcome === 'unknown') return { optional: true, returnMs: Infinity, useResult: false };
  switch (v.treatment) {
    case 'recorded':
      return { optional: false, returnMs: op.completeMs!, useResult: true };
    case 'relaxed':
      return { optional: true, returnMs: op.completeMs!, useResult: true };
    case 'open':
      return { optional: true, returnMs: Infinity, useResult: true };
  }
}

/**
 * The model operation for a lock/election record. useResult false: the answer was lost,
 * so only what the arguments say is known. Undefined when the record can change nothing
 * and says nothing (a read whose answer was lost).
 */
export function toLockModelOp(op: Operation, useResult: boolean): LockModelOp | undefined {
  const session = sessionOf(op);
  switch (op.op) {
    case 'acquire':
    case 'tryAcquire': {
      const limit = op.args.limit ?? Infinity;
      if (!useResult) return { type: 'grant', session: session!, mode: op.args.mode, limit, token: null, value: null };
      const r = op.result!;
      if ('granted' in r && !r.granted) return { type: 'refuse' };
      return { type: 'grant', session: session!, mode: op.args.mode, limit, token: (r as { token: number }).token, value: null };
    }
    case 'campaign':
      return {
        type: 'grant',
        session: session!,
        mode: 'exclusive',
        limit: 1,
        token: useResult ? op.result!.token : null,
        value: canonicalJson(op.args.value),
      };
    case 'release':
      return { type: 'release', session: session!, token: op.args.token };
    case 'resign':
      return { type: 'release', session: session!, token: op.args.token ?? null };
    case 'proclaim':
      return { type: 'proclaim', session: session!, token: op.args.token ?? null, value: canonicalJson(op.args.value) };
    case 'sessionExpired':
      return { type: 'expire', session: session! };
    case 'read':
      if (!useResult) return undefined;
      return {
        type: 'read',
        holders: op.result!.holders
          .map((h) => ({ session: sessionKey(h.session), token: h.token }))
          .sort((a, b) => (a.session < b.session ? -1 : a.session > b.session ? 1 : 0)),
      };
    case 'leader': {
      if (!useResult) return undefined;
      const l = op.result!.leader;
      return { type: 'readLeader', leader: l === null ? null : { session: sessionKey(l.session), token: l.token, value: canonicalJson(l.value) } };
    }
    case 'fencedWrite':
      return undefined;
  }
}

export function toFenceModelOp(op: Operation, useResult: boolean): FenceModelOp | undefined {
  if (op.op !== 'fencedWrite') return undefined;
  const r = useResult ? op.result : undefined;
  if (r !== undefined && r.rejected === true) return { type: 'reject', token: op.args.token, fence: r.fence };
  return { type: 'accept', token: op.args.token };
}

/** Reads and refusals change nothing, so when they may not have happened they are dropped. */
function isObservation(op: LockModelOp | FenceModelOp): boolean {
  return op.type === 'read' || op.type === 'readLeader' || op.type === 'refuse' || op.type === 'reject';
}

export function compileObject(ref: ObjectRef, view: readonly ViewOp[]): CompiledObject {
  const sources: Operation[] = [];
  if (ref.kind === 'fence') {
    const ops: SearchOp<FenceModelOp>[] = [];
    for (const v of view) {
      const c = certaintyOf(v);
      if (c === undefined) continue;
      const m = toFenceModelOp(v.source, c.useResult);
      if (m === undefined || (c.optional && isObservation(m))) continue;
      ops.push({ op: m, invokeMs: v.source.invokeMs, returnMs: c.returnMs, optional: c.optional });
      sources.push(v.source);
    }
    const ordered = withTokenOrder(ops, acceptToken, () => true);
    return { ref, sources, run: (budget, options) => searchLinearization(fenceModel, ordered, budget, options) };
  }

  const ops: SearchOp<LockModelOp>[] = [];
  for (const v of view) {
    const c = certaintyOf(v);
    if (c === undefined) continue;
    const m = toLockModelOp(v.source, c.useResult);
    if (m === undefined || (c.optional && isObservation(m))) continue;
    ops.push({ op: m, invokeMs: v.source.invokeMs, returnMs: c.returnMs, optional: c.optional });
    sources.push(v.source);
  }
  const ordered = withGrantOrder(ops);
  return { ref, sources, run: (budget, options) => searchLinearization(lockModel, ordered, budget, options) };
}

/**
 * Tokens fix an order, and gates let the search use it up front (see search.ts).
 *
 * Lock grants: once a grant with token t is linearized, the model rejects any fresh grant
 * with a smaller token. So no grant with token t may be linearized while a definite grant
 * with a smaller token is pending — that grant could then never happen. Definite grants
 * sharing (session, token) with another grant are left out of the count: the model lets a
 * repeated answer for a held grant through at any point, so their order is not fixed.
 *
 * Fenced writes: accepted tokens never decrease, so the same holds for accepts.
 */
function withTokenOrder<O>(ops: readonly SearchOp<O>[], tokenOf: (op: O) => number | undefined, countable: (o: SearchOp<O>) => boolean): SearchOp<O>[] {
  const counted = ops
    .filter((o) => !o.optional && countable(o))
    .map((o) => tokenOf(o.op)!)
    .sort((a, b) => a - b);
  const countBelow = (t: number): number => {
    let lo = 0;
    let hi = counted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (counted[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return ops.map((o) => {
    const t = tokenOf(o.op);
    if (t === undefined) return o;
    const below = countBelow(t);
    const bumps = !o.optional && countable(o) ? { bumps: [TOKEN_ORDER_COUNTER] } : {};
    const needs = below > 0 ? { needs: [[TOKEN_ORDER_COUNTER, below] as const] } : {};
    return { ...o, ...bumps, ...needs };
  });
}

function grantToken(m: LockModelOp): number | undefined {
  return m.type === 'grant' && m.token !== null ? m.token : undefined;
}

function withGrantOrder(ops: readonly SearchOp<LockModelOp>[]): SearchOp<LockModelOp>[] {
  const identity = (m: LockModelOp): string => JSON.stringify([(m as { session: string }).session, grantToken(m)]);
  const seen = new Map<string, number>();
  for (const o of ops) {
    if (grantToken(o.op) === undefined) continue;
    const id = identity(o.op);
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return withTokenOrder(ops, grantToken, (o) => seen.get(identity(o.op)) === 1);
}

function acceptToken(m: FenceModelOp): number | undefined {
  return m.type === 'accept' ? m.token : undefined;
}

/** Every operation of the object as recorded. */
export function recordedView(ops: readonly Operation[]): ViewOp[] {
  return ops.map((source) => ({ source, treatment: 'recorded' }));
}
