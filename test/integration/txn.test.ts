// The transaction against a real 3-node cluster, through the HTTP API and the real CLI: a
// branch applies whole or not at all, also when the leader is SIGKILLed with transactions in
// flight (a retry with the same seq answers the first result); a lock compare is a fence, and
// a stale token makes the failure branch apply instead.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { CLI, TestCluster } from '../support/cluster.js';
import { call, httpBase, type ApiAnswer } from '../http/http-client.js';

/** `palisade kv txn --endpoints E ...args` with `stdin` as the transaction. */
function cliTxn(endpoints: string[], args: string[], stdin: string): Promise<{ code: number | null; out: string; err: string }> {
  const p = spawn(process.execPath, [CLI, 'kv', 'txn', '--endpoints', endpoints.join(','), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (err += d));
  p.stdin.end(stdin);
  return new Promise((resolve) => p.on('exit', (code) => resolve({ code, out, err })));
}

describe('txn', () => {
  let c: TestCluster;

  before(async () => {
    c = await TestCluster.started();
  });

  after(async () => {
    await c?.stop();
  });

  test('a lock compare fences the writes: the holder\'s txn applies, a stale token\'s applies the failure branch (HTTP and CLI)', async () => {
    const base = httpBase(c.endpoints[0]!);
    const open = async (): Promise<number> => (await call(base, 'POST', '/v1/session/open', { ttlMs: 10_000 })).body.session as number;
    const a = await open();
    const grant = (await call(base, 'POST', '/v1/lock/acquire', { session: a, seq: 1, name: 'acct' })).body;
    const ok = await call(base, 'POST', '/v1/kv/txn', {
      session: a,
      seq: 2,
      compare: [{ target: 'lock', lock: 'acct', token: grant.token }, { target: 'absent', key: 'acct/balance' }],
      success: [
        { op: 'put', key: 'acct/balance', value: '100' },
        { op: 'put', key: 'acct/owner', valueBase64: Buffer.from('alice').toString('base64') },
      ],
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.deepEqual([ok.body.succeeded, ok.body.failed], [true, []]);
    const rev = ok.body.revision as number;
    for (const key of ['acct/balance', 'acct/owner']) assert.equal((await call(base, 'GET', `/v1/kv?key=${key}`)).body.revision, rev);

    // The lock moves on; a's token is stale.
    await call(base, 'POST', '/v1/lock/release', { session: a, seq: 3, name: 'acct', token: grant.token });
    const b = await open();
    assert.equal((await call(base, 'POST', '/v1/lock/acquire', { session: b, seq: 1, name: 'acct' })).body.status, 'granted');
    const stale = await call(base, 'POST', '/v1/kv/txn', {
      session: a,
      seq: 4,
      compare: [{ target: 'revision', key: 'acct/balance', op: 'eq', revision: rev }, { target: 'lock', lock: 'acct', token: grant.token }],
      success: [{ op: 'put', key: 'acct/balance', value: '0' }],
      failure: [{ op: 'put', key: 'acct/refused', value: 'stale token' }],
    });
    assert.equal(stale.status, 200, JSON.stringify(stale.body));
    assert.deepEqual([stale.body.succeeded, stale.body.failed], [false, [1]]);
    assert.equal((await call(base, 'GET', '/v1/kv?key=acct/balance')).body.value, '100', 'the success branch did not apply');
    assert.equal((await call(base, 'GET', '/v1/kv?key=acct/refused')).body.value, 'stale token');

    // The CLI: --lock takes the lock and fences the writes with it; a stale compare exits 65.
    const fenced = await cliTxn(c.endpoints, ['--lock', 'cli-acct', '--json'], JSON.stringify({ success: [{ op: 'put', key: 'acct/cli', value: 'fenced' }] }));
    assert.equal(fenced.code, 0, fenced.err);
    const outcome = JSON.parse(fenced.out) as { succeeded: boolean; revision: number; token: number };
    assert.equal(outcome.succeeded, true);
    assert.equal((await call(base, 'GET', '/v1/kv?key=acct/cli')).body.revision, outcome.revision);
    const refused = await cliTxn(c.endpoints, [], JSON.stringify({ compare: [{ target: 'lock', lock: 'acct', token: Number(grant.token) }], success: [{ op: 'delete', key: 'acct/balance' }] }));
    assert.equal(refused.code, 65, refused.err);
    assert.match(refused.out, /compare\(s\) 0 did not hold/);
    assert.notEqual((await call(base, 'GET', '/v1/kv?key=acct/balance')).body, null);
    const bad = await cliTxn(c.endpoints, [], '{"success": [{"op": "put", "key": "x"}]}');
    assert.equal(bad.code, 64, bad.err);
  });

  test('atomic across a leader SIGKILL: each txn\'s keys are all there with one revision, or none; a retry answers the first result', async () => {
    const leader = await c.waitForLeader();
    const leaderBase = httpBase(c.node(leader).clientUrl);
    const survivors = c.nodes.filter((n) => n.id !== leader).map((n) => httpBase(n.clientUrl));
    const session = (await call(survivors[0]!, 'POST', '/v1/session/open', { ttlMs: 20_000 })).body.session as number;
    const N = 24;
    const body = (i: number) => ({
      session,
      seq: i + 1,
      compare: [{ target: 'absent', key: `move/${i}/from` }],
      success: ['from', 'to', 'log'].map((k) => ({ op: 'put', key: `move/${i}/${k}`, value: `${i}` })),
    });
    // Sent to the leader all at once, which is killed while they are in flight.
    const inFlight = Array.from({ length: N }, (_, i) => call(leaderBase, 'POST', '/v1/kv/txn', body(i)).catch((e: unknown) => e));
    await new Promise((r) => setTimeout(r, 5));
    await c.signal(leader, 'SIGKILL');
    await Promise.all(inFlight);
    await c.waitForLeader(15_000, [leader]);

    // (How many applied before the kill depends on timing; every one must be whole.)
    const keep = setInterval(() => void call(survivors[0]!, 'POST', '/v1/session/keepalive', { session }).catch(() => {}), 2_000);
    try {
      for (let i = 0; i < N; i++) {
        const read = async (k: string): Promise<ApiAnswer> => call(survivors[1]!, 'GET', `/v1/kv?key=move/${i}/${k}`);
        const [from, to, log] = await Promise.all(['from', 'to', 'log'].map(read));
        const present = [from!, to!, log!].map((r) => r.body !== null);
        assert.ok(present.every((p) => p === present[0]), `txn ${i}: some of its keys without the others: ${JSON.stringify(present)}`);
        if (present[0]) {
          assert.equal(to!.body.revision, from!.body.revision);
          assert.equal(log!.body.revision, from!.body.revision);
        }
        // The client's retry, same seq, on a survivor: the first answer if it applied, else now.
        const retry = await call(survivors[i % 2]!, 'POST', '/v1/kv/txn', body(i));
        assert.equal(retry.status, 200, `txn ${i}: ${JSON.stringify(retry.body)}`);
        assert.equal(retry.body.succeeded, true, `txn ${i} applied once, and its retry says so`);
        const now = await read('from');
        assert.equal(retry.body.revision, now.body.revision, `txn ${i}: the retry answers the revision its keys have`);
        if (present[0]) assert.equal(now.body.revision, from!.body.revision, `txn ${i} was not applied twice`);
      }
    } finally {
      clearInterval(keep);
    }
  });
});
