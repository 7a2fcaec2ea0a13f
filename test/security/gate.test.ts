// The client gate without a cluster: tokens, permissions, limits, event filtering and the
// config sections that set them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sessionOwnerProblem } from '../../src/server/api/session-owner.js';
import { TokenRegistry, eventVisibleTo, ownSessionsOnly, permissionProblem, sessionScopeProblem, touchedNames, type Principal } from '../../src/server/api/auth.js';
import { ClientGate } from '../../src/server/api/client-gate.js';
import { ConfigError, validateConfig, type ClusterConfig } from '../../src/config/cluster-config.js';
import { acquireLimitProblem, type MachineView } from '../../src/server/api/limits.js';
import type { Request } from '../../src/protocol/client-protocol.js';
import { OPS } from '../../src/protocol/ops.js';
import { TokenBucket } from '../../src/transport/rate-limit.js';
import { captureLogger } from '../transport/helpers.js';

const SECRET_A = 'token-for-jobs-0123456789';
const SECRET_RO = 'token-read-only-0123456789';
const SECRET_ADMIN = 'token-admin-0123456789abcd';

function baseRaw(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    clusterId: 'c',
    secret: 'a-cluster-secret-0123456789',
    nodes: [{ id: 'n1', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'ws://127.0.0.1:7001', dataDir: 'd1' }],
    sessions: { minTtlMs: 1000 },
    ...extra,
  };
}

const AUTH = {
  tokens: [
    { name: 'jobs', token: SECRET_A, prefixes: ['jobs/', 'shared/'] },
    { name: 'reader', token: SECRET_RO, readOnly: true },
    { name: 'ops', token: SECRET_ADMIN, admin: true },
  ],
};

function configWith(extra: Record<string, unknown>): ClusterConfig {
  return validateConfig(baseRaw(extra), '/tmp');
}

/** A machine view with fixed sessions and locks. */
function machineView(sessions: Record<number, { owner?: string; locks?: string[]; waits?: string[]; elections?: string[] }>, locks: Record<string, { holders: number; waiters: number }> = {}): MachineView {
  return {
    appliedIndex: 1000,
    sessionOwner: (id) => (sessions[id] ? (sessions[id]!.owner ?? null) : undefined),
    session: (id) => {
      const s = sessions[id];
      return s ? { locks: (s.locks ?? []).map((name) => ({ name })), waits: (s.waits ?? []).map((name) => ({ name })), elections: s.elections ?? [] } : null;
    },
    lock: (name) => {
      const l = locks[name];
      return l ? { holders: new Array(l.holders).fill(0), waiters: new Array(l.waiters).fill(0), delayed: false } : null;
    },
  };
}

const seq = { session: 1, seq: 1 };
const acquire = (name: string, wait = false): Request => ({ id: 1, op: 'acquire', ...seq, name, mode: 'exclusive', wait });

describe('tokens', () => {
  test('the right token gives its principal; a wrong, absent or near token gives none', () => {
    const reg = new TokenRegistry(configWith({ auth: AUTH }).auth!.tokens);
    assert.equal(reg.authenticate(SECRET_A)?.name, 'jobs');
    assert.equal(reg.authenticate(SECRET_RO)?.readOnly, true);
    assert.equal(reg.authenticate(undefined), null);
    assert.equal(reg.authenticate(''), null);
    assert.equal(reg.authenticate(SECRET_A.slice(0, -1)), null);
    assert.equal(reg.authenticate(SECRET_A + 'x'), null);
    assert.equal(reg.authenticate(SECRET_A.toUpperCase()), null);
    assert.equal(reg.authenticate('x'.repeat(100_000)), null);
  });

  test('the registry keeps digests, not tokens', () => {
    const reg = new TokenRegistry(configWith({ auth: AUTH }).auth!.tokens);
    const seen = JSON.stringify(reg, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('latin1') : v));
    for (const t of [SECRET_A, SECRET_RO, SECRET_ADMIN]) assert.ok(!seen.includes(t));
  });
});

describe('permissions', () => {
  const jobs: Principal = { name: 'jobs', prefixes: ['jobs/'], readOnly: false, admin: false };
  const reader: Principal = { name: 'reader', prefixes: null, readOnly: true, admin: false };

  test('a read-only token is refused exactly the ops that change state, a non-admin token exactly the cluster ops', () => {
    // The permission each op needs, spelled out: a change here is a change of who may do what.
    const changing = ['closeSession', 'acquire', 'release', 'cancelWait', 'campaign', 'proclaim', 'resign', 'put', 'delete', 'txn', 'beginOp', 'completeOp'];
    const adminOnly = ['addMember', 'removeMember', 'transferLeader', 'snapshot', 'configure', 'revokeSession'];
    const anyName = { prefixes: null, readOnly: false, admin: false };
    const readOnly: Principal = { ...anyName, name: 'ro', readOnly: true };
    const plain: Principal = { ...anyName, name: 'plain' };
    const root: Principal = { ...anyName, name: 'root', admin: true };
    for (const op of OPS) {
      const req = { id: 1, op } as Request;
      assert.equal(permissionProblem(readOnly, req)?.code, changing.includes(op) || adminOnly.includes(op) ? 'PERMISSION_DENIED' : undefined, `read-only ${op}`);
      assert.equal(permissionProblem(plain, req)?.code, adminOnly.includes(op) ? 'PERMISSION_DENIED' : undefined, `non-admin ${op}`);
      assert.equal(permissionProblem(root, req), null, `admin ${op}`);
    }
    assert.equal(OPS.length, 36);
  });

  test('every op says which names it touches', () => {
    for (const op of OPS) assert.doesNotThrow(() => touchedNames({ id: 1, op } as Request));
  });

  test('names outside the prefixes are refused, in every field that holds one', () => {
    assert.equal(permissionProblem(jobs, acquire('jobs/a')), null);
    const refused: Request[] = [
      acquire('other/a'),
      { id: 1, op: 'get', name: 'other' },
      { id: 1, op: 'locks' },
      { id: 1, op: 'locks', prefix: 'jo' },
      { id: 1, op: 'leader', election: 'other' },
      { id: 1, op: 'campaign', ...seq, election: 'other', value: 'v' },
      { id: 1, op: 'kvGet', key: 'other' },
      { id: 1, op: 'watch', prefix: '' },
      { id: 1, op: 'put', ...seq, key: 'jobs/k', value: new Uint8Array(), fence: { lock: 'other', token: 3 } },
      { id: 1, op: 'beginOp', ...seq, opKey: 'other', fence: { lock: 'jobs/l', token: 3 } },
      { id: 1, op: 'txn', ...seq, compare: [{ target: 'absent', key: 'other' }], success: [], failure: [] },
      { id: 1, op: 'txn', ...seq, compare: [{ target: 'lock', lock: 'other', token: 3 }], success: [], failure: [] },
      { id: 1, op: 'txn', ...seq, compare: [], success: [{ op: 'delete', key: 'jobs/k' }], failure: [{ op: 'delete', key: 'other' }] },
      { id: 1, op: 'sessions', owner: 'batch' },
    ];
    for (const r of refused) assert.equal(permissionProblem(jobs, r)?.code, 'PERMISSION_DENIED', JSON.stringify(r));
    assert.equal(permissionProblem(jobs, { id: 1, op: 'locks', prefix: 'jobs/x' }), null);
    assert.equal(permissionProblem(jobs, { id: 1, op: 'watch', prefix: 'jobs/' }), null);
    assert.equal(permissionProblem(jobs, { id: 1, op: 'txn', ...seq, compare: [{ target: 'lock', lock: 'jobs/l', token: 3 }], success: [{ op: 'delete', key: 'jobs/k' }], failure: [] }), null);
  });

  test('a token that is not an admin token lists only its own sessions', () => {
    assert.deepEqual(ownSessionsOnly(jobs, { id: 1, op: 'sessions', prefix: 'web-' }), { id: 1, op: 'sessions', prefix: 'web-', owner: 'jobs' });
    const root: Principal = { name: 'root', prefixes: null, readOnly: false, admin: true };
    assert.deepEqual(ownSessionsOnly(root, { id: 1, op: 'sessions' }), { id: 1, op: 'sessions' });
    assert.equal(permissionProblem(jobs, { id: 1, op: 'sessions', owner: 'jobs' }), null);
  });

  test('read-only tokens read and keep sessions, but change nothing', () => {
    assert.equal(permissionProblem(reader, { id: 1, op: 'get', name: 'x' }), null);
    assert.equal(permissionProblem(reader, { id: 1, op: 'openSession' }), null);
    assert.equal(permissionProblem(reader, { id: 1, op: 'keepAlive', session: 1 }), null);
    for (const r of [acquire('x'), { id: 1, op: 'release', ...seq, name: 'x', token: 2 }, { id: 1, op: 'closeSession', ...seq }] as Request[]) {
      assert.match(permissionProblem(reader, r)?.message ?? '', /read-only/);
    }
  });

  test('cluster administration needs an admin token', () => {
    assert.equal(permissionProblem(jobs, { id: 1, op: 'removeMember', member: 'n2' })?.code, 'PERMISSION_DENIED');
    assert.equal(permissionProblem(jobs, { id: 1, op: 'members' }), null);
    assert.equal(permissionProblem({ ...jobs, admin: true }, { id: 1, op: 'transferLeader' }), null);
  });

  test('a session id is usable only by a token whose scope covers what the session holds', () => {
    const view = machineView({ 1: { locks: ['jobs/a'] }, 2: { locks: ['jobs/a'], waits: ['other/b'] }, 3: { elections: ['other/e'] }, 4: {} });
    const keepAlive = (session: number): Request => ({ id: 1, op: 'keepAlive', session });
    const close = (session: number): Request => ({ id: 1, op: 'closeSession', session, seq: 1 });
    assert.equal(sessionScopeProblem(jobs, keepAlive(1), view), null);
    const refusal = sessionScopeProblem(jobs, keepAlive(2), view)?.message ?? '';
    assert.match(refusal, /outside the token's prefixes/);
    assert.doesNotMatch(refusal, /other/, 'the refusal does not name a lock the token may not see');
    assert.equal(sessionScopeProblem(jobs, close(3), view)?.code, 'PERMISSION_DENIED');
    assert.equal(sessionScopeProblem(jobs, { id: 1, op: 'attach', session: 3 }, view)?.code, 'PERMISSION_DENIED');
    assert.equal(sessionScopeProblem(jobs, keepAlive(99), view), null, 'unknown sessions are the machine\'s to answer');
    assert.equal(sessionScopeProblem(reader, keepAlive(4), view), null, 'a read-only token may keep an empty session');
    assert.match(sessionScopeProblem(reader, keepAlive(1), view)?.message ?? '', /read-only/);
    const everything: Principal = { name: 'all', prefixes: null, readOnly: false, admin: false };
    assert.equal(sessionScopeProblem(everything, close(2), view), null);
  });

  test('a session belongs to the token that opened it; admin tokens may only close others\' sessions', () => {
    const view = machineView({ 1: { owner: 'jobs' }, 2: { owner: 'batch' }, 3: {} });
    const ops: Principal = { name: 'ops', prefixes: null, readOnly: false, admin: true };
    const keepAlive = (session: number) => ({ id: 1, op: 'keepAlive', session }) as const;
    const put = (session: number) => ({ id: 1, op: 'put', session, seq: 1, key: 'jobs/k', value: new Uint8Array(1) }) as const;
    assert.equal(sessionOwnerProblem(jobs, keepAlive(1), view), null);
    // To anyone but its owner a session does not exist: word for word the answer to one that is not open.
    for (const req of [keepAlive(2), { id: 1, op: 'attach', session: 2 } as const, { id: 1, op: 'closeSession', session: 2, seq: 1 } as const, put(2)]) {
      const p = sessionOwnerProblem(jobs, req, view);
      assert.deepEqual(p, sessionOwnerProblem(jobs, { ...req, session: 1001 }, view) && { code: 'UNKNOWN_SESSION', message: 'session 2 is not open (never opened, closed or expired)' }, req.op);
    }
    assert.equal(sessionOwnerProblem(jobs, keepAlive(3), view), null, 'a session opened without auth falls back to the scope rule');
    assert.equal(sessionOwnerProblem(jobs, keepAlive(99), view), null, 'an unknown session is the machine\'s to answer');
    assert.equal(sessionOwnerProblem(jobs, keepAlive(1001), view)?.code, 'UNKNOWN_SESSION', 'not open as of a current read');
    assert.equal(sessionOwnerProblem(ops, { id: 1, op: 'closeSession', session: 2, seq: 1 }, view), null);
    assert.equal(sessionOwnerProblem(ops, keepAlive(2), view)?.code, 'UNKNOWN_SESSION');
  });

  test('events outside the prefixes are not shown', () => {
    assert.equal(eventVisibleTo(jobs, { event: 'granted', index: 3, session: 1, name: 'jobs/a', token: 3, mode: 'exclusive' }), true);
    assert.equal(eventVisibleTo(jobs, { event: 'granted', index: 3, session: 1, name: 'b', token: 3, mode: 'exclusive' }), false);
    assert.equal(eventVisibleTo(jobs, { event: 'kvChanged', index: 3, key: 'b', value: null, revision: 0 }), false);
    assert.equal(eventVisibleTo(jobs, { event: 'sessionExpired', index: 3, session: 1 }), true);
  });
});

describe('the connection gate', () => {
  function gateFor(extra: Record<string, unknown>, view: MachineView = machineView({})) {
    const { logger, lines } = captureLogger();
    const gate = new ClientGate(configWith(extra), logger, () => view);
    return { gate, lines, conn: gate.open({ id: 7, remoteAddress: '10.0.0.9' }) };
  }

  test('with auth on, nothing but hello is served until a hello with a valid token', () => {
    const { conn, lines } = gateFor({ auth: AUTH });
    for (const op of OPS.filter((o) => o !== 'hello')) assert.equal(conn.admit({ id: 1, op } as Request)?.code, 'UNAUTHENTICATED', op);
    assert.equal(conn.admit({ id: 2, op: 'hello', version: 1 })?.code, 'UNAUTHENTICATED');
    assert.equal(conn.admit({ id: 3, op: 'hello', version: 1, token: 'wrong-token-0123456789' })?.code, 'UNAUTHENTICATED');
    assert.equal(conn.admit({ id: 4, op: 'status' })?.code, 'UNAUTHENTICATED');
    assert.equal(conn.admit({ id: 5, op: 'hello', version: 1, token: SECRET_A }), null);
    assert.equal(conn.who?.name, 'jobs');
    assert.equal(conn.admit({ id: 6, op: 'status' }), null);
    // A later hello with a bad token drops the identity.
    assert.equal(conn.admit({ id: 7, op: 'hello', version: 1, token: 'nope-nope-nope-nope' })?.code, 'UNAUTHENTICATED');
    assert.equal(conn.admit({ id: 8, op: 'status' })?.code, 'UNAUTHENTICATED');
    const logged = JSON.stringify(lines);
    assert.match(logged, /refused a client request/);
    for (const t of [SECRET_A, 'wrong-token-0123456789', 'nope-nope-nope-nope']) assert.ok(!logged.includes(t), 'a token reached the log');
  });

  test('with auth off, every request is served without a hello, and the start-up says so once', () => {
    const { gate, conn, lines } = gateFor({});
    assert.equal(conn.admit({ id: 1, op: 'status' }), null);
    assert.equal(conn.admit(acquire('anything')), null);
    gate.announce();
    assert.equal(lines.filter((l) => /clients are not authenticated/.test(l.msg)).length, 1);
    assert.equal(lines.filter((l) => /not encrypted/.test(l.msg)).length, 2);
  });

  test('names over limits.maxNameBytes are INVALID_ARGUMENT', () => {
    const { conn } = gateFor({ limits: { maxNameBytes: 8 } });
    assert.equal(conn.admit(acquire('12345678')), null);
    assert.equal(conn.admit(acquire('123456789'))?.code, 'INVALID_ARGUMENT');
    assert.equal(conn.admit({ id: 1, op: 'leader', election: 'é'.repeat(5) })?.code, 'INVALID_ARGUMENT');
  });

  test('locks held and waited for per session, and waiters per lock (checked by the leader)', () => {
    const view = machineView(
      { 1: { locks: ['a', 'b'], waits: ['w1'] }, 2: { locks: [], waits: ['w1', 'w2'] } },
      { busy: { holders: 1, waiters: 3 }, w1: { holders: 1, waiters: 2 }, free: { holders: 0, waiters: 0 } },
    );
    const limits = configWith({ limits: { maxLocksPerSession: 2, maxWaitsPerSession: 2, maxWaitersPerLock: 3 } }).limits;
    assert.match(acquireLimitProblem(limits, acquire('c'), view)?.message ?? '', /holds 2 locks/);
    assert.equal(acquireLimitProblem(limits, acquire('a'), view), null, 'a retry of a held lock is the machine\'s to answer');
    const s2 = (name: string, wait: boolean): Request => ({ id: 1, op: 'acquire', session: 2, seq: 1, name, mode: 'exclusive', wait });
    assert.match(acquireLimitProblem(limits, s2('busy', true), view)?.message ?? '', /waits for 2 locks/);
    assert.equal(acquireLimitProblem(limits, s2('free', true), view), null, 'a free lock is granted, not waited for');
    assert.equal(acquireLimitProblem(limits, s2('busy', false), view), null, 'no wait, no queue');
    const roomy = configWith({ limits: { maxWaitersPerLock: 3 } }).limits;
    assert.match(acquireLimitProblem(roomy, s2('busy', true), view)?.message ?? '', /3 waiters/);
    assert.equal(acquireLimitProblem(roomy, { id: 1, op: 'get', name: 'busy' }, view), null);
    assert.equal(acquireLimitProblem(roomy, { ...s2('busy', true), session: 99 } as Request, view), null, 'an unknown session is the machine\'s to answer');
  });

  test('sessions per connection are counted when requested: pipelined opens cannot pass the limit', () => {
    const view = { appliedIndex: 0, sessionOwner: () => undefined, session: () => null, lock: () => null };
    const { conn } = gateFor({ limits: { maxSessionsPerConnection: 2 } }, view);
    const opens: Request[] = [1, 2, 3].map((id) => ({ id, op: 'openSession' }));
    assert.equal(conn.admit(opens[0]!), null);
    assert.equal(conn.admit(opens[1]!), null);
    assert.equal(conn.admit(opens[2]!)?.code, 'LIMIT_EXCEEDED', 'two opens in flight fill the connection');
    conn.observe(opens[0]!, { ok: false, error: { code: 'UNAVAILABLE', message: 'no leader' } });
    assert.equal(conn.admit(opens[2]!), null, 'a refused open frees its place');
  });

  test('sessions per connection; closed or expired ones stop counting', () => {
    const alive = new Set([11, 12]);
    const view = { appliedIndex: 11, sessionOwner: () => null, session: (id: number) => (alive.has(id) ? { locks: [], waits: [], elections: [] } : null), lock: () => null };
    const { conn } = gateFor({ limits: { maxSessionsPerConnection: 2 } }, view);
    const open: Request = { id: 1, op: 'openSession' };
    conn.observe(open, { ok: true, result: { session: 11, ttlMs: 1000 } });
    conn.observe({ id: 2, op: 'attach', session: 12 }, { ok: true, result: { ttlMs: 1000 } });
    assert.equal(conn.admit(open)?.code, 'LIMIT_EXCEEDED');
    assert.equal(conn.admit({ id: 3, op: 'attach', session: 12 }), null, 'attaching one it carries');
    alive.delete(12);
    assert.equal(conn.admit(open)?.code, 'LIMIT_EXCEEDED', 'session 12 is not applied here yet: it still counts');
    alive.delete(11);
    assert.equal(conn.admit(open), null, 'session 11 was applied here and is gone');
  });
});

describe('config sections', () => {
  test('defaults: auth off, TLS off, limits set', () => {
    const c = configWith({});
    assert.equal(c.auth, null);
    assert.deepEqual(c.tls, { peer: null, client: null });
    assert.equal(c.limits.maxFrameBytes, 1 << 20);
    assert.ok(c.limits.requestBurst >= c.limits.requestsPerSecond);
  });

  test('tokens, TLS paths and limits are read and checked', () => {
    const c = configWith({
      auth: AUTH,
      nodes: [{ id: 'n1', peerUrl: 'wss://127.0.0.1:7101', clientUrl: 'wss://127.0.0.1:7001', dataDir: 'd1' }],
      tls: { peer: { cert: 'c/{id}.crt', key: 'c/{id}.key', ca: '/ca.crt', requireClientCert: true }, client: { cert: '/a', key: '/b' } },
      limits: { requestsPerSecond: 10, maxNameBytes: 64 },
    });
    assert.deepEqual(c.auth!.tokens[0], { name: 'jobs', token: SECRET_A, prefixes: ['jobs/', 'shared/'], readOnly: false, admin: false });
    assert.equal(c.tls.peer!.cert, '/tmp/c/{id}.crt');
    assert.equal(c.tls.client!.requireClientCert, false);
    assert.equal(c.limits.requestsPerSecond, 10);
    assert.equal(c.limits.requestBurst, 2000);
  });

  const bad: [string, Record<string, unknown>][] = [
    ['auth.tokens', { auth: { tokens: [] } }],
    ['auth.tokens[0].token', { auth: { tokens: [{ name: 'a', token: 'short' }] } }],
    // Two tokens of one name are one identity (a rotation): they must grant the same.
    ['auth.tokens[1]', { auth: { tokens: [{ name: 'a', token: SECRET_A }, { name: 'a', token: SECRET_RO, readOnly: true }] } }],
    ['auth.tokens[1].token', { auth: { tokens: [{ name: 'a', token: SECRET_A }, { name: 'b', token: SECRET_A }] } }],
    ['auth.tokens[0].prefixes', { auth: { tokens: [{ name: 'a', token: SECRET_A, prefixes: [] }] } }],
    ['auth.tokens[0].admin', { auth: { tokens: [{ name: 'a', token: SECRET_A, readOnly: true, admin: true }] } }],
    ['nodes[0].peerUrl', { tls: { peer: { cert: '/a', key: '/b' } } }],
    ['tls.client.ca', { tls: { client: { cert: '/a', key: '/b', requireClientCert: true } } }],
    ['tls.both', { tls: { both: {} } }],
    ['limits.maxNameBytes', { limits: { maxNameBytes: 1000 } }],
    ['limits.nope', { limits: { nope: 1 } }],
  ];
  for (const [field, extra] of bad) {
    test(`refused: ${field}`, () => {
      assert.throws(() => configWith(extra), (e: unknown) => e instanceof ConfigError && e.field === field);
    });
  }

  test('a config error never repeats a token', () => {
    try {
      configWith({ auth: { tokens: [{ name: 'a', token: SECRET_A }, { name: 'b', token: SECRET_A }] } });
      assert.fail('accepted');
    } catch (e) {
      assert.ok(!(e as Error).message.includes(SECRET_A));
    }
  });

  test('wss:// URLs without a tls section are refused', () => {
    const raw = baseRaw({ nodes: [{ id: 'n1', peerUrl: 'ws://127.0.0.1:7101', clientUrl: 'wss://127.0.0.1:7001', dataDir: 'd' }] });
    assert.throws(() => validateConfig(raw, '/tmp'), /tls\.client is not configured/);
  });
});

describe('token bucket', () => {
  test('bursts up to its size, then the rate', () => {
    let now = 0;
    const b = new TokenBucket(10, 5, () => now);
    let taken = 0;
    while (b.take()) taken++;
    assert.equal(taken, 5);
    now += 100; // one token
    assert.equal(b.take(), true);
    assert.equal(b.take(), false);
    now += 10_000; // refills only up to the burst
    taken = 0;
    while (b.take()) taken++;
    assert.equal(taken, 5);
    now -= 50_000; // a clock stepping back drains nothing
    assert.equal(b.take(), false);
  });
});

