// Shrinking a non-linearizable sub-history to a small window that still fails.
//
// Naively deleting operations would invent failures (delete a release and the next grant
// "overlaps"). Instead, an operation taken out of the window is *relaxed*: it may or may
// not have happened inside its recorded window. Relaxing only adds possibilities, so if
// the history still fails, the failure is carried by the operations left in the window,
// whatever the others did. The window is therefore an honest explanation: these
// acknowledged operations cannot all have happened as recorded.
//
// Two stages:
//  1. Cut the history at an instant T at which it is already non-linearizable
//     (operations invoked after T are dropped; those still in flight at T may or may not
//     have happened): the completion of the operation the search got stuck on if that
//     works, else the first such instant — failing at T implies failing at every later T,
//     so binary search.
//  2. Delta debugging (Zeller's ddmin, complement removal) over the operations that
//     completed by T, with the predicate "still fails when the rest is relaxed".

import type { Operation } from './history.js';
import { compileObject, type ObjectRef, type ViewOp } from './partition.js';
import type { Diagnosis, SearchBudget, SearchOutcome } from './search.js';

export interface ShrinkBudget {
  /** Steps allowed for each probe search. */
  readonly stepsPerProbe: number;
  /** Stop shrinking (keeping the best window so far) after this many steps in total. */
  readonly maxSteps: number;
  /** Stop shrinking at this performance.now() time. */
  readonly deadline: number;
}

export interface ShrinkResult {
  /** The failing window, in invocation order. */
  readonly window: readonly Operation[];
  /** False when the budget ran out before the window was 1-minimal. */
  readonly minimal: boolean;
  /** The history was cut here: nothing after it is needed for the failure. */
  readonly cutoffMs: number;
  /** Where the search got stuck on the window, for the report. */
  readonly diagnosis: Diagnosis | undefined;
  /** The window's operations as the search indexed them (diagnosis indexes into this). */
  readonly diagnosisSources: readonly Operation[];
  readonly steps: number;
}

/**
 * The history as known at time `t`: operations invoked later are gone; those still
 * running at `t` (or whose answer was lost) may or may not have happened.
 */
export function truncatedView(ops: readonly Operation[], t: number): ViewOp[] {
  return ops
    .filter((op) => op.invokeMs <= t)
    .map((source) => ({ source, treatment: source.outcome === 'ok' && source.completeMs! <= t ? 'recorded' : 'open' }));
}

/**
 * The view in which a window is judged: `window` as recorded, every other operation of
 * the truncated history relaxed (it may or may not have happened). The window fails iff
 * a search on this view fails.
 */
export function windowView(ops: readonly Operation[], cutoffMs: number, window: readonly Operation[]): ViewOp[] {
  const keep = new Set(window);
  return truncatedView(ops, cutoffMs).map((v) =>
    v.treatment === 'recorded' && !keep.has(v.source) ? { source: v.source, treatment: 'relaxed' } : v,
  );
}

/**
 * `hint`: an operation the full search got stuck on, if known. It is likely part of the
 * failure, so the cut-off at its completion is tried first and ddmin removes it last —
 * removals that keep the culprit fail fast, removals that drop it need a full search.
 */
export function shrinkFailure(ref: ObjectRef, ops: readonly Operation[], budget: ShrinkBudget, hint?: Operation): ShrinkResult {
  let steps = 0;
  let exhausted = false;
  // A probe that runs out of budget counts as "does not fail": we then keep the larger,
  // known-failing window, which is the honest choice.
  const fails = (view: ViewOp[]): boolean => {
    const remaining = budget.maxSteps - steps;
    if (remaining <= 0 || performance.now() > budget.deadline) {
      exhausted = true;
      return false;
    }
    const b: SearchBudget = { maxSteps: Math.min(budget.stepsPerProbe, remaining), deadline: budget.deadline };
    const outcome: SearchOutcome = compileObject(ref, view).run(b);
    steps += outcome.steps;
    if (outcome.verdict === 'budget') exhausted = true;
    return outcome.verdict === 'not-linearizable';
  };

  // Stage 1: earliest cut-off.
  const truncated = (t: number): ViewOp[] => truncatedView(ops, t);
  const cutoffs = [...new Set(ops.filter((o) => o.outcome === 'ok').map((o) => o.completeMs!))].sort((a, b) => a - b);
  let lo = 0;
  let hi = cutoffs.length - 1; // the whole history is known to fail
  if (hint !== undefined && hint.outcome === 'ok') {
    // Usually the failure shows as soon as the stuck operation completes. Then take that
    // cut-off as it is: the earliest one would mostly save background, while finding it
    // costs full searches of the (linearizable) earlier prefixes.
    const at = cutoffs.indexOf(hint.completeMs!);
    if (at === hi || (at >= 0 && at < hi && fails(truncated(cutoffs[at]!)))) lo = hi = at;
    else if (at >= 0 && at < hi) lo = at + 1;
  }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fails(truncated(cutoffs[mid]!))) hi = mid;
    else lo = mid + 1;
  }
  const cutoffMs = cutoffs[hi] ?? Infinity;
  const prefix = truncated(cutoffMs);
  const candidates = prefix.filter((v) => v.treatment === 'recorded').map((v) => v.source);

  const viewWith = (kept: readonly Operation[]): ViewOp[] => windowView(ops, cutoffMs, kept);

  // Stage 2: ddmin by complements.
  let window: Operation[] = candidates;
  let granularity = 2;
  while (window.length >= 2 && !exhausted) {
    const chunkSize = Math.ceil(window.length / granularity);
    const starts: number[] = [];
    for (let start = 0; start < window.length; start += chunkSize) starts.push(start);
    const hinted = hint === undefined ? -1 : window.indexOf(hint);
    if (hinted >= 0) {
      const mine = Math.floor(hinted / chunkSize) * chunkSize;
      starts.splice(starts.indexOf(mine), 1);
      starts.push(mine);
    }
    let reduced = false;
    for (const start of starts) {
      if (exhausted) break;
      const complement = [...window.slice(0, start), ...window.slice(start + chunkSize)];
      if (complement.length > 0 && fails(viewWith(complement))) {
        window = complement;
        granularity = Math.max(granularity - 1, 2);
        reduced = true;
        break;
      }
    }
    if (reduced) continue;
    if (granularity >= window.length) break;
    granularity = Math.min(granularity * 2, window.length);
  }

  // One last search on the final window, for the diagnosis shown in the report. It runs
  // even if the shrink budget is spent: a small window is cheap to search.
  const finalView = viewWith(window);
  const compiled = compileObject(ref, finalView);
  const last = compiled.run({ maxSteps: budget.stepsPerProbe, deadline: performance.now() + 5_000 }, { diagnose: true });
  steps += last.steps;
  const diagnosis = last.verdict === 'not-linearizable' ? last.diagnosis : undefined;

  return {
    window: [...window].sort((a, b) => a.invokeMs - b.invokeMs),
    minimal: !exhausted,
    cutoffMs,
    diagnosis,
    diagnosisSources: compiled.sources,
    steps,
  };
}
