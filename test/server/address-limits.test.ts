// AddressLimits without a node: requests in flight and sessions per address, settled by
// answers and by close and expiry events; token buckets per token name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AddressLimits } from '../../src/server/api/address-limits.js';
import { DEFAULT_CLIENT_LIMITS } from '../../src/config/defaults.js';
import type { Request } from '../../src/protocol/client-protocol.js';
import type { MachineView } from '../../src/server/api/limits.js';

const open = (): Request => ({ id: 1, op: 'openSession', ttlMs: 10_000 });
const status = (): Request => ({ id: 1, op: 'status' });
const machine = (live: Set<number>): MachineView => ({
  appliedIndex: 1_000,
  sessionOwner: () => null,
  session: (id) => (live.has(id) ? { locks: [], waits: [], elections: [] } : null),
  lock: () => null,
});

test('requests in flight per address are bounded until answered; an IPv6 /64 is one address', () => {
  const a = new AddressLimits({ ...DEFAULT_CLIENT_LIMITS, maxInFlightPerAddress: 2 });
  const m = machine(new Set());
  const r1 = status();
  const r2 = status();
  assert.equal(a.admit('2001:db8::1', r1, null, m), null);
  assert.equal(a.admit('2001:db8::2', r2, null, m), null);
  assert.equal(a.admit('2001:db8::3', status(), null, m)?.code, 'LIMIT_EXCEEDED', 'the same /64');
  assert.equal(a.admit('2001:db9::1', status(), null, m), null, 'another /64');
  a.settle(r1, { ok: true, result: {} as never });
  assert.equal(a.admit('2001:db8::3', status(), null, m), null, 'an answer makes room');
});

test('sessions per address: counted when asked, kept while open, ended by a close or an event', () => {
  const a = new AddressLimits({ ...DEFAULT_CLIENT_LIMITS, maxSessionsPerAddress: 2 });
  const live = new Set<number>();
  const m = machine(live);
  const opens = [open(), open(), open()];
  assert.equal(a.admit('10.0.0.1', opens[0]!, null, m), null);
  assert.equal(a.admit('10.0.0.1', opens[1]!, null, m), null);
  assert.equal(a.admit('10.0.0.1', opens[2]!, null, m)?.code, 'LIMIT_EXCEEDED', 'pending opens count');
  for (const [i, id] of [[0, 5], [1, 6]] as const) {
    live.add(id);
    a.settle(opens[i]!, { ok: true, result: { session: id, ttlMs: 10_000 } });
  }
  assert.equal(a.admit('10.0.0.1', open(), null, m)?.code, 'LIMIT_EXCEEDED');
  a.ended(5); // its expiry applied
  const again = open();
  assert.equal(a.admit('10.0.0.1', again, null, m), null);
  a.settle(again, { ok: false, error: { code: 'LIMIT_EXCEEDED', message: 'cluster full' } });
  // A close answered: the session stops counting before this node applies it.
  const close: Request = { id: 1, op: 'closeSession', session: 6, seq: 1 };
  a.settle(close, { ok: true, result: { index: 9 } });
  assert.equal(a.admit('10.0.0.1', open(), null, m), null);
});

test('a token\'s bucket holds over all its requests', () => {
  const a = new AddressLimits({ ...DEFAULT_CLIENT_LIMITS, requestsPerSecondPerToken: 1, requestBurstPerToken: 3 }, () => 0);
  const m = machine(new Set());
  const codes = Array.from({ length: 5 }, (_, i) => {
    const r = status();
    const refusal = a.admit(`10.0.0.${i}`, r, 'app', m);
    a.settle(r, { ok: true, result: {} as never });
    return refusal?.code ?? 'ok';
  });
  assert.deepEqual(codes, ['ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED']);
  assert.equal(a.admit('10.0.0.9', status(), 'other', m), null, 'another token has its own');
});
