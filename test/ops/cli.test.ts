// `palisade locks` and `palisade status --watch` against a real cluster (the built CLI).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { rpc } from '../../src/protocol/rpc.js';
import { CLI, TestCluster } from '../support/cluster.js';

const run = promisify(execFile);
let cluster: TestCluster;
let leader: string;

before(async () => {
  cluster = await TestCluster.create();
  await cluster.startAll();
  leader = await cluster.waitForLeader();
});

after(async () => {
  await cluster?.stop();
});

test('palisade locks lists holders and tokens, filters by prefix, prints JSON', async () => {
  const url = cluster.node(leader).clientUrl;
  const s = await rpc(url, { op: 'openSession', ttlMs: 30_000 });
  const a = await rpc(url, { op: 'acquire', session: s.session, seq: 1, name: 'cli/a', mode: 'exclusive', wait: false });
  assert.ok(a.status === 'granted');
  await rpc(url, { op: 'acquire', session: s.session, seq: 2, ackedSeq: 1, name: 'other/b', mode: 'shared', wait: false });
  const endpoints = cluster.endpoints.join(',');

  const table = await run(process.execPath, [CLI, 'locks', '--endpoints', endpoints]);
  const lines = table.stdout.trim().split('\n');
  assert.match(lines[0]!, /^NAME\s+MODE\s+SESSION\s+TOKEN\s+WAITERS\s+STATE$/);
  assert.equal(lines.length, 3);
  assert.match(lines[1]!, new RegExp(`^cli/a\\s+exclusive\\s+${s.session}\\s+${a.token}\\s+0\\s+held$`));

  const json = await run(process.execPath, [CLI, 'locks', '--endpoints', endpoints, '--prefix', 'cli/', '--json']);
  const locks = JSON.parse(json.stdout) as { name: string; holders: { session: number; token: number }[] }[];
  assert.deepEqual(locks.map((l) => l.name), ['cli/a']);
  assert.deepEqual(locks[0]!.holders.map((h) => [h.session, h.token]), [[s.session, a.token]]);

  // The first endpoint is dead: the next one answers.
  const dead = 'ws://127.0.0.1:1';
  const fallback = await run(process.execPath, [CLI, 'locks', '--endpoints', `${dead},${endpoints}`, '--json']);
  assert.equal((JSON.parse(fallback.stdout) as unknown[]).length, 2);
});

test('palisade status --watch redraws the table in place every 500 ms', async () => {
  const child = spawn(process.execPath, [CLI, 'status', '--watch', '--endpoints', cluster.endpoints.join(',')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const deadline = Date.now() + 10_000;
  while ((out.match(/\x1b\[H\x1b\[2J/g) ?? []).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGINT');
  await new Promise((r) => child.once('exit', r));
  const frames = out.split('\x1b[H\x1b[2J').filter(Boolean);
  assert.ok(frames.length >= 3, `expected 3 redraws, got ${frames.length}`);
  const last = frames[frames.length - 1]!;
  assert.match(last, new RegExp(`leader ${leader}`));
  assert.match(last, /ID\s+ROLE\s+TERM/);
  assert.match(last, /3 of 3 up: survives 1 failure/);
  for (const n of cluster.nodes) assert.match(last, new RegExp(`^${n.id}\\s+(leader|follower)`, 'm'));
});
