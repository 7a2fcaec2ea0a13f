// The exit codes of docs/cli.md, through the real CLI against real processes: usage, denied,
// wait timeout, a cluster down (fast, when every endpoint refuses) and a cluster without
// quorum (said so). Signals (130/143) are in integration/cli-signals, kv codes in e2e/cli-kv.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { CLI, TestCluster, freePort, until } from '../support/cluster.js';
import { RawClient, RawSession } from '../support/raw-client.js';

const FULL = 'full-access-token-0123456789';
const JOBS = 'jobs-only-token-0123456789';

let c: TestCluster;
before(async () => {
  c = await TestCluster.started({
    credentials: { token: FULL },
    extraConfig: { auth: { tokens: [{ name: 'full', token: FULL }, { name: 'jobs', token: JOBS, prefixes: ['jobs/'] }] } },
  });
});
after(() => c?.stop());

interface Run {
  code: number;
  out: string;
  err: string;
  ms: number;
}

function palisade(args: string[], env: Record<string, string> = { PALISADE_TOKEN: FULL }): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PALISADE_CONFIG: 'no-such-config.json', ...env }, timeout: 60_000 }, (e, out, err) => {
      const code = e ? (typeof e.code === 'number' ? e.code : -1) : 0;
      resolve({ code, out, err, ms: Date.now() - started });
    });
  });
}

const eps = () => ['--endpoints', c.endpoints.join(',')];

test('0: status with every node up says it survives one failure', async () => {
  const r = await palisade(['status', ...eps()]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /3 of 3 up: survives 1 failure/);
});

test('64: usage errors (a missing argument, an unknown command, an http:// endpoint, nothing to run)', async () => {
  assert.equal((await palisade(['lock'])).code, 64);
  assert.equal((await palisade(['no-such-command'])).code, 64);
  const http = await palisade(['get', 'x', '--endpoints', 'http://127.0.0.1:7301']);
  assert.equal(http.code, 64);
  assert.match(http.err, /HTTP URL; give the nodes' client URLs \(ws:\/\/ or wss:\/\//);
  assert.equal((await palisade(['lock', 'jobs/x', ...eps()])).code, 64);
  assert.equal((await palisade(['--help'])).code, 0);
});

test('77: a refused token or a name outside the token\'s prefixes (not 69)', async () => {
  const denied = await palisade(['lock', 'other/x', ...eps(), '--', 'true'], { PALISADE_TOKEN: JOBS });
  assert.equal(denied.code, 77, denied.err);
  assert.match(denied.err, /PERMISSION_DENIED/);
  const none = await palisade(['get', 'jobs/x', ...eps()], { PALISADE_TOKEN: '' });
  assert.equal(none.code, 77, none.err);
  assert.match(none.err, /requires a token/);
  const locks = await palisade(['locks', ...eps()], { PALISADE_TOKEN: 'wrong-token-0123456789' });
  assert.equal(locks.code, 77, locks.err);
});

test('74: not acquired within --wait', async () => {
  const raw = await RawClient.connect(c.endpoints[0]!);
  try {
    await raw.ok({ op: 'hello', version: 1, token: FULL });
    const s = await RawSession.open(raw, 30_000);
    const held = await s.call({ op: 'acquire', name: 'jobs/busy', mode: 'exclusive', wait: false });
    assert.ok(held.ok);
    const r = await palisade(['lock', 'jobs/busy', ...eps(), '--wait', '200', '--', 'true'], { PALISADE_TOKEN: JOBS });
    assert.equal(r.code, 74, r.err);
  } finally {
    raw.close();
  }
});

test('69 at once when every endpoint refuses: lock, get, kv get, status, locks', async () => {
  const dead = `ws://127.0.0.1:${await freePort()},ws://127.0.0.1:${await freePort()}`;
  for (const args of [['lock', 'x', '--endpoints', dead, '--', 'true'], ['get', 'x', '--endpoints', dead], ['kv', 'get', 'k', '--endpoints', dead], ['status', '--endpoints', dead], ['locks', '--endpoints', dead]]) {
    const r = await palisade(args);
    assert.equal(r.code, 69, `${args.join(' ')}: ${r.err}`);
    assert.ok(r.ms < 5_000, `${args[0]} took ${r.ms} ms`);
  }
  const r = await palisade(['get', 'x', '--endpoints', dead]);
  assert.match(r.err, /no node is listening: every endpoint refused the connection/);
});

test('69 with 1 of 3 nodes up says there is no quorum; status names the unreachable nodes by id', async () => {
  const leader = await c.waitForLeader();
  const others = c.nodes.map((n) => n.id).filter((id) => id !== leader);
  const survivor = others[0]!;
  for (const id of c.nodes.map((n) => n.id).filter((id) => id !== survivor)) await c.signal(id, 'SIGKILL');
  await until(async () => (await c.status(survivor))?.leader === null, 15_000, 'the survivor sees no leader');
  const get = await palisade(['get', 'jobs/x', ...eps()]);
  assert.equal(get.code, 69, get.err);
  assert.match(get.err, /1 of 3 nodes answer \(n\d\) and none has a leader: no quorum \(2 of 3 needed\)/);
  const status = await palisade(['status', ...eps()]);
  assert.equal(status.code, 0, status.err);
  assert.match(status.out, /1 of 3 up: no quorum/);
  for (const id of c.nodes.map((n) => n.id).filter((id) => id !== survivor)) assert.match(status.out, new RegExp(`^${id}\\s+unreachable`, 'm'));
  assert.doesNotMatch(status.out, /\?\d/);
});
