// The driver contract kept in the core: what may leave before the write, what the write holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReadyPlanner, type Message, type Ready } from '../../src/raft/index.js';

const msg = (type: Message['type']): Message => ({ type, from: 'n1', to: 'n2', term: 2 }) as Message;

function ready(part: Partial<Ready>): Ready {
  return { entries: [], committedEntries: [], messages: [], readStates: [], droppedReads: [], ...part };
}

test("a leader's replication leaves before the write; votes and acknowledgements after it", () => {
  const p = new ReadyPlanner({ term: 1, vote: 'n1', commit: 0 });
  const msgs = [msg('app'), msg('voteResp'), msg('heartbeat'), msg('appResp'), msg('snap'), msg('timeoutNow')];
  const plan = p.plan(ready({ messages: msgs, entries: [{ term: 2, index: 1, type: 'normal', data: new Uint8Array() }] }));
  assert.deepEqual(plan.sendFirst.map((m) => m.type), ['app', 'heartbeat', 'snap', 'timeoutNow']);
  assert.deepEqual(plan.sendAfterWrite.map((m) => m.type), ['voteResp', 'appResp']);
  assert.equal(plan.write?.entries.length, 1);
});

test('a Ready that only moves the commit index writes nothing; the commit rides with the next write', () => {
  const p = new ReadyPlanner({ term: 2, vote: 'n1', commit: 3 });
  const commitOnly = p.plan(ready({ hardState: { term: 2, vote: 'n1', commit: 5 } }));
  assert.equal(commitOnly.write, null);
  assert.deepEqual(p.unwritten(), { term: 2, vote: 'n1', commit: 5 });
  const e = { term: 2, index: 6, type: 'normal' as const, data: new Uint8Array() };
  const next = p.plan(ready({ entries: [e] }));
  assert.deepEqual(next.write?.hardState, { term: 2, vote: 'n1', commit: 5 });
  p.written(next.write!);
  assert.equal(p.unwritten(), null);
});

test('a new term or a new vote is always written before the messages that depend on it', () => {
  const p = new ReadyPlanner({ term: 2, vote: null, commit: 3 });
  const vote = p.plan(ready({ hardState: { term: 2, vote: 'n3', commit: 3 }, messages: [msg('voteResp')] }));
  assert.deepEqual(vote.write?.hardState, { term: 2, vote: 'n3', commit: 3 });
  assert.deepEqual(vote.sendAfterWrite.map((m) => m.type), ['voteResp']);
  p.written(vote.write!);
  const term = p.plan(ready({ hardState: { term: 3, vote: null, commit: 3 } }));
  assert.notEqual(term.write, null);
});
