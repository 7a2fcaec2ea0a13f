// Shrinking: the window fails, is 1-minimal (relaxing any one of its operations makes the
// rest linearizable), and pins the bug rather than an artefact of deleting operations.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { check, compileObject, partitionHistory, shrinkFailure, windowView, type ObjectRef, type Operation } from '../checker/index.js';
import { HistoryBuilder } from './builder.js';
import { generateContendedHistory } from './generate.js';

const BUDGET = { stepsPerProbe: 1_000_000, maxSteps: 5_000_000, deadline: Number.POSITIVE_INFINITY };
const SEARCH = { maxSteps: 1_000_000, deadline: Number.POSITIVE_INFINITY };

function verdictOf(ref: ObjectRef, ops: readonly Operation[], cutoffMs: number, window: readonly Operation[]): string {
  return compileObject(ref, windowView(ops, cutoffMs, window)).run(SEARCH).verdict;
}

/** Reads taken while their one holder certainly held: acknowledged before, released after. */
function readsInsideAHold(ops: readonly Operation[]): Operation[] {
  return ops.filter((r) => {
    if (r.op !== 'read' || r.outcome !== 'ok' || r.result!.holders.length !== 1) return false;
    const { session, token } = r.result!.holders[0]!;
    const grant = ops.find((o) => o.op === 'acquire' && o.outcome === 'ok' && o.session === session && o.result!.token === token);
    const release = ops.find((o) => o.op === 'release' && o.session === session && o.args.token === token);
    return grant !== undefined && release !== undefined && grant.completeMs! < r.invokeMs && r.completeMs! < release.invokeMs;
  });
}

function assertOneMinimal(ref: ObjectRef, ops: readonly Operation[], cutoffMs: number, window: readonly Operation[]): void {
  assert.equal(verdictOf(ref, ops, cutoffMs, window), 'not-linearizable', 'the window fails');
  for (const op of window) {
    const without = window.filter((o) => o !== op);
    assert.equal(verdictOf(ref, ops, cutoffMs, without), 'linearizable', `#${String(op.id)} is needed`);
  }
}

describe('shrinking', () => {
  it('finds the planted stale read in a long contended history', () => {
    const ops = generateContendedHistory({ seed: 5, ops: 800, locks: ['A'], processesPerLock: 6, lostGrantRate: 0.05 });
    const reads = readsInsideAHold(ops);
    const victim = reads[Math.floor(reads.length * 0.6)]!;
    const planted = { ...victim, result: { holders: [] } } as Operation;
    const mutated = ops.map((o) => (o === victim ? planted : o));

    const result = check(mutated);
    assert.equal(result.valid, false);
    if (result.valid !== false) return;
    assert.equal(result.check, 'linearizability');
    assert.ok(result.windowMinimal);
    assert.ok(result.window.includes(planted), 'the planted read is in the window');
    assert.ok(result.window.length <= 3, `window of ${result.window.length}`);

    const object = partitionHistory(mutated).find((o) => o.ref.kind === 'lock')!;
    const shrunk = shrinkFailure(object.ref, object.ops, BUDGET);
    assert.ok(shrunk.cutoffMs <= planted.completeMs!, 'nothing after the bad read is needed');
    assertOneMinimal(object.ref, object.ops, shrunk.cutoffMs, shrunk.window);
  });

  it('explains a missing release by the operations that prove it, not by deleting the release', () => {
    const h = new HistoryBuilder();
    h.acquire('s1', 'L', 5, [0, 1]);
    h.release('s1', 'L', 5, [2, 3]);
    h.acquire('s2', 'L', 9, [4, 5]);
    const read = h.read('L', [['s2', 9]], [6, 7]);
    const release = h.release('s2', 'L', 9, [8, 9]);
    const late = h.read('L', [['s2', 9]], [10, 11]); // the bug: s2 released at 9
    const object = partitionHistory(h.ops)[0]!;
    const shrunk = shrinkFailure(object.ref, object.ops, BUDGET);
    assert.deepEqual(
      shrunk.window.map((o) => o.id),
      [release.id, late.id],
    );
    assert.ok(!shrunk.window.includes(read));
    assertOneMinimal(object.ref, object.ops, shrunk.cutoffMs, shrunk.window);
  });

  it('windows of random broken histories are 1-minimal', () => {
    let checked = 0;
    for (let seed = 1; seed <= 25; seed++) {
      const ops = generateContendedHistory({ seed, ops: 120, locks: ['A'], processesPerLock: 4, lostGrantRate: 0.1 });
      // Break it: one acknowledged release is moved before its grant completed.
      const releases = ops.filter((o) => o.op === 'release' && o.outcome === 'ok');
      const victim = releases[seed % releases.length]!;
      const grant = ops.find((o) => o.op === 'acquire' && o.session === victim.session && o.result?.token === (victim.args as { token: number }).token)!;
      const moved = { ...victim, invokeMs: grant.invokeMs - 2, completeMs: grant.invokeMs - 1 } as Operation;
      const broken = ops.map((o) => (o === victim ? moved : o));
      const object = partitionHistory(broken).find((o) => o.ref.kind === 'lock')!;
      const full = compileObject(object.ref, windowView(object.ops, Infinity, object.ops)).run(SEARCH);
      if (full.verdict !== 'not-linearizable') continue; // an expiry may explain it after all
      const shrunk = shrinkFailure(object.ref, object.ops, BUDGET);
      assert.ok(shrunk.minimal);
      assertOneMinimal(object.ref, object.ops, shrunk.cutoffMs, shrunk.window);
      checked++;
    }
    assert.ok(checked >= 20, `only ${checked} histories were broken`);
  });

  it('returns a failing (if larger) window when its budget runs out', () => {
    const ops = generateContendedHistory({ seed: 9, ops: 300, locks: ['A'], processesPerLock: 4 });
    const reads = readsInsideAHold(ops);
    const victim = reads[Math.floor(reads.length / 2)]!;
    const mutated = ops.map((o) => (o === victim ? ({ ...victim, result: { holders: [] } } as Operation) : o));
    const object = partitionHistory(mutated).find((o) => o.ref.kind === 'lock')!;
    const shrunk = shrinkFailure(object.ref, object.ops, { stepsPerProbe: 1_000_000, maxSteps: 50, deadline: Number.POSITIVE_INFINITY });
    assert.equal(shrunk.minimal, false);
    assert.equal(verdictOf(object.ref, object.ops, shrunk.cutoffMs, shrunk.window), 'not-linearizable');
  });
});
