// The search, its pruning (token gates, dead/redundant operations, doomed states,
// canonical states) and the direct invariants, against a brute-force oracle: on tiny
// random histories, enumerate every order that respects real time, every subset of the
// unknown operations, and run the model. Any disagreement is a bug in the fast path.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  check,
  compileObject,
  fenceModel,
  formatOperations,
  lockModel,
  partitionHistory,
  recordedView,
  toFenceModelOp,
  toLockModelOp,
  type Model,
  type Operation,
} from '../checker/index.js';

interface OracleOp<O> {
  readonly op: O;
  readonly invokeMs: number;
  readonly returnMs: number;
  readonly optional: boolean;
}

/** Exhaustive linearizability: memoised on (remaining set, state) only for speed. */
function bruteForce<S, O>(model: Model<S, O>, ops: readonly OracleOp<O>[]): boolean {
  const memo = new Set<string>();
  const go = (state: S, remaining: number): boolean => {
    let anyDefinite = false;
    for (let i = 0; i < ops.length; i++) if (remaining & (1 << i) && !ops[i]!.optional) anyDefinite = true;
    if (!anyDefinite) return true;
    const key = `${remaining}|${model.key(state)}`;
    if (memo.has(key)) return false;
    memo.add(key);
    for (let i = 0; i < ops.length; i++) {
      if (!(remaining & (1 << i))) continue;
      const op = ops[i]!;
      if (op.optional && go(state, remaining & ~(1 << i))) return true; // it never happened
      // op may come next only if no remaining definite op had to finish before it began.
      let blocked = false;
      for (let j = 0; j < ops.length; j++) {
        if (j !== i && remaining & (1 << j) && !ops[j]!.optional && ops[j]!.returnMs < op.invokeMs) blocked = true;
      }
      if (blocked) continue;
      const r = model.step(state, op.op);
      if (r.ok && go(r.state, remaining & ~(1 << i))) return true;
    }
    return false;
  };
  return go(model.initial, (1 << ops.length) - 1);
}

/** The documented semantics: fail dropped, unknown optional with no answer, ok definite. */
function oracleOps<O>(history: readonly Operation[], convert: (op: Operation, useResult: boolean) => O | undefined): OracleOp<O>[] {
  const out: OracleOp<O>[] = [];
  for (const h of history) {
    if (h.outcome === 'fail') continue;
    const known = h.outcome === 'ok';
    const m = convert(h, known);
    if (m === undefined) continue;
    out.push({ op: m, invokeMs: h.invokeMs, returnMs: known ? h.completeMs! : Infinity, optional: !known });
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Tiny random histories over one lock (or one election, or one fenced resource)

const SESSIONS = ['s1', 's2', 's3'] as const;
const session = fc.constantFrom(...SESSIONS);
const token = fc.integer({ min: 1, max: 6 });
const outcome = fc.constantFrom('ok', 'ok', 'ok', 'ok', 'ok', 'unknown', 'unknown', 'fail');
const window = fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 6 }));
const mode = fc.constantFrom('exclusive', 'exclusive', 'shared');

type Draft = Omit<Operation, 'id' | 'process' | 'invokeMs' | 'completeMs'> & { session?: string };

const lockOp: fc.Arbitrary<Draft> = fc.oneof(
  fc.record({ session, m: mode, t: token, outcome }).map(
    ({ session, m, t, outcome }) => ({ session, op: 'acquire', args: { lock: 'L', mode: m, limit: 2 }, outcome, result: { token: t } }) as Draft,
  ),
  fc.record({ session, m: mode, t: fc.option(token), outcome }).map(
    ({ session, m, t, outcome }) =>
      ({ session, op: 'tryAcquire', args: { lock: 'L', mode: m, limit: 2 }, outcome, result: t === null ? { granted: false } : { granted: true, token: t } }) as Draft,
  ),
  fc.record({ session, t: token, outcome }).map(({ session, t, outcome }) => ({ session, op: 'release', args: { lock: 'L', token: t }, outcome, result: {} }) as Draft),
  fc.record({ holders: fc.uniqueArray(fc.tuple(session, token), { maxLength: 2, selector: ([s]) => s }), outcome }).map(
    ({ holders, outcome }) => ({ op: 'read', args: { lock: 'L' }, outcome, result: { holders: holders.map(([s, t]) => ({ session: s, token: t })) } }) as Draft,
  ),
  fc.record({ session, outcome }).map(({ session, outcome }) => ({ op: 'sessionExpired', args: { session }, outcome, result: {} }) as Draft),
);

const electionOp: fc.Arbitrary<Draft> = fc.oneof(
  fc.record({ session, t: token, v: fc.constantFrom('a', 'b'), outcome }).map(
    ({ session, t, v, outcome }) => ({ session, op: 'campaign', args: { election: 'E', value: v }, outcome, result: { token: t } }) as Draft,
  ),
  fc.record({ session, v: fc.constantFrom('a', 'b'), outcome }).map(({ session, v, outcome }) => ({ session, op: 'proclaim', args: { election: 'E', value: v }, outcome, result: {} }) as Draft),
  fc.record({ session, outcome }).map(({ session, outcome }) => ({ session, op: 'resign', args: { election: 'E' }, outcome, result: {} }) as Draft),
  fc.record({ leader: fc.option(fc.tuple(session, token, fc.constantFrom('a', 'b'))), outcome }).map(
    ({ leader, outcome }) =>
      ({ op: 'leader', args: { election: 'E' }, outcome, result: { leader: leader === null ? null : { session: leader[0], token: leader[1], value: leader[2] } } }) as Draft,
  ),
  fc.record({ session, outcome }).map(({ session, outcome }) => ({ op: 'sessionExpired', args: { session }, outcome, result: {} }) as Draft),
);

const fenceOp: fc.Arbitrary<Draft> = fc.record({ session, t: token, rejectedBy: fc.option(token), outcome }).map(
  ({ session, t, rejectedBy, outcome }) =>
    ({ session, op: 'fencedWrite', args: { lock: 'L', token: t, value: t }, outcome, result: rejectedBy === null ? {} : { rejected: true, fence: rejectedBy } }) as Draft,
);

function toHistory(drafts: readonly (readonly [Draft, readonly [number, number]])[]): Operation[] {
  return drafts.map(([d, [start, length]], i) => {
    const { result, ...rest } = d as Draft & { result?: unknown };
    return {
      ...rest,
      id: i + 1,
      process: d.session ?? 'observer',
      invokeMs: start,
      completeMs: d.outcome === 'unknown' ? null : start + length,
      ...(d.outcome === 'ok' ? { result } : {}),
    } as Operation;
  });
}

const history = (op: fc.Arbitrary<Draft>, maxLength: number): fc.Arbitrary<Operation[]> =>
  fc.array(fc.tuple(op, window), { minLength: 1, maxLength }).map(toHistory);

/**
 * The one rule the model cannot express: shared grants may share a token only when one
 * log entry granted both, i.e. at one instant inside both windows. The token-order
 * invariant enforces it; the model alone lets such grants be linearized back to back.
 */
function sameTokenAtDifferentInstants(ops: readonly Operation[]): boolean {
  const grants = ops.filter(
    (o) => o.outcome === 'ok' && (o.op === 'acquire' || (o.op === 'tryAcquire' && o.result!.granted)),
  );
  const tokenOf = (o: Operation): number => (o.result as { token: number }).token;
  return grants.some((a) => grants.some((b) => a !== b && a.session !== b.session && tokenOf(a) === tokenOf(b) && a.completeMs! < b.invokeMs));
}

function compare(ops: Operation[], modelVerdict: boolean, tally: { valid: number; invalid: number }): void {
  const outsideModel = sameTokenAtDifferentInstants(ops);
  const oracle = modelVerdict && !outsideModel;
  oracle ? tally.valid++ : tally.invalid++;
  const context = () => `oracle says ${oracle ? 'linearizable' : 'not linearizable'}\n${formatOperations(ops)}`;
  // The search alone (it implements the model only).
  if (!outsideModel) for (const object of partitionHistory(ops)) {
    const outcome = compileObject(object.ref, recordedView(object.ops)).run({ maxSteps: 1_000_000, deadline: Infinity });
    assert.equal(outcome.verdict, oracle ? 'linearizable' : 'not-linearizable', `search disagrees: ${context()}`);
  }
  // The whole checker: invariants must never flag a linearizable history.
  const result = check(ops);
  assert.equal(result.valid, oracle, `check disagrees (${result.valid === false ? result.reason : ''}): ${context()}`);
  if (result.valid === false) {
    assert.equal(check(result.window).valid, false, `the window passes alone: ${context()}`);
  }
}

describe('agreement with a brute-force oracle', () => {
  it('random histories of one lock', () => {
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(history(lockOp, 7), (ops) => {
        compare(ops, bruteForce(lockModel, oracleOps(ops, toLockModelOp)), tally);
      }),
      { numRuns: 1500 },
    );
    assert.ok(tally.valid > 150 && tally.invalid > 150, `unbalanced sample: ${JSON.stringify(tally)}`);
  });

  it('random histories of one election', () => {
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(history(electionOp, 7), (ops) => {
        compare(ops, bruteForce(lockModel, oracleOps(ops, toLockModelOp)), tally);
      }),
      { numRuns: 800 },
    );
    assert.ok(tally.valid > 80 && tally.invalid > 80, `unbalanced sample: ${JSON.stringify(tally)}`);
  });

  it('random histories of one fenced resource', () => {
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(history(fenceOp, 7), (ops) => {
        compare(ops, bruteForce(fenceModel, oracleOps(ops, toFenceModelOp)), tally);
      }),
      { numRuns: 800 },
    );
    assert.ok(tally.valid > 80 && tally.invalid > 80, `unbalanced sample: ${JSON.stringify(tally)}`);
  });
});
