// The catch-up watch: a member whose match stands still while the leader's log moves on is
// reported with how long it has been stuck; one that advances, or is up to date, is not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CatchUpWatch } from '../../src/server/membership/catch-up.js';
import { formatStatus } from '../../src/cli/status.js';

test('a member whose match stands still while the log grows is stalled; one that advances is not', () => {
  const w = new CatchUpWatch();
  assert.deepEqual(w.observe([{ id: 'a', match: 10 }, { id: 'b', match: 10 }], 10, 0), []);
  w.observe([{ id: 'a', match: 10 }, { id: 'b', match: 12 }], 20, 1_000);
  const later = w.observe([{ id: 'a', match: 10 }, { id: 'b', match: 19 }], 30, 9_000);
  assert.deepEqual(later.map((p) => [p.id, p.behind, p.stalledMs]), [['a', 20, 9_000], ['b', 11, 0]]);
  // Its match went down (the leader reset it after a rejection): the clock starts again.
  assert.equal(w.observe([{ id: 'a', match: 0 }], 30, 10_000)[0]!.stalledMs, 0);
  // Caught up: nothing to report, and a member that left is forgotten.
  assert.deepEqual(w.observe([{ id: 'a', match: 30 }], 30, 11_000), []);
});

test('palisade status prints each node\'s warnings under the table', () => {
  const out = formatStatus([
    { endpoint: 'ws://x', id: 'n1', role: 'leader', term: 2, leader: 'n1', commitIndex: 9, appliedIndex: 9, members: ['n1', 'n2'], pid: 1, lastIndex: 9, snapshotIndex: 0, sessions: 0, driver: {}, transport: {}, warnings: ['member n2 is not catching up: match 3, 6 entries behind, no progress for 12 s'] },
  ]);
  assert.match(out, /WARNING n1: member n2 is not catching up/);
});
