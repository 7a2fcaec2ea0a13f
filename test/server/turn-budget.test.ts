// TurnBudget: jobs begin on later turns of the event loop than the one that queued them, in
// order, at most `perTurn` a turn.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TurnBudget } from '../../src/server/api/http/turn-budget.js';

describe('TurnBudget', () => {
  test('a burst begins in order over later turns, perTurn a turn', async () => {
    const budget = new TurnBudget(3);
    let turn = 0;
    const begun: { job: number; turn: number }[] = [];
    for (let i = 0; i < 7; i++) budget.run(() => begun.push({ job: i, turn }));
    assert.equal(begun.length, 0, 'nothing begins in the queuing turn');
    assert.equal(budget.backlog, 7);
    // One marker per turn: setImmediate callbacks queued now run in this order on the next
    // turn, and each re-queues itself for the one after.
    await new Promise<void>((resolve) => {
      const tick = (): void => {
        turn += 1;
        if (budget.backlog === 0) return resolve();
        setImmediate(tick);
      };
      setImmediate(tick);
    });
    assert.deepEqual(begun.map((b) => b.job), [0, 1, 2, 3, 4, 5, 6]);
    const perTurn = new Map<number, number>();
    for (const b of begun) perTurn.set(b.turn, (perTurn.get(b.turn) ?? 0) + 1);
    assert.deepEqual([...perTurn.values()], [3, 3, 1]);
  });
});
