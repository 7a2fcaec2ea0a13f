// Direct checks that need no search. Each is a consequence of the model plus real-time
// order, so a violation here is also a linearizability violation; they run first because
// they are cheap (near-linear), always finish, and name the broken rule in plain words.

import { sessionKey, sessionOf, type LockMode, type Operation } from './history.js';
import type { ObjectRef } from './partition.js';

export type InvariantName = 'token-order' | 'duplicate-token' | 'fence-regression' | 'overlapping-holders';

export interface InvariantViolation {
  readonly invariant: InvariantName;
  readonly object: ObjectRef;
  readonly reason: string;
  /** The operations that together break the rule, in time order. */
  readonly window: readonly Operation[];
  /** When the violation became observable (for picking the first one). */
  readonly atMs: number;
}

interface Grant {
  readonly op: Operation;
  readonly object: ObjectRef;
  readonly session: string;
  readonly token: number;
  readonly mode: LockMode;
  readonly invokeMs: number;
  readonly completeMs: number;
}

function describe(op: Operation): string {
  const who = sessionOf(op);
  return `#${String(op.id)} ${op.op}${who === undefined ? '' : ` by ${who}`}`;
}

/** Successful grants (acquire, granted tryAcquire, campaign) grouped by lock / election. */
function grantsByObject(history: readonly Operation[]): Map<string, Grant[]> {
  const out = new Map<string, Grant[]>();
  for (const op of history) {
    if (op.outcome !== 'ok' || op.result === undefined) continue;
    let object: ObjectRef;
    let token: number;
    let mode: LockMode;
    if (op.op === 'acquire' || op.op === 'tryAcquire') {
      if ('granted' in op.result && !op.result.granted) continue;
      object = { kind: 'lock', name: op.args.lock };
      token = (op.result as { token: number }).token;
      mode = op.args.mode;
    } else if (op.op === 'campaign') {
      object = { kind: 'election', name: op.args.election };
      token = op.result.token;
      mode = 'exclusive';
    } else {
      continue;
    }
    const key = `${object.kind}:${object.name}`;
    const list = out.get(key) ?? [];
    list.push({ op, object, session: sessionOf(op)!, token, mode, invokeMs: op.invokeMs, completeMs: op.completeMs! });
    out.set(key, list);
  }
  return out;
}

/**
 * Tokens strictly increase in real-time order: a grant that completed before another was
 * invoked was made at a smaller log index. (Equal tokens from one session are one grant
 * answered twice.)
 */
function checkTokenOrder(grants: readonly Grant[], out: InvariantViolation[]): void {
  const byComplete = [...grants].sort((a, b) => a.completeMs - b.completeMs);
  const byInvoke = [...grants].sort((a, b) => a.invokeMs - b.invokeMs);
  let top = Number.NEGATIVE_INFINITY;
  let topGrants: Grant[] = [];
  let k = 0;
  for (const b of byInvoke) {
    while (k < byComplete.length && byComplete[k]!.completeMs < b.invokeMs) {
      const a = byComplete[k++]!;
      if (a.token > top) {
        top = a.token;
        topGrants = [a];
      } else if (a.token === top) {
        topGrants.push(a);
      }
    }
    let witness: Grant | undefined;
    if (b.token < top) witness = topGrants[0];
    else if (b.token === top) witness = topGrants.find((a) => a.session !== b.session);
    if (witness !== undefined) {
      out.push({
        invariant: 'token-order',
        object: b.object,
        reason:
          `fencing token went backwards: ${describe(witness.op)} got token ${witness.token} and completed at ${witness.completeMs}, ` +
          `then ${describe(b.op)}, invoked later at ${b.invokeMs}, got token ${b.token}`,
        window: [witness.op, b.op],
        atMs: b.completeMs,
      });
    }
  }
}

/** One log entry grants a lock to one exclusive holder; only shared grants may share a token. */
function checkDuplicateTokens(grants: readonly Grant[], out: InvariantViolation[]): void {
  const byToken = new Map<number, Grant[]>();
  for (const g of grants) {
    const group = byToken.get(g.token);
    if (group === undefined) byToken.set(g.token, [g]);
    else group.push(g);
  }
  for (const group of byToken.values()) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const a = group[i]!;
        const b = group[j]!;
        if (a.session === b.session || (a.mode === 'shared' && b.mode === 'shared')) continue;
        const [first, second] = a.completeMs <= b.completeMs ? [a, b] : [b, a];
        out.push({
          invariant: 'duplicate-token',
          object: a.object,
          reason: `two grants share token ${a.token}: ${describe(first.op)} (${first.mode}) and ${describe(second.op)} (${second.mode})`,
          window: [first.op, second.op],
          atMs: second.completeMs,
        });
      }
    }
  }
}

/** The fenced resource never accepts a token below one it accepted earlier. */
function checkFenceRegressions(history: readonly Operation[], out: InvariantViolation[]): void {
  const accepted = new Map<string, Operation[]>();
  for (const op of history) {
    if (op.op !== 'fencedWrite' || op.outcome !== 'ok' || op.result?.rejected === true) continue;
    const list = accepted.get(op.args.lock);
    if (list === undefined) accepted.set(op.args.lock, [op]);
    else list.push(op);
  }
  for (const [lock, writes] of accepted) {
    const tokenOf = (op: Operation): number => (op.args as { token: number }).token;
    const byComplete = [...writes].sort((a, b) => a.completeMs! - b.completeMs!);
    const byInvoke = [...writes].sort((a, b) => a.invokeMs - b.invokeMs);
    let top: Operation | undefined;
    let k = 0;
    for (const b of byInvoke) {
      while (k < byComplete.length && byComplete[k]!.completeMs! < b.invokeMs) {
        const a = byComplete[k++]!;
        if (top === undefined || tokenOf(a) > tokenOf(top)) top = a;
      }
      if (top !== undefined && tokenOf(b) < tokenOf(top)) {
        out.push({
          invariant: 'fence-regression',
          object: { kind: 'fence', name: lock },
          reason:
            `the fenced resource accepted token ${tokenOf(b)} (${describe(b)}) after it had accepted token ${tokenOf(top)} ` +
            `(${describe(top)}, completed at ${top.completeMs})`,
          window: [top, b],
          atMs: b.completeMs!,
        });
      }
    }
  }
}

/**
 * Holding intervals do not overlap. Tokens order the grants; a grant G1 with a smaller
 * token than G2 must be freed before G2 takes effect when either is exclusive. Only a
 * release of G1 or an expiry of its session frees it, and neither can take effect before
 * it is invoked. So if every such operation was invoked after G2 completed, both held the
 * lock at once.
 */
function checkOverlappingHolders(history: readonly Operation[], grants: readonly Grant[], out: InvariantViolation[]): void {
  if (grants.length < 2) return;
  const object = grants[0]!.object;
  // One entry per distinct grant (session, token): repeated answers are one grant, which
  // took effect no later than the earliest completion among them.
  const distinct = new Map<string, { g: Grant; completeMs: number; freeStart: number; freers: Operation[] }>();
  for (const g of grants) {
    const key = JSON.stringify([g.session, g.token]);
    const d = distinct.get(key);
    if (d === undefined) distinct.set(key, { g, completeMs: g.completeMs, freeStart: Infinity, freers: [] });
    else if (g.completeMs < d.completeMs) {
      d.completeMs = g.completeMs;
      d.g = g;
    }
  }
  const sessions = new Set([...distinct.values()].map((d) => d.g.session));
  const freersBySession = new Map<string, Operation[]>();
  for (const op of history) {
    if (op.outcome === 'fail') continue;
    const frees =
      (op.op === 'release' && object.kind === 'lock' && op.args.lock === object.name) ||
      (op.op === 'resign' && object.kind === 'election' && op.args.election === object.name) ||
      op.op === 'sessionExpired';
    if (!frees) continue;
    const s = op.op === 'sessionExpired' ? sessionKey(op.args.session) : sessionOf(op)!;
    if (!sessions.has(s)) continue;
    const list = freersBySession.get(s);
    if (list === undefined) freersBySession.set(s, [op]);
    else list.push(op);
  }
  for (const d of distinct.values()) {
    for (const op of freersBySession.get(d.g.session) ?? []) {
      const token = op.op === 'release' ? op.args.token : op.op === 'resign' ? op.args.token : undefined;
      if (token !== undefined && token !== d.g.token) continue;
      d.freers.push(op);
      d.freeStart = Math.min(d.freeStart, op.invokeMs);
    }
  }
  const sorted = [...distinct.values()].sort((a, b) => a.g.token - b.g.token);
  // Prefix maxima of freeStart over strictly smaller tokens, for all grants and for
  // exclusive ones: most grants are cleared by one comparison.
  let i = 0;
  let maxFreeAll = Number.NEGATIVE_INFINITY;
  let maxFreeExclusive = Number.NEGATIVE_INFINITY;
  while (i < sorted.length) {
    let j = i;
    while (j < sorted.length && sorted[j]!.g.token === sorted[i]!.g.token) j++;
    for (let k = i; k < j; k++) {
      const later = sorted[k]!;
      const bound = later.g.mode === 'exclusive' ? maxFreeAll : maxFreeExclusive;
      if (!(bound > later.completeMs)) continue;
      for (let e = i - 1; e >= 0; e--) {
        const earlier = sorted[e]!;
        if (later.g.mode === 'shared' && earlier.g.mode === 'shared') continue;
        // Granted in the opposite real-time order to their tokens: token-order reports that.
        if (earlier.g.invokeMs > later.completeMs) continue;
        if (!(earlier.freeStart > later.completeMs)) continue;
        const freed =
          earlier.freers.length === 0
            ? 'it was never released and its session never expired'
            : `the first release/expiry that could free it was invoked at ${earlier.freeStart}`;
        out.push({
          invariant: 'overlapping-holders',
          object,
          reason:
            `${describe(later.g.op)} was granted token ${later.g.token} (${later.g.mode}, completed at ${later.completeMs}) ` +
            `while ${describe(earlier.g.op)} still held token ${earlier.g.token} (${earlier.g.mode}): ${freed}`,
          window: [earlier.g.op, ...earlier.freers, later.g.op].sort((a, b) => a.invokeMs - b.invokeMs),
          atMs: later.completeMs,
        });
        break;
      }
    }
    for (let k = i; k < j; k++) {
      maxFreeAll = Math.max(maxFreeAll, sorted[k]!.freeStart);
      if (sorted[k]!.g.mode === 'exclusive') maxFreeExclusive = Math.max(maxFreeExclusive, sorted[k]!.freeStart);
    }
    i = j;
  }
}

/** Every invariant violation in the history, earliest first. */
export function checkInvariants(history: readonly Operation[]): InvariantViolation[] {
  const out: InvariantViolation[] = [];
  for (const grants of grantsByObject(history).values()) {
    checkTokenOrder(grants, out);
    checkDuplicateTokens(grants, out);
    checkOverlappingHolders(history, grants, out);
  }
  checkFenceRegressions(history, out);
  return out.sort((a, b) => a.atMs - b.atMs);
}
