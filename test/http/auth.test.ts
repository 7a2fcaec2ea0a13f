// Bearer tokens over the HTTP API against a real 3-node cluster with auth: the websocket's
// tokens, scopes and session ownership, answered with HTTP statuses (401, 403, 404, 429).
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

const TOKENS = {
  jobs: 'http-jobs-token-0123456789',
  batch: 'http-batch-token-0123456789',
  reader: 'http-reader-token-0123456789',
  ops: 'http-admin-token-0123456789',
};

describe('HTTP API: tokens, scopes and limits', { timeout: 120_000 }, () => {
  let c: TestCluster;
  let follower: string;
  let leader: string;

  before(async () => {
    c = await TestCluster.started({
      credentials: { token: TOKENS.ops },
      extraConfig: {
        auth: {
          tokens: [
            { name: 'jobs', token: TOKENS.jobs, prefixes: ['jobs/'] },
            { name: 'batch', token: TOKENS.batch, prefixes: ['batch/'] },
            { name: 'reader', token: TOKENS.reader, readOnly: true },
            { name: 'ops', token: TOKENS.ops, admin: true },
          ],
        },
        limits: { requestsPerSecond: 20, requestBurst: 20 },
      },
    });
    const l = await c.waitForLeader();
    leader = httpBase(c.node(l).clientUrl);
    follower = httpBase(c.nodes.find((n) => n.id !== l)!.clientUrl);
  });

  after(async () => {
    await c?.stop();
  });

  it('refuses a missing, malformed or unknown token with 401, before reading the body', async () => {
    const none = await call(follower, 'POST', '/v1/session/open', {});
    assert.equal(none.status, 401);
    assert.equal(none.body.error.code, 'UNAUTHENTICATED');
    assert.match(none.body.error.message, /Authorization: Bearer/);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');
    const basic = await fetch(`${follower}/v1/session/open`, { method: 'POST', headers: { authorization: 'Basic Zm9vOmJhcg==' }, body: '{}' });
    assert.equal(basic.status, 401);
    const wrong = await call(follower, 'POST', '/v1/session/open', {}, 'not-a-token');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.message, 'the token was not accepted');
    // A body far over the limit from a client without a token is not read: 401, not 413.
    const big = await call(follower, 'POST', '/v1/kv/put', { key: 'k', value: 'x'.repeat(2 << 20) });
    assert.equal(big.status, 401);
    const read = await call(follower, 'GET', '/v1/lock?name=jobs/a');
    assert.equal(read.status, 401, 'reads need a token too');
  });

  it('answers 403 outside a token\'s scope, 404 for an unknown session and for another token\'s, alike', async () => {
    const open = await call(follower, 'POST', '/v1/session/open', { label: 'jobs-worker' }, TOKENS.jobs);
    assert.equal(open.status, 200, JSON.stringify(open.body));
    const s = open.body.session as number;
    const mine = await call(follower, 'POST', '/v1/lock/acquire', { session: s, seq: 1, name: 'jobs/nightly' }, TOKENS.jobs);
    assert.equal(mine.body.status, 'granted');
    const outside = await call(follower, 'POST', '/v1/lock/acquire', { session: s, seq: 2, name: 'batch/nightly' }, TOKENS.jobs);
    assert.equal(outside.status, 403);
    assert.equal(outside.body.error.code, 'PERMISSION_DENIED');
    const theirs = await call(leader, 'POST', '/v1/session/keepalive', { session: s }, TOKENS.batch);
    assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
    assert.deepEqual(theirs.body.error, { code: 'UNKNOWN_SESSION', message: `session ${s} is not open (never opened, closed or expired)` }, 'another token\'s session looks like no session');
    const rs = await call(follower, 'POST', '/v1/session/open', {}, TOKENS.reader);
    assert.equal(rs.status, 200, 'a read-only token may open a session (as over the websocket)');
    const readOnly = await call(follower, 'POST', '/v1/lock/acquire', { session: rs.body.session, seq: 1, name: 'jobs/other' }, TOKENS.reader);
    assert.equal(readOnly.status, 403);
    assert.match(readOnly.body.error.message, /read-only/);
    const lookup = await call(follower, 'GET', '/v1/lock?name=jobs/nightly', undefined, TOKENS.reader);
    assert.equal(lookup.status, 200);
    assert.equal(lookup.body.holders[0].token, mine.body.token);
    const unknown = await call(follower, 'POST', '/v1/session/keepalive', { session: 999_999 }, TOKENS.ops);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'UNKNOWN_SESSION');
  });

  it('answers 429 past the per-connection request rate', async () => {
    // 200 requests queued on one keep-alive connection: the node takes them back to back,
    // far faster than 20 per second once the burst of 20 is spent.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answers = await Promise.all(Array.from({ length: 200 }, () => get(`${leader}/v1/status`, agent, TOKENS.ops)));
      const limited = answers.filter((a) => a.status === 429);
      assert.ok(limited.length > 0, 'some request was rate limited');
      assert.ok(answers.filter((a) => a.status === 200).length >= 20, 'the burst was served');
      assert.equal(JSON.parse(limited[0]!.body).error.code, 'RATE_LIMITED');
      assert.equal(limited[0]!.retryAfter, '1');
    } finally {
      agent.destroy();
    }
  });
});

function get(url: string, agent: Agent, token: string): Promise<{ status: number; body: string; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}
