// Ephemeral keys (service registration) through the real CLI against a real 3-node cluster:
// `palisade put KEY VALUE --ephemeral` holds the key in its session, and the key is deleted in
// the entry that ends the session: when the process is killed (expiry), when it is stopped
// (close), when an operator revokes it. A `palisade watch` sees each delete, once. Fencing
// still holds: an ephemeral put with a stale token is refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { palisadeAt, type CliRun } from '../support/cli-process.js';
import { TestCluster, until } from '../support/cluster.js';
import { call, httpBase } from '../http/http-client.js';

interface WatchLine {
  type: 'put' | 'delete';
  key: string;
  value?: string;
  revision: number;
}

describe('ephemeral keys', () => {
  let c: TestCluster;
  let watcher: CliRun;
  const runs: CliRun[] = [];

  before(async () => {
    c = await TestCluster.started({ sessions: { minTtlMs: 600 } });
    watcher = palisadeAt(c.endpoints, ['watch', 'svc/', '--json']);
    runs.push(watcher);
    await until(() => /watching/.test(watcher.errors()), 15_000, 'the watch to start');
  });

  after(async () => {
    for (const r of runs) r.p.kill('SIGKILL');
    await c?.stop();
  });

  const lines = (): WatchLine[] =>
    watcher
      .output()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as WatchLine);

  /** Starts `put KEY VALUE --ephemeral` and waits until the key is there; its session id. */
  async function register(key: string, extra: string[] = []): Promise<{ run: CliRun; session: number; revision: number }> {
    const run = palisadeAt(c.endpoints, ['put', key, `at-${key}`, '--ephemeral', '--json', ...extra]);
    runs.push(run);
    const out = await until(() => (run.output().includes('"session"') ? run.output() : null), 15_000, `${key} registered`);
    const { session, revision } = JSON.parse(out.split('\n')[0]!) as { session: number; revision: number };
    await until(() => lines().some((l) => l.key === key && l.type === 'put'), 10_000, `the watcher sees ${key}`);
    return { run, session, revision };
  }

  async function deletedOnce(key: string): Promise<WatchLine> {
    const del = await until(() => lines().find((l) => l.key === key && l.type === 'delete'), 15_000, `the watcher sees ${key} deleted`);
    const got = await palisadeAt(c.endpoints, ['kv', 'get', key]).done;
    assert.equal(got.code, 1, `${key} is gone: ${got.out}${got.err}`);
    return del;
  }

  test('deleted when its holder is killed (the session expires)', async () => {
    const { run, revision } = await register('svc/killed', ['--ttl', '1000']);
    run.p.kill('SIGKILL');
    const del = await deletedOnce('svc/killed');
    assert.ok(del.revision > revision);
  });

  test('deleted when its holder stops (the session is closed); the command exits 0', async () => {
    const { run } = await register('svc/stopped');
    run.p.kill('SIGTERM');
    const done = await run.done;
    assert.equal(done.code, 0, done.err);
    await deletedOnce('svc/stopped');
  });

  test('deleted when an operator revokes the session; the holder exits 75 saying so', async () => {
    const { run, session } = await register('svc/revoked');
    const r = await palisadeAt(c.endpoints, ['session', 'revoke', String(session), '--reason', 'draining web-3']).done;
    assert.equal(r.code, 0, r.err);
    const done = await run.done;
    assert.equal(done.code, 75, done.err);
    assert.match(done.err, /revoked by an operator: draining web-3/);
    await deletedOnce('svc/revoked');
  });

  test('each change is seen once, in revision order', () => {
    const all = lines();
    const revisions = all.map((l) => l.revision);
    assert.deepEqual(revisions, [...revisions].sort((a, b) => a - b), 'in order');
    const seen = new Set(all.map((l) => `${l.key}@${l.revision}`));
    assert.equal(seen.size, all.length, 'no change twice');
    assert.deepEqual(all.filter((l) => l.type === 'delete').map((l) => l.key).sort(), ['svc/killed', 'svc/revoked', 'svc/stopped']);
  });

  test('fencing holds for ephemeral puts: a stale token is refused (HTTP)', async () => {
    const base = httpBase(c.endpoints[1]!);
    const session = (await call(base, 'POST', '/v1/session/open', { ttlMs: 5_000 })).body.session as number;
    const grant = (await call(base, 'POST', '/v1/lock/acquire', { session, seq: 1, name: 'svc-lock' })).body;
    assert.equal(grant.status, 'granted');
    const fresh = await call(base, 'POST', '/v1/kv/put', { session, seq: 2, key: 'svc/fenced', value: 'v', ephemeral: true, fence: { lock: 'svc-lock', token: grant.token } });
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    await call(base, 'POST', '/v1/lock/release', { session, seq: 3, name: 'svc-lock', token: grant.token });
    const stale = await call(base, 'POST', '/v1/kv/put', { session, seq: 4, key: 'svc/fenced', value: 'w', ephemeral: true, fence: { lock: 'svc-lock', token: grant.token } });
    assert.deepEqual([stale.status, stale.body.error.code], [409, 'FENCED']);
    await call(base, 'POST', '/v1/session/close', { session, seq: 5 });
    assert.equal((await call(base, 'GET', '/v1/kv?key=svc/fenced')).body, null);
  });
});
