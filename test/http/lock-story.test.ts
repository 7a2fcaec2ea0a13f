// The HTTP/JSON API against a real 3-node cluster (real processes, LevelDB, 127.0.0.1):
// the lock story end to end through followers, exactly-once retries, a long poll that
// times out leaving nothing queued, and bodies the node must refuse without going down.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

describe('HTTP API: sessions and locks', { timeout: 120_000 }, () => {
  let c: TestCluster;
  let leader: string;
  let follower: string;
  let other: string;

  before(async () => {
    c = await TestCluster.started({ extraConfig: { limits: { maxFrameBytes: 64 * 1024 } } });
    const l = await c.waitForLeader();
    const fs = c.nodes.filter((n) => n.id !== l);
    leader = httpBase(c.node(l).clientUrl);
    follower = httpBase(fs[0]!.clientUrl);
    other = httpBase(fs[1]!.clientUrl);
  });

  after(async () => {
    await c?.stop();
  });

  async function open(base: string, ttlMs = 10_000): Promise<number> {
    const r = await call(base, 'POST', '/v1/session/open', { ttlMs, label: 'http-test' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(typeof r.body.session, 'number');
    return r.body.session as number;
  }

  it('opens, acquires with a wait, keeps alive and releases, through followers', async () => {
    const a = await open(follower);
    const b = await open(other);
    const got = await call(follower, 'POST', '/v1/lock/acquire', { session: a, seq: 1, name: 'reports/nightly', waitMs: 5_000 });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.status, 'granted');
    assert.match(got.body.token, /^[1-9][0-9]*$/, 'the token is a decimal string');

    // b waits (long poll) while a holds; a's release hands the lock to b within b's wait.
    const waiting = call(other, 'POST', '/v1/lock/acquire', { session: b, seq: 1, name: 'reports/nightly', waitMs: 20_000 });
    const queued = await untilWaiting(follower, 'reports/nightly', b);
    assert.equal(queued.holders[0].token, got.body.token);

    const ka = await call(follower, 'POST', '/v1/session/keepalive', { session: a });
    assert.equal(ka.status, 200);
    assert.equal(ka.body.ttlMs, 10_000);
    // Many at once: each session's TTL in order, null for one that is not open.
    const many = await call(follower, 'POST', '/v1/sessions/keepalive', { sessions: [a, 999_999, b] });
    assert.equal(many.status, 200, JSON.stringify(many.body));
    assert.deepEqual(many.body.ttls, [10_000, null, 10_000]);
    const tooMany = await call(follower, 'POST', '/v1/sessions/keepalive', { sessions: Array.from({ length: 1_001 }, (_, i) => i + 1) });
    assert.equal(tooMany.status, 400, JSON.stringify(tooMany.body));

    const rel = await call(follower, 'POST', '/v1/lock/release', { session: a, seq: 3, name: 'reports/nightly', token: got.body.token });
    assert.equal(rel.status, 200, JSON.stringify(rel.body));
    const handed = await waiting;
    assert.equal(handed.status, 200, JSON.stringify(handed.body));
    assert.equal(handed.body.status, 'granted');
    assert.ok(BigInt(handed.body.token) > BigInt(got.body.token), 'tokens only grow');

    const stale = await call(leader, 'POST', '/v1/lock/release', { session: a, seq: 4, name: 'reports/nightly', token: got.body.token });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'NOT_HOLDER');
    assert.equal(stale.body.error.currentToken, handed.body.token, 'currentToken is a decimal string too');

    const list = await call(leader, 'GET', '/v1/locks?prefix=reports/');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((l: { name: string }) => l.name), ['reports/nightly']);
    const closed = await call(other, 'POST', '/v1/session/close', { session: b, seq: 3 });
    assert.equal(closed.status, 200, JSON.stringify(closed.body));
    const free = await call(follower, 'GET', '/v1/lock?name=reports/nightly');
    assert.deepEqual(free.body.holders, []);
    const gone = await call(follower, 'POST', '/v1/session/keepalive', { session: b });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error.code, 'UNKNOWN_SESSION');
  });

  it('a retried acquire with the same seq answers the same grant and grants nothing more', async () => {
    const s = await open(follower);
    const first = await call(follower, 'POST', '/v1/lock/acquire', { session: s, seq: 1, name: 'retry/once' });
    const again = await call(other, 'POST', '/v1/lock/acquire', { session: s, seq: 1, name: 'retry/once' });
    assert.equal(first.body.status, 'granted');
    // The same grant (the index is the retry's own entry, as over the websocket).
    assert.equal(again.body.status, 'granted');
    assert.equal(again.body.token, first.body.token);
    const lock = await call(leader, 'GET', '/v1/lock?name=retry/once');
    assert.deepEqual(lock.body.holders, [{ session: s, token: first.body.token, mode: 'exclusive' }]);
    // A long-poll retry of a queued acquire: the same answer, still one wait at most.
    const t = await open(follower);
    const w1 = call(follower, 'POST', '/v1/lock/acquire', { session: t, seq: 1, name: 'retry/once', waitMs: 20_000 });
    await untilWaiting(leader, 'retry/once', t);
    const w2 = call(other, 'POST', '/v1/lock/acquire', { session: t, seq: 1, name: 'retry/once', waitMs: 20_000 });
    const during = await call(leader, 'GET', '/v1/lock?name=retry/once');
    assert.deepEqual(during.body.waiters, [{ session: t, mode: 'exclusive' }]);
    await call(follower, 'POST', '/v1/lock/release', { session: s, seq: 2, name: 'retry/once', token: first.body.token });
    const [g1, g2] = await Promise.all([w1, w2]);
    assert.equal(g1.body.status, 'granted');
    assert.equal(g2.body.token, g1.body.token, 'both requests report the one grant');
  });

  it('a long poll that times out withdraws its wait: nothing stays queued, and its retry agrees', async () => {
    const holder = await open(leader);
    const s = await open(follower);
    const held = await call(leader, 'POST', '/v1/lock/acquire', { session: holder, seq: 1, name: 'poll/timeout' });
    assert.equal(held.body.status, 'granted');
    const req = { session: s, seq: 1, name: 'poll/timeout', waitMs: 300 };
    const started = Date.now();
    const timedOut = await call(follower, 'POST', '/v1/lock/acquire', req);
    assert.equal(timedOut.status, 200, JSON.stringify(timedOut.body));
    assert.equal(timedOut.body.status, 'timeout');
    assert.ok(Date.now() - started >= 300);
    const lock = await call(other, 'GET', '/v1/lock?name=poll/timeout');
    assert.deepEqual(lock.body.waiters, [], 'the wait was withdrawn');
    const retried = await call(other, 'POST', '/v1/lock/acquire', req);
    assert.equal(retried.body.status, 'timeout');
    assert.deepEqual((await call(leader, 'GET', '/v1/lock?name=poll/timeout')).body.waiters, []);
    // The session's next write uses seq + 2; a try answers busy with the holder's token.
    const busy = await call(follower, 'POST', '/v1/lock/acquire', { session: s, seq: 3, name: 'poll/timeout' });
    assert.equal(busy.body.status, 'busy');
    assert.equal(busy.body.holders[0].token, held.body.token);
  });

  it('a client that goes away mid-poll leaves nothing queued', async () => {
    const holder = await open(leader);
    const s = await open(follower);
    await call(leader, 'POST', '/v1/lock/acquire', { session: holder, seq: 1, name: 'poll/abort' });
    const ac = new AbortController();
    const req = fetch(`${follower}/v1/lock/acquire`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ session: s, seq: 1, name: 'poll/abort', waitMs: 30_000 }), signal: ac.signal });
    await untilWaiting(leader, 'poll/abort', s);
    ac.abort();
    await req.catch(() => undefined);
    await untilLock(leader, 'poll/abort', (l) => l.waiters.length === 0);
  });

  it('refuses malformed, oversized and deep bodies, unknown paths and methods, and stays up', async () => {
    const bad = await call(follower, 'POST', '/v1/session/open', '{"ttlMs": ');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'BAD_FRAME');
    const notObject = await call(follower, 'POST', '/v1/session/open', '[1,2]');
    assert.equal(notObject.status, 400);
    const deep = await call(follower, 'POST', '/v1/session/open', '{"a":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}');
    assert.equal(deep.status, 400);
    assert.match(deep.body.error.message, /deeper/);
    const big = await call(follower, 'POST', '/v1/kv/put', { session: 1, seq: 1, key: 'k', value: 'x'.repeat(200 * 1024) });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, 'FRAME_TOO_LARGE');
    const invalid = await call(follower, 'POST', '/v1/lock/acquire', { session: 1, seq: 1, name: 'x', mode: 'sideways' });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.code, 'INVALID_ARGUMENT');
    assert.match(invalid.body.error.message, /acquire\.mode/, 'the websocket validator\'s message');
    // A body not said to be JSON (what a cross-site form or a no-cors fetch can send) is 415.
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const form = await fetch(`${follower}/v1/session/open`, { method: 'POST', headers: { 'content-type': type }, body: '{"ttlMs":5000}' });
      assert.equal(form.status, 415, type);
      assert.equal(((await form.json()) as { error: { code: string } }).error.code, 'BAD_FRAME');
    }
    const unknown = await call(follower, 'GET', '/v1/nope');
    assert.equal(unknown.status, 404);
    const wrong = await call(follower, 'GET', '/v1/lock/acquire');
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'POST');
    const status = await call(follower, 'GET', '/v1/status');
    assert.equal(status.status, 200);
    assert.equal(typeof status.body.commitIndex, 'number');
    assert.ok(await open(follower) > 0, 'the node still serves');
  });
});

interface LockJson {
  holders: { session: number; token: string; mode: string }[];
  waiters: { session: number; mode: string }[];
}

/** Poll a lock (another process's state: there is no event to wait on from here). */
async function untilLock(base: string, name: string, ok: (l: LockJson) => boolean): Promise<LockJson> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await call(base, 'GET', `/v1/lock?name=${encodeURIComponent(name)}`);
    if (r.status === 200 && ok(r.body as LockJson)) return r.body as LockJson;
    if (Date.now() > deadline) throw new Error(`lock ${name} never reached the expected state: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

function untilWaiting(base: string, name: string, session: number): Promise<LockJson> {
  return untilLock(base, name, (l) => l.waiters.some((w) => w.session === session));
}
