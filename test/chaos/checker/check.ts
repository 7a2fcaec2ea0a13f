// The checker's entry point: invariants first (cheap, always finish), then the
// per-object linearizability search under a budget, then shrinking of a failure.

import { sessionOf, validateHistory, type Operation } from './history.js';
import { checkInvariants, type InvariantName } from './invariants.js';
import { compileObject, objectKey, partitionHistory, recordedView, type ObjectKind } from './partition.js';
import { shrinkFailure } from './shrink.js';
import type { Diagnosis } from './search.js';

export interface CheckOptions {
  /** Steps allowed for the whole search, across objects. Default 5,000,000. */
  readonly maxSteps?: number;
  /** Wall-clock allowance for the search, in ms. Default 60,000. */
  readonly maxMs?: number;
  /** Shrink a failure to a minimal window (default true). */
  readonly shrink?: boolean;
  /** Steps allowed for shrinking in total. Default 2,000,000. */
  readonly shrinkMaxSteps?: number;
  /** Wall-clock allowance for shrinking, in ms. Default 20,000. */
  readonly shrinkMaxMs?: number;
}

export interface CheckStats {
  readonly operations: number;
  /** Locks, elections and fenced resources checked. */
  readonly objects: number;
  /** Search steps spent (not counting shrinking). */
  readonly steps: number;
  readonly elapsedMs: number;
}

export interface ValidResult {
  readonly valid: true;
  readonly stats: CheckStats;
}

export interface InvalidResult {
  readonly valid: false;
  /** The lock (or election, or the lock whose fenced resource) that failed. */
  readonly lock: string;
  readonly kind: ObjectKind;
  /** Which rule broke: a direct invariant, or 'linearizability' when found by the search. */
  readonly check: InvariantName | 'linearizability';
  readonly reason: string;
  /** The smallest failing set of operations found, in invocation order. */
  readonly window: readonly Operation[];
  /** False when shrinking ran out of budget (the window fails but may not be minimal). */
  readonly windowMinimal: boolean;
  /**
   * Other operations on the same object around the window, for the reader: those running
   * during it and each window session's next operation after it. Not needed for the
   * failure (the window fails whatever they did), but usually what one looks at next.
   */
  readonly context: readonly Operation[];
  /** For search failures: where the search got stuck on the window. */
  readonly diagnosis?: { readonly linearized: readonly Operation[]; readonly stuck: Operation; readonly state: string };
  readonly stats: CheckStats;
}

export interface UnknownResult {
  readonly valid: 'unknown';
  readonly reason: string;
  readonly stats: CheckStats;
}

export type CheckResult = ValidResult | InvalidResult | UnknownResult;

const DEFAULTS = {
  maxSteps: 5_000_000,
  maxMs: 60_000,
  shrink: true,
  shrinkMaxSteps: 2_000_000,
  shrinkMaxMs: 20_000,
};

function describeOp(op: Operation): string {
  return `#${String(op.id)} ${op.op}`;
}

const CONTEXT_LIMIT = 16;

function contextFor(objectOps: readonly Operation[], window: readonly Operation[]): Operation[] {
  if (window.length === 0) return [];
  const inWindow = new Set(window);
  const start = Math.min(...window.map((o) => o.invokeMs));
  const end = Math.max(...window.map((o) => o.completeMs ?? o.invokeMs));
  const others = objectOps.filter((o) => !inWindow.has(o)).sort((a, b) => a.invokeMs - b.invokeMs);
  // Each window session's next operation comes first: it is usually the missing piece
  // (the release that came too late, the read that followed).
  const next: Operation[] = [];
  for (const session of new Set(window.map(sessionOf).filter((x): x is string => x !== undefined))) {
    const after = others.find((o) => sessionOf(o) === session && o.invokeMs > end);
    if (after !== undefined) next.push(after);
  }
  // An operation whose answer never came counts by its recorded span only (it is open to
  // +infinity in the search, but listing every lost answer before the window is noise).
  const mid = (start + end) / 2;
  const during = others
    .filter((o) => !next.includes(o) && o.invokeMs <= end && (o.completeMs ?? o.invokeMs) >= start)
    .sort((a, b) => Math.abs(a.invokeMs - mid) - Math.abs(b.invokeMs - mid))
    .slice(0, Math.max(0, CONTEXT_LIMIT - next.length));
  return [...next, ...during].sort((a, b) => a.invokeMs - b.invokeMs);
}

/** The last few entries of a long order, for one-line reasons. */
export function abbreviateOrder(ops: readonly Operation[], keep = 6): string {
  if (ops.length === 0) return 'nothing';
  const tail = ops.slice(-keep).map(describeOp).join(', ');
  return ops.length > keep ? `… ${ops.length - keep} earlier, ${tail}` : tail;
}

function explain(diagnosis: Diagnosis | undefined, sources: readonly Operation[]): InvalidResult['diagnosis'] {
  if (diagnosis === undefined) return undefined;
  return {
    linearized: diagnosis.prefix.map((i) => sources[i]!),
    stuck: sources[diagnosis.stuck]!,
    state: diagnosis.state,
  };
}

export function check(history: readonly Operation[], options: CheckOptions = {}): CheckResult {
  validateHistory(history);
  const opts = { ...DEFAULTS, ...options };
  const started = performance.now();
  let steps = 0;
  const objects = partitionHistory(history);
  const stats = (): CheckStats => ({
    operations: history.length,
    objects: objects.length,
    steps,
    elapsedMs: performance.now() - started,
  });

  const violations = checkInvariants(history);
  if (violations.length > 0) {
    const v = violations[0]!;
    const objectOps = objects.find((o) => o.ref.kind === v.object.kind && o.ref.name === v.object.name)?.ops ?? [];
    const more = violations.length > 1 ? ` (${violations.length - 1} more invariant violation${violations.length > 2 ? 's' : ''})` : '';
    return {
      valid: false,
      lock: v.object.name,
      kind: v.object.kind,
      check: v.invariant,
      reason: `${v.invariant}: ${v.reason}${more}`,
      window: v.window,
      windowMinimal: true,
      context: contextFor(objectOps, v.window),
      stats: stats(),
    };
  }

  const deadline = started + opts.maxMs;
  const undecided: string[] = [];
  for (const object of objects) {
    const compiled = compileObject(object.ref, recordedView(object.ops));
    const outcome = compiled.run({ maxSteps: Math.max(0, opts.maxSteps - steps), deadline });
    steps += outcome.steps;
    if (outcome.verdict === 'linearizable') continue;
    if (outcome.verdict === 'budget') {
      undecided.push(`${objectKey(object.ref)} (${outcome.reason})`);
      continue;
    }
    // Not linearizable: a definite verdict, whatever the budget did elsewhere.
    const base = { valid: false as const, lock: object.ref.name, kind: object.ref.kind, check: 'linearizability' as const };
    const what = `${object.ref.kind} "${object.ref.name}"`;
    if (!opts.shrink) {
      return {
        ...base,
        reason: `no linearization of the ${compiled.sources.length} operations on ${what} exists (not shrunk)`,
        window: [...object.ops].sort((a, b) => a.invokeMs - b.invokeMs),
        windowMinimal: false,
        context: [],
        stats: stats(),
      };
    }
    const hint = outcome.stuck === undefined ? undefined : compiled.sources[outcome.stuck];
    const shrunk = shrinkFailure(
      object.ref,
      object.ops,
      { stepsPerProbe: Math.max(100_000, opts.maxSteps), maxSteps: opts.shrinkMaxSteps, deadline: performance.now() + opts.shrinkMaxMs },
      hint,
    );
    const diagnosis = explain(shrunk.diagnosis, shrunk.diagnosisSources);
    const others = object.ops.length - shrunk.window.length;
    let reason =
      `no linearization exists for the ${shrunk.window.length} operation${shrunk.window.length === 1 ? '' : 's'} below on ${what}, ` +
      `whichever of the other ${others} operations on it took effect`;
    if (diagnosis !== undefined) {
      reason +=
        `; the longest consistent order found is [${abbreviateOrder(diagnosis.linearized)}], ` +
        `after which ${describeOp(diagnosis.stuck)} cannot take effect (${diagnosis.state})`;
    }
    if (!shrunk.minimal) reason += ' (shrink budget ran out: window may not be minimal)';
    return {
      ...base,
      reason,
      window: shrunk.window,
      windowMinimal: shrunk.minimal,
      context: contextFor(object.ops, shrunk.window),
      ...(diagnosis === undefined ? {} : { diagnosis }),
      stats: stats(),
    };
  }
  if (undecided.length > 0) {
    return { valid: 'unknown', reason: `budget exceeded before a verdict on ${undecided.join(', ')}`, stats: stats() };
  }
  return { valid: true, stats: stats() };
}
