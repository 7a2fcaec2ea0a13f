// Linearizability search: Wing & Gong's algorithm with Lowe's memoisation, in the
// iterative form Porcupine uses.
//
// The history is a doubly linked list of call and return events sorted by time. We scan it
// from the head: at a call we try to linearize that operation now (the model accepts it
// and the pair (set of operations handled so far, model state) was not explored before),
// then lift its call and return out of the list and start again from the head. Reaching a
// return means that operation's window closes without it being linearized: backtrack to
// the last choice and try the next call after it. An empty list means success.
//
// Two extensions beyond Porcupine:
//  - optional operations (outcome unknown, or relaxed while shrinking) may never happen.
//    With return time +infinity, reaching such a return means every definite operation is
//    linearized: success, the remaining optional ones did not happen. With a finite
//    return, reaching it forces "it did not happen": the operation is dropped as a
//    recorded choice, undone when the search backtracks past it.
//  - counters and gates: a definite operation may bump counters when linearized, and any
//    operation may require counters to have reached a minimum first. The caller uses this
//    to encode orders it knows a priori (fencing tokens fix the order of grants), which
//    prunes branches the model would only reject much later. Counters only count definite
//    operations, so they are a function of the handled set and memoisation stays sound.
//
// And reductions the model may offer, which keep the search exact (the brute-force
// oracle test holds them to that). They exist because lost answers are what make chaos
// histories expensive: every unknown operation stays a live option to the end.
//  - dead operations: one that can never take effect from here on. An optional one is
//    dropped at once, so branches differing only in when it was given up merge in the
//    memo; a definite one ends the branch.
//  - redundant operations: optional ones that may be assumed not to have happened,
//    because anything they could explain needs no explaining (see the lock model).
//  - doomed states: some pending definite operation can never take effect any more; the
//    branch ends now rather than when the search reaches that operation's return.
//  - canonical states: the model forgets what no pending operation can observe (e.g. the
//    expiry of a session nobody acts for any more), again so equivalent branches merge.
//  The model learns what is pending through tag counts (PendingView).
//
// Dropping an operation never changes what earlier calls in the list could do, so after
// a drop the scan continues where it was instead of restarting at the head.

import { mulberry32 } from '../../support/prng.js';
import type { Model, PendingView } from './model.js';

export interface SearchOp<O> {
  readonly op: O;
  readonly invokeMs: number;
  /** Latest possible linearization time; Infinity when unbounded. */
  readonly returnMs: number;
  /** May be left out of the linearization altogether (it did not take effect). */
  readonly optional: boolean;
  /** Counters incremented when this operation is linearized (ignored on optional operations). */
  readonly bumps?: readonly number[];
  /** [counter, minimum] pairs that must hold before this operation may be linearized. */
  readonly needs?: readonly (readonly [number, number])[];
}

export interface SearchBudget {
  /** Give up after this many steps (one step = one list entry visited). */
  readonly maxSteps: number;
  /** Give up when performance.now() passes this. */
  readonly deadline: number;
}

export interface Diagnosis {
  /** Indexes of the longest sequence of operations the search managed to linearize. */
  readonly prefix: readonly number[];
  /** The operation whose window closed right after that prefix. */
  readonly stuck: number;
  /** The model state after the prefix, described for people. */
  readonly state: string;
}

export type SearchOutcome =
  | { readonly verdict: 'linearizable'; readonly steps: number; readonly order: readonly number[] }
  | {
      readonly verdict: 'not-linearizable';
      readonly steps: number;
      /** The definite operation at which the deepest branch died, when one did (a hint for shrinking). */
      readonly stuck?: number;
      readonly diagnosis?: Diagnosis;
    }
  | { readonly verdict: 'budget'; readonly steps: number; readonly reason: string };

export interface SearchOptions {
  /** Record the deepest partial linearization, for the report (costs a little time). */
  readonly diagnose?: boolean;
}

export function searchLinearization<S, O>(
  model: Model<S, O>,
  ops: readonly SearchOp<O>[],
  budget: SearchBudget,
  options: SearchOptions = {},
): SearchOutcome {
  const n = ops.length;
  if (n === 0) return { verdict: 'linearizable', steps: 0, order: [] };

  // Node 0 is the head of a circular list; op i has call node 2i+1 and return node 2i+2.
  const nodes: number[] = [];
  for (let i = 0; i < n; i++) nodes.push(2 * i + 1, 2 * i + 2);
  const timeOf = (node: number): number => {
    const op = ops[(node - 1) >> 1]!;
    return node & 1 ? op.invokeMs : op.returnMs;
  };
  // Equal times: calls first, so touching intervals count as concurrent (never a false alarm).
  nodes.sort((a, b) => timeOf(a) - timeOf(b) || (b & 1) - (a & 1) || a - b);
  const next = new Int32Array(2 * n + 1);
  const prev = new Int32Array(2 * n + 1);
  let last = 0;
  for (const node of nodes) {
    next[last] = node;
    prev[node] = last;
    last = node;
  }
  next[last] = 0;
  prev[0] = last;

  const lift = (i: number): void => {
    const call = 2 * i + 1;
    const ret = call + 1;
    next[prev[call]!] = next[call]!;
    prev[next[call]!] = prev[call]!;
    next[prev[ret]!] = next[ret]!;
    prev[next[ret]!] = prev[ret]!;
  };
  // Dancing links: undo in the reverse order of lift.
  const unlift = (i: number): void => {
    const call = 2 * i + 1;
    const ret = call + 1;
    next[prev[ret]!] = ret;
    prev[next[ret]!] = ret;
    next[prev[call]!] = call;
    prev[next[call]!] = call;
  };

  // Zobrist hashing of the handled set: 96 random bits per operation, XORed in and out,
  // the same on every run so that a search is reproducible.
  // The memo keys on the hash and the state key; a false merge would need a 96-bit
  // collision, far less likely than a hardware fault over any realistic search.
  const rand = mulberry32(0x9e3779b9 ^ n);
  const z1 = new Int32Array(n);
  const z2 = new Int32Array(n);
  const z3 = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    z1[i] = rand();
    z2[i] = rand();
    z3[i] = rand();
  }
  let h1 = 0;
  let h2 = 0;
  let h3 = 0;
  const toggle = (i: number): void => {
    h1 ^= z1[i]!;
    h2 ^= z2[i]!;
    h3 ^= z3[i]!;
  };
  const memo = new Set<string>();
  const remember = (stateKey: string): boolean => {
    const k = `${h1},${h2},${h3},${stateKey}`;
    if (memo.has(k)) return false;
    memo.add(k);
    return true;
  };

  let counterCount = 0;
  for (const op of ops) {
    for (const c of op.bumps ?? []) counterCount = Math.max(counterCount, c + 1);
    for (const [c] of op.needs ?? []) counterCount = Math.max(counterCount, c + 1);
  }
  const counters = new Int32Array(counterCount);
  const gatesOpen = (op: SearchOp<O>): boolean => {
    if (op.needs === undefined) return true;
    for (const [c, min] of op.needs) if (counters[c]! < min) return false;
    return true;
  };
  const bump = (op: SearchOp<O>, by: 1 | -1): void => {
    if (op.optional || op.bumps === undefined) return;
    for (const c of op.bumps) counters[c] = counters[c]! + by;
  };

  // Pending (neither linearized nor dropped) operations per model tag.
  const tagIds = new Map<string, number>();
  const opTags: Int32Array[] = ops.map((op) => {
    const tags = model.tags === undefined ? [] : model.tags(op.op);
    return Int32Array.from(tags, (tag) => {
      let t = tagIds.get(tag);
      if (t === undefined) {
        t = tagIds.size;
        tagIds.set(tag, t);
      }
      return t;
    });
  });
  const pendingTags = new Int32Array(tagIds.size);
  const pendingDefiniteTags = new Int32Array(tagIds.size);
  ops.forEach((op, i) => {
    for (const t of opTags[i]!) {
      pendingTags[t]!++;
      if (!op.optional) pendingDefiniteTags[t]!++;
    }
  });
  const pending: PendingView = {
    count: (tag) => {
      const t = tagIds.get(tag);
      return t === undefined ? 0 : pendingTags[t]!;
    },
    countDefinite: (tag) => {
      const t = tagIds.get(tag);
      return t === undefined ? 0 : pendingDefiniteTags[t]!;
    },
  };
  const handle = (i: number, by: 1 | -1): void => {
    toggle(i);
    const definite = !ops[i]!.optional;
    for (const t of opTags[i]!) {
      pendingTags[t] = pendingTags[t]! - by;
      if (definite) pendingDefiniteTags[t] = pendingDefiniteTags[t]! - by;
    }
  };
  const doomed = (s: S): boolean => model.isDoomed !== undefined && model.isDoomed(s, pending);
  const canonical = (s: S): S => (model.canonical === undefined ? s : model.canonical(s, pending));

  // The choice stack: which operation, whether it was dropped rather than linearized, and
  // the state before it.
  const frameOp = new Int32Array(n);
  const frameDropped = new Uint8Array(n);
  const frameState: S[] = new Array<S>(n);
  let depth = 0;
  let linearizedCount = 0;
  let state = model.initial;
  let steps = 0;
  let best: Diagnosis | undefined;
  let bestDepth = -1;
  let bestStuck = -1;
  // The deepest point at which a definite operation could not take effect.
  const noteStuck = (i: number): void => {
    if (linearizedCount <= bestDepth) return;
    bestDepth = linearizedCount;
    bestStuck = i;
    if (options.diagnose) best = { prefix: currentOrder(), stuck: i, state: model.describe(state) };
  };

  const currentOrder = (): number[] => {
    const order: number[] = [];
    for (let d = 0; d < depth; d++) if (!frameDropped[d]) order.push(frameOp[d]!);
    return order;
  };

  // Drop optional op i (it did not happen): a forced choice, recorded so that backtracking
  // can undo it. Returns false when the resulting branch is lost or was explored before.
  const drop = (i: number): boolean => {
    handle(i, 1);
    const dropped = canonical(state);
    if (doomed(dropped) || !remember(model.key(dropped))) {
      handle(i, -1);
      return false;
    }
    frameOp[depth] = i;
    frameDropped[depth] = 1;
    frameState[depth] = state;
    depth++;
    state = dropped;
    lift(i);
    return true;
  };

  // A definite operation dead from the start (a release by a session that never holds,
  // a read of a holder that never was) settles the verdict without any search.
  if (model.isDead !== undefined) {
    for (let i = 0; i < n; i++) {
      const op = ops[i]!;
      if (op.optional || !model.isDead(state, op.op, pending) || (gatesOpen(op) && model.step(state, op.op).ok)) continue;
      if (!options.diagnose) return { verdict: 'not-linearizable', steps, stuck: i };
      return { verdict: 'not-linearizable', steps, stuck: i, diagnosis: { prefix: [], stuck: i, state: model.describe(state) } };
    }
  }

  let entry = next[0]!;
  for (;;) {
    if (entry === 0) return { verdict: 'linearizable', steps, order: currentOrder() };
    steps++;
    if (steps > budget.maxSteps) return { verdict: 'budget', steps, reason: `step budget of ${budget.maxSteps} exceeded` };
    if ((steps & 1023) === 0 && performance.now() > budget.deadline) return { verdict: 'budget', steps, reason: 'time budget exceeded' };

    const i = (entry - 1) >> 1;
    const op = ops[i]!;
    const call = 2 * i + 1;
    const ret = call + 1;
    let backtrack = false;
    if (entry === call) {
      // A call: try to linearize op i here.
      const dead = model.isDead !== undefined && model.isDead(state, op.op, pending);
      if (op.optional && (dead || (model.isRedundant !== undefined && model.isRedundant(state, op.op, pending)))) {
        // Dropping changes nothing earlier calls depend on, so the scan goes on from here
        // instead of restarting at the head.
        const after = next[call] === ret ? next[ret]! : next[call]!;
        if (drop(i)) {
          entry = after;
          continue;
        }
        backtrack = true; // this level was explored before with op i given up
      } else {
        let accepted = false;
        if (gatesOpen(op)) {
          const r = model.step(state, op.op);
          accepted = r.ok;
          if (r.ok) {
            handle(i, 1);
            const after = canonical(r.state);
            if (!doomed(after) && remember(model.key(after))) {
              frameOp[depth] = i;
              frameDropped[depth] = 0;
              frameState[depth] = state;
              depth++;
              linearizedCount++;
              bump(op, 1);
              state = after;
              lift(i);
              entry = next[0]!;
              continue;
            }
            handle(i, -1);
          }
        }
        if (dead && !accepted) {
          // A definite operation that can never take effect: this branch is lost.
          noteStuck(i);
          backtrack = true;
        } else {
          entry = next[call]!;
          continue;
        }
      }
    } else if (op.optional) {
      // A return of an optional operation: it did not happen.
      if (op.returnMs === Infinity) {
        // Only optional operations remain: none of them happened.
        return { verdict: 'linearizable', steps, order: currentOrder() };
      }
      if (drop(i)) {
        entry = next[ret]!;
        continue;
      }
      backtrack = true;
    } else {
      // A definite operation's window closes unlinearized.
      noteStuck(i);
      backtrack = true;
    }

    if (backtrack) {
      // Undo choices until one leaves a later call to try. A dropped operation was the
      // last alternative at its level, so undoing it backtracks further.
      for (;;) {
        if (depth === 0) {
          const stuck = bestStuck >= 0 ? { stuck: bestStuck } : {};
          return best === undefined ? { verdict: 'not-linearizable', steps, ...stuck } : { verdict: 'not-linearizable', steps, ...stuck, diagnosis: best };
        }
        depth--;
        const j = frameOp[depth]!;
        state = frameState[depth]!;
        handle(j, -1);
        unlift(j);
        if (frameDropped[depth]) continue;
        linearizedCount--;
        bump(ops[j]!, -1);
        entry = next[2 * j + 1]!;
        break;
      }
    }
  }
}
