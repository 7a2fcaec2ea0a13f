import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseKeeper } from '../../src/server/lease-keeper.js';

test('a lease is due TTL after its last keepalive, not before', () => {
  const k = new LeaseKeeper(1000);
  k.activate(0, [{ id: 1, ttlMs: 100 }]);
  assert.deepEqual(k.due(99), []);
  assert.equal(k.keepAlive(1, 50), 100);
  assert.deepEqual(k.due(149), [], 'the keepalive at 50 moved the deadline to 150');
  assert.deepEqual(k.due(150), [1]);
});

test('a late-confirmed older keepalive never shortens a deadline', () => {
  const k = new LeaseKeeper(1000);
  k.activate(0, [{ id: 1, ttlMs: 100 }]);
  k.keepAlive(1, 80);
  k.keepAlive(1, 40);
  assert.deepEqual(k.due(179), []);
  assert.deepEqual(k.due(180), [1]);
});

test('once expiry is proposed, keepalives are refused; the proposal is repeated if it did not take', () => {
  const k = new LeaseKeeper(500);
  k.activate(0, [{ id: 7, ttlMs: 100 }]);
  assert.deepEqual(k.due(100), [7]);
  assert.equal(k.keepAlive(7, 101), null);
  assert.deepEqual(k.due(599), []);
  assert.deepEqual(k.due(600), [7], 'proposed again');
  k.forget(7);
  assert.deepEqual(k.due(10_000), []);
});

test('a new leader and a resumed leader give every session a full TTL from now', () => {
  const k = new LeaseKeeper(1000);
  k.activate(1_000, [{ id: 1, ttlMs: 100 }, { id: 2, ttlMs: 300 }]);
  assert.deepEqual(k.due(1_099), []);
  k.graceAll(5_000);
  assert.deepEqual(k.due(5_099), []);
  assert.deepEqual(k.due(5_300).sort(), [1, 2]);
});

test('an inactive keeper (not leader) tracks nothing', () => {
  const k = new LeaseKeeper(1000);
  k.track(1, 100, 0);
  assert.equal(k.has(1), false);
  assert.deepEqual(k.due(1_000), []);
});

test('a grace reaches every lease whose expiry is not proposed', () => {
  const k = new LeaseKeeper(1000);
  const sessions = Array.from({ length: 1000 }, (_, i) => ({ id: i + 1, ttlMs: 100 + (i % 7) }));
  k.activate(0, sessions);
  k.graceAll(5_000);
  assert.deepEqual(k.due(5_099), [], 'nothing runs out before graceFrom + TTL');
  assert.deepEqual(k.due(5_106).sort((a, b) => a - b), sessions.map((s) => s.id));
});

test('an expiry proposed before a pause stays proposed through the grace', () => {
  const k = new LeaseKeeper(1000);
  k.activate(0, [{ id: 1, ttlMs: 100 }, { id: 2, ttlMs: 200 }]);
  assert.deepEqual(k.due(100), [1]);
  k.graceAll(150);
  assert.equal(k.keepAlive(1, 151), null, 'its ExpireSession may still commit: no keepalive is acknowledged');
  assert.equal(k.remainingMs(2, 150), 200, 'session 2 runs until 150 + 200');
  assert.deepEqual(k.due(349), []);
  assert.deepEqual(k.due(350), [2]);
  assert.deepEqual(k.due(1_100), [1], 'the proposal of session 1 is repeated as before');
});

test('a keepalive after a grace counts from its own arrival', () => {
  const k = new LeaseKeeper(1000);
  k.activate(0, [{ id: 1, ttlMs: 100 }]);
  k.graceAll(500);
  assert.equal(k.keepAlive(1, 550), 100);
  assert.deepEqual(k.due(649), []);
  assert.deepEqual(k.due(650), [1]);
});
