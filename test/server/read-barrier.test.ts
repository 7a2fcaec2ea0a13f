// The batched ReadIndex rounds: every waiter is answered by a round that started after it
// asked; reads start their round at once, keepalives alone share rounds spaced in time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RaftNode } from '../../src/raft/index.js';
import { systemClock } from '../../src/server/clock.js';
import { ReadIndexBatcher } from '../../src/server/replication/read-barrier.js';

/** A core that records the rounds asked for; `answer` completes the one in flight. */
function fakeCore(): { raft: RaftNode; rounds: Uint8Array[] } {
  const rounds: Uint8Array[] = [];
  const raft = { readIndex: (ctx: Uint8Array) => void rounds.push(ctx) } as unknown as RaftNode;
  return { raft, rounds };
}

function answer(b: ReadIndexBatcher, ctx: Uint8Array, index: number): void {
  b.onReadStates([{ index, context: ctx }], []);
}

const settled = (): Promise<void> => new Promise((r) => setImmediate(r));

test('a read starts a round at once; one that arrives during it waits for the next round', async () => {
  const { raft, rounds } = fakeCore();
  let now = 0;
  const b = new ReadIndexBatcher(raft, () => {}, 10_000, 'n1', { ...systemClock, now: () => now }, 5);
  const first = b.request('read');
  assert.equal(rounds.length, 1);
  const second = b.request('read');
  assert.equal(rounds.length, 1, 'a round is in flight: the second read waits for the next one');
  answer(b, rounds[0]!, 7);
  assert.equal(await first, 7);
  assert.equal(rounds.length, 2, 'the next round starts as soon as the previous one ends');
  answer(b, rounds[1]!, 8);
  assert.equal(await second, 8);
});

test('keepalives alone wait for a round spaced from the previous start; a read takes them along at once', async () => {
  const { raft, rounds } = fakeCore();
  let now = 100;
  const b = new ReadIndexBatcher(raft, () => {}, 10_000, 'n1', { ...systemClock, now: () => now }, 5);
  const k1 = b.request('lease');
  assert.equal(rounds.length, 1, 'no round started recently: the first keepalive goes at once');
  now = 101;
  answer(b, rounds[0]!, 3);
  assert.equal(await k1, 3);

  let k2Index: number | null = null;
  const k2 = b.request('lease').then((i) => (k2Index = i));
  assert.equal(rounds.length, 1, 'within 5 ms of the last start: the keepalive waits');
  now = 102;
  const r = b.request('read');
  assert.equal(rounds.length, 2, 'a read starts the round at once, and the keepalive joins it');
  answer(b, rounds[1]!, 4);
  assert.equal(await r, 4);
  await k2;
  assert.equal(k2Index, 4);
});

test('a waiting keepalive gets its round once the spacing has passed, and never from an earlier round', async () => {
  const { raft, rounds } = fakeCore();
  let now = 0;
  const b = new ReadIndexBatcher(raft, () => {}, 10_000, 'n1', { ...systemClock, now: () => now }, 5);
  const k1 = b.request('lease');
  let k2Index: number | null = null;
  const k2 = b.request('lease').then((i) => (k2Index = i));
  answer(b, rounds[0]!, 1);
  assert.equal(await k1, 1);
  await settled();
  assert.equal(k2Index, null, 'the round that answered k1 started before k2 asked');
  assert.equal(rounds.length, 1);
  now = 5;
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(rounds.length, 2, 'the spacing passed: the round starts');
  answer(b, rounds[1]!, 2);
  await k2;
  assert.equal(k2Index, 2);
});

test('stop answers every waiter, in a round or waiting for one, and starts no round after', async () => {
  const { raft, rounds } = fakeCore();
  let now = 0;
  const b = new ReadIndexBatcher(raft, () => {}, 10_000, 'n1', { ...systemClock, now: () => now }, 5);
  const inRound = b.request('read');
  const queued = b.request('lease');
  const outcomes = Promise.allSettled([inRound, queued]);
  b.stop();
  const [r1, r2] = await outcomes;
  assert.equal(r1.status, 'rejected');
  assert.equal(r2.status, 'rejected');
  assert.equal(rounds.length, 1, 'no round started after stop');
  await assert.rejects(b.request('read'), /stopping/);
  answer(b, rounds[0]!, 9); // a late answer to the abandoned round changes nothing
  now = 1_000;
  await settled();
  assert.equal(rounds.length, 1);
});
