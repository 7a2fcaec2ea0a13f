// Sessions as an operator sees them, and revoking a stuck one, through the real CLI and the
// HTTP API against a real 3-node cluster with authentication: the holder's lock.signal fires,
// the lock waits out its lock-delay (as after an expiry), the next waiter gets a higher
// token, the node that took the revoke logs the operator's token name and reason, and a
// token that is not an admin token may neither revoke nor see others' sessions.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LockClient, PermissionDeniedError, SessionExpiredError } from '../../src/client/index.js';
import type { LockInfo, SessionView } from '../../src/protocol/client-protocol.js';
import { palisadeAt } from '../support/cli-process.js';
import { TestCluster, until } from '../support/cluster.js';
import { call, httpBase } from '../http/http-client.js';
import { SCOPED_TOKENS, scopedAuthConfig } from '../support/scoped-tokens.js';

const TOKENS = SCOPED_TOKENS;
const LOCK_DELAY_MS = 4_000;

describe('session list, show and revoke', () => {
  let c: TestCluster;
  const clients: LockClient[] = [];

  before(async () => {
    c = await TestCluster.started({
      credentials: { token: TOKENS.ops },
      sessions: { lockDelayMs: LOCK_DELAY_MS },
      extraConfig: scopedAuthConfig(),
    });
  });

  after(async () => {
    await Promise.all(clients.map((x) => x.close().catch(() => {})));
    await c?.stop();
  });

  async function client(token: string, label: string): Promise<LockClient> {
    const x = await LockClient.connect({ endpoints: c.endpoints, authToken: token, label, ttlMs: 20_000 });
    clients.push(x);
    return x;
  }

  const cli = (token: string, args: string[]) => palisadeAt(c.endpoints, args, { PALISADE_TOKEN: token }).done;

  test('the CLI lists who holds what; a revoke fires the holder\'s signal, lock-delay applies, the next waiter gets a higher token; the revoke is audit-logged', async () => {
    const holder = await client(TOKENS.jobs, 'stuck-worker:4242');
    const lock = await holder.acquire('jobs/nightly');
    const waiterClient = await client(TOKENS.jobs, 'next-worker:4343');
    const waiting = waiterClient.acquire('jobs/nightly', { waitMs: 60_000 });
    const other = await client(TOKENS.batch, 'batch-worker:1');
    await other.acquire('batch/rollup');

    // The operator's view: every session, with its owner, keepalive age and holdings.
    const listed = await until(async () => {
      const r = await cli(TOKENS.ops, ['session', 'list', '--json']);
      assert.equal(r.code, 0, r.err);
      const all = JSON.parse(r.out) as SessionView[];
      return all.some((s) => s.waits.some((w) => w.name === 'jobs/nightly')) ? all : null;
    }, 10_000, 'the waiter to be listed');
    const stuck = listed.find((s) => s.label === 'stuck-worker:4242')!;
    assert.equal(stuck.session, holder.sessionId);
    assert.equal(stuck.owner, 'jobs');
    assert.deepEqual(stuck.locks.map((l) => [l.name, String(l.token)]), [['jobs/nightly', String(lock.token)]]);
    assert.equal(typeof stuck.sinceKeepAliveMs, 'number', 'the leader answers, with its lease clock');
    assert.ok(stuck.leaseLeftMs! > 0 && stuck.leaseLeftMs! <= 20_000);
    assert.ok(listed.some((s) => s.owner === 'batch'));
    const table = await cli(TOKENS.ops, ['session', 'list', '--prefix', 'stuck-']);
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, new RegExp(`^${stuck.session}\\s+stuck-worker:4242\\s+jobs\\s+20s\\s+\\S+ ago\\s+jobs/nightly#${lock.token}`, 'm'));
    assert.doesNotMatch(table.out, /next-worker/);
    const shown = await cli(TOKENS.ops, ['session', 'show', String(stuck.session)]);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, new RegExp(`locks      jobs/nightly token ${lock.token} exclusive`));

    // A token that is not an admin token sees only its own sessions, and may not revoke.
    const mine = await cli(TOKENS.jobs, ['session', 'list', '--json']);
    assert.equal(mine.code, 0, mine.err);
    const jobsView = JSON.parse(mine.out) as SessionView[];
    assert.ok(jobsView.length >= 2 && jobsView.every((s) => s.owner === 'jobs'), mine.out);
    // Another token's session does not exist for it: the answer of a session that is not open.
    const foreign = await cli(TOKENS.batch, ['session', 'show', String(stuck.session)]);
    assert.equal(foreign.code, 1, foreign.err);
    assert.equal(foreign.err, `palisade: session ${stuck.session} is not open (never opened, closed, expired or revoked)\n`);
    const denied = await cli(TOKENS.jobs, ['session', 'revoke', String(stuck.session), '--reason', 'not mine to revoke']);
    assert.equal(denied.code, 77, denied.err);
    assert.match(denied.err, /PERMISSION_DENIED/);
    assert.equal(lock.signal.aborted, false);

    const revoked = await cli(TOKENS.ops, ['session', 'revoke', String(stuck.session), '--reason', 'hung since 03:10, INC-2291']);
    assert.equal(revoked.code, 0, revoked.err);
    const index = Number(/entry (\d+)/.exec(revoked.out)![1]);

    // The holder hears of it at once: its signal aborts, saying who and why.
    await until(() => lock.signal.aborted, 10_000, 'the holder\'s signal');
    const reason = lock.signal.reason as Error;
    const why = reason instanceof SessionExpiredError ? reason : reason.cause;
    assert.ok(why instanceof SessionExpiredError, `the signal's reason: ${String(reason)}`);
    assert.match(why.message, /revoked by an operator \(token "ops"\): hung since 03:10, INC-2291/);

    // As after an expiry, the lock is held back by lock-delay before the waiter gets it.
    const got = await cli(TOKENS.ops, ['get', 'jobs/nightly', '--json']);
    const info = JSON.parse(got.out) as LockInfo;
    assert.deepEqual([info.holders.length, info.delayed], [0, true], `right after the revoke: ${got.out}`);
    const next = await waiting;
    assert.ok(next.token > lock.token && next.token > index, `the next waiter's token ${next.token} exceeds ${lock.token} and the revoke's entry ${index}`);

    // The node that took the request (the CLI asks the first endpoint first) logged it.
    const line = c
      .logOf('n1')
      .split('\n')
      .find((l) => l.includes('"audit":"revokeSession"') && l.includes('session revoked by an operator'));
    assert.ok(line, 'an audit line on n1');
    const audit = JSON.parse(line) as Record<string, unknown>;
    assert.equal(audit.tokenName, 'ops');
    assert.equal(audit.session, stuck.session);
    assert.equal(audit.reason, 'hung since 03:10, INC-2291');
    assert.ok(c.logOf('n1').includes('"tokenName":"jobs"') && c.logOf('n1').includes('session revoke refused'), 'the refused attempt is logged too');

    // Gone: show exits 1, a second revoke says the session is not open.
    assert.equal((await cli(TOKENS.ops, ['session', 'show', String(stuck.session)])).code, 1);
    const again = await cli(TOKENS.ops, ['session', 'revoke', String(stuck.session), '--reason', 'twice']);
    assert.equal(again.code, 1);
    assert.match(again.err, /not open/);
  });

  test('the SDK\'s admin surface: list, show and revoke; a token that is not an admin token cannot revoke', async () => {
    const ops = await client(TOKENS.ops, 'sdk-operator');
    const tenant = await client(TOKENS.batch, 'sdk-tenant:1');
    const held = await tenant.acquire('batch/sdk');
    const id = tenant.sessionId!;
    const listed = await ops.admin.sessions({ prefix: 'sdk-tenant:' });
    assert.deepEqual(listed.map((v) => [v.session, v.owner, v.locks.map((l) => l.name)]), [[id, 'batch', ['batch/sdk']]]);
    assert.equal((await ops.admin.session(id))?.label, 'sdk-tenant:1');
    const own = await tenant.admin.sessions();
    assert.ok(own.every((v) => v.owner === 'batch'), 'a tenant lists its own sessions only');
    await assert.rejects(tenant.admin.revokeSession(id, 'self-revoke'), PermissionDeniedError);
    const { index } = await ops.admin.revokeSession(id, 'sdk test');
    assert.ok(index > held.token);
    await until(() => held.signal.aborted, 10_000, 'the tenant\'s signal');
    assert.equal(await ops.admin.session(id), null);
    await assert.rejects(ops.admin.revokeSession(id, 'again'), SessionExpiredError);
  });

  test('over HTTP: list, show and revoke (on a follower, which forwards), with the same rights', async () => {
    const leader = await c.waitForLeader();
    const follower = httpBase(c.nodes.find((n) => n.id !== leader)!.clientUrl);
    const open = await call(follower, 'POST', '/v1/session/open', { ttlMs: 20_000, label: 'http-holder' }, TOKENS.jobs);
    assert.equal(open.status, 200, JSON.stringify(open.body));
    const session = open.body.session as number;
    const acquired = await call(follower, 'POST', '/v1/lock/acquire', { session, seq: 1, name: 'jobs/http' }, TOKENS.jobs);
    assert.equal(acquired.body.status, 'granted');
    const put = await call(follower, 'POST', '/v1/kv/put', { session, seq: 2, key: 'jobs/svc/http', value: 'up', ephemeral: true }, TOKENS.jobs);
    assert.equal(put.status, 200, JSON.stringify(put.body));

    const listed = await call(follower, 'GET', '/v1/sessions?prefix=http-', undefined, TOKENS.ops);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.map((s: SessionView) => [s.session, s.owner, s.locks[0]?.name, s.ephemeralKeys]),
      [[session, 'jobs', 'jobs/http', ['jobs/svc/http']]],
    );
    assert.equal(typeof listed.body[0].locks[0].token, 'string', 'tokens are decimal strings over HTTP');
    const asBatch = await call(follower, 'GET', '/v1/sessions', undefined, TOKENS.batch);
    assert.ok(asBatch.body.every((s: SessionView) => s.owner === 'batch'));
    assert.equal((await call(follower, 'GET', `/v1/sessions?owner=jobs`, undefined, TOKENS.batch)).status, 403);

    assert.equal((await call(follower, 'POST', '/v1/session/revoke', { session, reason: 'no' }, TOKENS.jobs)).status, 403);
    assert.equal((await call(follower, 'POST', '/v1/session/revoke', { session }, TOKENS.ops)).status, 400, 'a reason is required');
    const revoke = await call(follower, 'POST', '/v1/session/revoke', { session, reason: 'http test' }, TOKENS.ops);
    assert.equal(revoke.status, 200, JSON.stringify(revoke.body));
    assert.equal(typeof revoke.body.index, 'number');
    const show = await call(follower, 'GET', `/v1/session?session=${session}`, undefined, TOKENS.ops);
    assert.deepEqual([show.status, show.body], [200, null]);
    assert.equal((await call(follower, 'GET', '/v1/kv?key=jobs/svc/http', undefined, TOKENS.jobs)).body, null, 'its ephemeral key went with it');
    const lock = await call(follower, 'GET', '/v1/lock?name=jobs/http', undefined, TOKENS.jobs);
    assert.equal(lock.body.delayed, true, 'lock-delay, as after an expiry');
    assert.equal((await call(follower, 'POST', '/v1/session/revoke', { session, reason: 'again' }, TOKENS.ops)).status, 404);
  });
});
