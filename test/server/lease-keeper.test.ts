import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LeaseKeeper } from '../../src/server/leases/lease-keeper.js';
import { activateAll } from '../support/leases.js';

test('a lease is due TTL after its last keepalive, not before', () => {
  const k = new LeaseKeeper(1000);
  activateAll(k, 0, [{ session: 1, ttlMs: 100 }]);
  assert.deepEqual(k.due(99), []);
  assert.equal(k.keepAlive(1, 50), 100);
  assert.deepEqual(k.due(149), [], 'the keepalive at 50 moved the deadline to 150');
  assert.deepEqual(k.due(150), [1]);
});

test('a late-confirmed older keepalive never shortens a deadline', () => {
  const k = new LeaseKeeper(1000);
  activateAll(k, 0, [{ session: 1, ttlMs: 100 }]);
  k.keepAlive(1, 80);
  k.keepAlive(1, 40);
  assert.deepEqual(k.due(179), []);
  assert.deepEqual(k.due(180), [1]);
});

test('once expiry is proposed, keepalives are refused; the proposal is repeated if it did not take', () => {
  const k = new LeaseKeeper(500);
  activateAll(k, 0, [{ session: 7, ttlMs: 100 }]);
  assert.deepEqual(k.due(100), [7]);
  assert.equal(k.keepAlive(7, 101), null);
  assert.deepEqual(k.due(599), []);
  assert.deepEqual(k.due(600), [7], 'proposed again');
  k.forget(7);
  assert.deepEqual(k.due(10_000), []);
});

test('a new leader and a resumed leader give every session a full TTL from now', () => {
  const k = new LeaseKeeper(1000);
  activateAll(k, 1_000, [{ session: 1, ttlMs: 100 }, { session: 2, ttlMs: 300 }]);
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
  const sessions = Array.from({ length: 1000 }, (_, i) => ({ session: i + 1, ttlMs: 100 + (i % 7) }));
  activateAll(k, 0, sessions);
  k.graceAll(5_000);
  assert.deepEqual(k.due(5_099), [], 'nothing runs out before graceFrom + TTL');
  assert.deepEqual(k.due(5_106).sort((a, b) => a - b), sessions.map((s) => s.session));
});

test('an expiry proposed before a pause stays proposed through the grace', () => {
  const k = new LeaseKeeper(1000);
  activateAll(k, 0, [{ session: 1, ttlMs: 100 }, { session: 2, ttlMs: 200 }]);
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
  activateAll(k, 0, [{ session: 1, ttlMs: 100 }]);
  k.graceAll(500);
  assert.equal(k.keepAlive(1, 550), 100);
  assert.deepEqual(k.due(649), []);
  assert.deepEqual(k.due(650), [1]);
});

test('against a model that recomputes every deadline: the same sessions come due at the same times', () => {
  // Each lease keeps one heap entry whatever the keepalives do; this checks that it still
  // expires exactly what a keeper that looked at every lease on every round would.
  type Step = { kind: 'keepAlive' | 'forget' | 'track' | 'grace' | 'due'; session: number; dt: number };
  const step = fc.record({
    kind: fc.constantFrom('keepAlive' as const, 'forget' as const, 'track' as const, 'grace' as const, 'due' as const, 'due' as const),
    session: fc.integer({ min: 1, max: 6 }),
    dt: fc.integer({ min: 0, max: 60 }),
  });
  fc.assert(
    fc.property(fc.array(step, { maxLength: 200 }), (steps: Step[]) => {
      const R = 70;
      const ttl = (s: number) => 50 + 10 * s;
      const k = new LeaseKeeper(R);
      const model = new Map<number, { deadline: number; proposedAt: number; nextProposal: number }>();
      let grace = Number.NEGATIVE_INFINITY;
      let now = 0;
      const ids = [1, 2, 3];
      activateAll(k, 0, ids.map((id) => ({ session: id, ttlMs: ttl(id) })));
      for (const id of ids) model.set(id, { deadline: ttl(id), proposedAt: 0, nextProposal: 0 });
      for (const s of steps) {
        now += s.dt;
        if (s.kind === 'grace') {
          k.graceAll(now);
          grace = Math.max(grace, now);
        } else if (s.kind === 'due') {
          const expected: number[] = [];
          for (const [id, m] of model) {
            const due = m.proposedAt > 0 ? now >= m.nextProposal : Math.max(m.deadline, grace + ttl(id)) <= now;
            if (due) {
              expected.push(id);
              m.proposedAt = now;
              m.nextProposal = now + R;
            }
          }
          assert.deepEqual(k.due(now).sort((a, b) => a - b), expected.sort((a, b) => a - b), `at ${now}`);
        } else if (s.kind === 'forget') {
          k.forget(s.session);
          model.delete(s.session);
        } else if (s.kind === 'track') {
          k.track(s.session, ttl(s.session), now);
          model.set(s.session, { deadline: now + ttl(s.session), proposedAt: 0, nextProposal: 0 });
        } else {
          const m = model.get(s.session);
          const ack = k.keepAlive(s.session, now);
          assert.equal(ack, m && m.proposedAt === 0 ? ttl(s.session) : null);
          if (m && m.proposedAt === 0) m.deadline = Math.max(m.deadline, now + ttl(s.session));
        }
      }
    }),
    { numRuns: 500 },
  );
});

test('a new leader makes its leases a slice at a time; a session not made yet still has its full TTL and is renewed, and none is due early', () => {
  // 1,000,000 sessions made at once held a new leader's loop past the election timeout.
  const k = new LeaseKeeper(1_000); // (no re-proposal within the test)
  const open = new Map(Array.from({ length: 50_000 }, (_, i) => [i + 1, 100] as const));
  k.activate(0, [...open].map(([session, ttlMs]) => ({ session, ttlMs })), (s) => open.get(s));
  assert.ok(k.activating, 'the leases are not all made in activate');
  assert.equal(k.keepAlive(50_000, 60), 100, 'a keepalive for a session not made yet is renewed, not refused');
  assert.equal(k.remainingMs(49_999, 10), 90, 'a session not made yet has the full TTL from the election');
  assert.equal(k.has(123_456), false);
  open.delete(49_998);
  k.forget(49_998); // closed before its lease was made
  const due = new Set<number>();
  for (let t = 0; t < 100; t += 10) for (const s of k.due(t)) due.add(s);
  assert.deepEqual([...due], [], 'nothing is due before the TTL');
  assert.equal(k.activating, false, 'the slices are done within a few rounds');
  for (const s of k.due(100)) due.add(s);
  assert.equal(due.size, 50_000 - 2, 'every other session is due at its TTL');
  assert.ok(!due.has(50_000) && !due.has(49_998));
  assert.deepEqual(k.due(160), [50_000], 'the kept-alive one at its own deadline');
});
