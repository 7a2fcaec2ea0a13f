// Performance sanity: large histories reach a verdict inside the step budget. No
// wall-clock assertions (CI machines vary); the budget is the contract.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { check, type Operation } from '../checker/index.js';
import { generateContendedHistory, generateHistory } from './generate.js';

const LOCKS = ['A', 'B', 'C', 'D', 'E'];
const BUDGET = { maxSteps: 2_000_000, maxMs: 120_000 };

describe('performance', () => {
  it('a 5,000-operation contended history across 5 locks, with lost answers and expiries', () => {
    const ops = generateContendedHistory({ seed: 42, ops: 5000, locks: LOCKS, processesPerLock: 8, lostGrantRate: 0.05 });
    assert.ok(ops.length >= 5000);
    const result = check(ops, BUDGET);
    assert.equal(result.valid, true, result.valid === 'unknown' ? result.reason : 'flagged');
    assert.ok(result.stats.steps <= BUDGET.maxSteps);
  });

  it('a 5,000-operation concurrent history of locks, shared locks, an election and fenced writes', () => {
    const ops = generateHistory({ seed: 7, ops: 5000, locks: LOCKS, sessions: 10, spreadMs: 30, unknownRate: 0.1, withElection: true, withFence: true });
    const result = check(ops, BUDGET);
    assert.equal(result.valid, true, result.valid === 'unknown' ? result.reason : 'flagged');
    assert.ok(result.stats.steps <= BUDGET.maxSteps);
  });

  it('a planted stale read in a 5,000-operation history is found and shrunk within budget', () => {
    const ops = generateContendedHistory({ seed: 43, ops: 5000, locks: LOCKS, processesPerLock: 8, lostGrantRate: 0.05 });
    // A read taken while its holder certainly held, changed to show the lock free.
    const victim = ops.find((r) => {
      if (r.op !== 'read' || r.invokeMs < 2000 || r.result?.holders.length !== 1) return false;
      const { session, token } = r.result.holders[0]!;
      const grant = ops.find((o) => o.op === 'acquire' && o.outcome === 'ok' && o.session === session && o.result!.token === token);
      const release = ops.find((o) => o.op === 'release' && o.session === session && o.args.token === token);
      return grant !== undefined && release !== undefined && grant.completeMs! < r.invokeMs && r.completeMs! < release.invokeMs;
    })!;
    const planted = { ...victim, result: { holders: [] } } as Operation;
    const result = check(
      ops.map((o) => (o === victim ? planted : o)),
      BUDGET,
    );
    assert.equal(result.valid, false);
    if (result.valid !== false) return;
    assert.ok(result.window.includes(planted));
    assert.ok(result.windowMinimal);
  });

  it('an exhausted budget is reported as unknown, not as a verdict', () => {
    const ops = generateContendedHistory({ seed: 44, ops: 2000, locks: LOCKS, processesPerLock: 8, lostGrantRate: 0.05 });
    const result = check(ops, { maxSteps: 100 });
    assert.equal(result.valid, 'unknown');
  });
});
