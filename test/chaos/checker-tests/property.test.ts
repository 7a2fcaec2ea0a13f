// Property tests: histories of a correct service always pass; histories with a planted
// bug always fail, and the reported window fails on its own.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { check, formatReport, type Operation } from '../checker/index.js';
import { generateHistory } from './generate.js';

type Mutation = (ops: Operation[], pick: (n: number) => number) => Operation[] | undefined;

const tokenOfGrant = (op: Operation): number | undefined => {
  if (op.outcome !== 'ok' || op.result === undefined) return undefined;
  if (op.op === 'acquire' || op.op === 'campaign') return op.result.token;
  if (op.op === 'tryAcquire' && op.result.granted) return op.result.token;
  return undefined;
};
const lockOf = (op: Operation): string | undefined => ('lock' in op.args ? op.args.lock : undefined);
const isLockGrant = (op: Operation): boolean => (op.op === 'acquire' || op.op === 'tryAcquire') && tokenOfGrant(op) !== undefined;

function replaceAt(ops: Operation[], i: number, op: Operation): Operation[] {
  return ops.map((o, j) => (j === i ? op : o));
}

/** Mutations that make any sequential history of a correct service non-linearizable. */
const MUTATIONS: Record<string, Mutation> = {
  // A second exclusive grant while some grant is still held (it is only freed later).
  'extra overlapping grant': (ops, pick) => {
    const grants = ops.filter(isLockGrant);
    if (grants.length === 0) return undefined;
    const g = grants[pick(grants.length)]!;
    const maxToken = Math.max(...ops.map((o) => tokenOfGrant(o) ?? 0));
    const intruder = {
      id: 'intruder',
      process: 'p-intruder',
      session: 'intruder',
      op: 'acquire',
      args: { lock: lockOf(g)!, mode: 'exclusive' },
      invokeMs: g.completeMs! + 2,
      completeMs: g.completeMs! + 4,
      outcome: 'ok',
      result: { token: maxToken + 100 },
    } as Operation;
    return [...ops, intruder];
  },
  // Two grants on one lock in real-time order exchange their tokens.
  'tokens swapped': (ops, pick) => {
    const grants = ops.filter(isLockGrant);
    const pairs: [Operation, Operation][] = [];
    for (const a of grants)
      for (const b of grants)
        if (lockOf(a) === lockOf(b) && a.completeMs! < b.invokeMs && tokenOfGrant(a) !== tokenOfGrant(b)) pairs.push([a, b]);
    if (pairs.length === 0) return undefined;
    const [a, b] = pairs[pick(pairs.length)]!;
    const withToken = (op: Operation, token: number): Operation =>
      ({ ...op, result: op.op === 'tryAcquire' ? { granted: true, token } : { token } }) as Operation;
    return ops.map((o) => (o === a ? withToken(a, tokenOfGrant(b)!) : o === b ? withToken(b, tokenOfGrant(a)!) : o));
  },
  // A read reports a holder set the lock never had at that moment.
  'read altered': (ops, pick) => {
    const reads = ops.map((o, i) => [o, i] as const).filter(([o]) => o.op === 'read' && o.outcome === 'ok');
    if (reads.length === 0) return undefined;
    const [r, i] = reads[pick(reads.length)]!;
    if (r.op !== 'read') return undefined;
    const holders = r.result!.holders;
    const altered = holders.length > 0 ? holders.slice(1) : [{ session: 'ghost', token: 1 }];
    return replaceAt(ops, i, { ...r, result: { holders: altered } });
  },
  // A release is acknowledged for a session that does not hold the lock.
  'release by a non-holder': (ops, pick) => {
    const releases = ops.map((o, i) => [o, i] as const).filter(([o]) => o.op === 'release' && o.outcome === 'ok');
    if (releases.length === 0) return undefined;
    const [r, i] = releases[pick(releases.length)]!;
    return replaceAt(ops, i, { ...r, session: 'ghost', process: 'p-ghost' });
  },
  // The fenced resource accepts a token below its fence.
  'fence accepts a lower token': (ops, pick) => {
    const candidates: [number, number][] = [];
    const fence = new Map<string, number>();
    ops.forEach((o, i) => {
      if (o.op !== 'fencedWrite' || o.outcome !== 'ok' || o.result?.rejected === true) return;
      const f = fence.get(o.args.lock);
      if (f !== undefined && f > 1) candidates.push([i, f - 1]);
      fence.set(o.args.lock, Math.max(f ?? 0, o.args.token));
    });
    if (candidates.length === 0) return undefined;
    const [i, token] = candidates[pick(candidates.length)]!;
    const w = ops[i]!;
    if (w.op !== 'fencedWrite') return undefined;
    return replaceAt(ops, i, { ...w, args: { ...w.args, token } });
  },
};

const seed = fc.integer({ min: 1, max: 0x7fffffff });

describe('histories of a correct service are linearizable', () => {
  it('sequential histories', () => {
    fc.assert(
      fc.property(seed, fc.integer({ min: 1, max: 120 }), (s, n) => {
        const ops = generateHistory({ seed: s, ops: n, withElection: true, withFence: true });
        const result = check(ops);
        assert.equal(result.valid, true, formatReport(ops, result));
      }),
      { numRuns: 150 },
    );
  });

  it('concurrent histories with lost answers', () => {
    fc.assert(
      fc.property(seed, fc.integer({ min: 1, max: 150 }), fc.integer({ min: 3, max: 40 }), fc.double({ min: 0, max: 0.2, noNaN: true }), (s, n, spread, unknownRate) => {
        const ops = generateHistory({ seed: s, ops: n, spreadMs: spread, unknownRate, sessions: 5, withElection: true, withFence: true });
        const result = check(ops);
        assert.equal(result.valid, true, formatReport(ops, result));
      }),
      { numRuns: 150 },
    );
  });
});

describe('histories with a planted bug are not', () => {
  for (const [name, mutate] of Object.entries(MUTATIONS)) {
    it(name, () => {
      let applied = 0;
      fc.assert(
        fc.property(seed, fc.integer({ min: 5, max: 100 }), fc.integer({ min: 0, max: 1_000_000 }), (s, n, choice) => {
          const ops = generateHistory({ seed: s, ops: n, withElection: true, withFence: true });
          const mutated = mutate(ops, (k) => choice % k);
          fc.pre(mutated !== undefined);
          applied++;
          const result = check(mutated!);
          assert.equal(result.valid, false, `not flagged:\n${formatReport(mutated!, result)}`);
          if (result.valid !== false) return;
          // The window is a failing history by itself.
          assert.equal(check(result.window).valid, false, `window passes alone:\n${formatReport(mutated!, result)}`);
        }),
        { numRuns: 80 },
      );
      assert.ok(applied > 20, `mutation applied only ${applied} times`);
    });
  }
});
