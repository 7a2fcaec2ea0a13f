// `palisade put`, `palisade kv get|delete|watch` and `palisade fence-sql` as a user runs
// them: real CLI processes (dist/) against a real cluster.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI, TestCluster } from '../support/cluster.js';
import { LockClient } from '../../src/client/index.js';
import { PostgresFence } from '../../src/fence/postgres.js';
import { formatChange } from '../../src/cli/kv-commands.js';

let c: TestCluster;
let sdk: LockClient;
before(async () => {
  c = await TestCluster.started();
  sdk = await LockClient.connect({ endpoints: c.endpoints });
});
after(async () => {
  await sdk?.close();
  await c?.stop();
});

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function palisade(args: string[], withEndpoints = true) {
  const p = spawn(process.execPath, [CLI, ...args, ...(withEndpoints ? ['--endpoints', c.endpoints.join(',')] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  p.stdout.setEncoding('utf8');
  p.stderr.setEncoding('utf8');
  p.stdout.on('data', (d: string) => (out += d));
  p.stderr.on('data', (d: string) => (err += d));
  const done = new Promise<Run>((r) => p.on('exit', (code) => r({ code, out, err })));
  return { p, done };
}

const run = (args: string[], withEndpoints = true): Promise<Run> => palisade(args, withEndpoints).done;

test('put, then kv get prints the value (--json: key, value, revision); a missing key exits 1', async () => {
  const put = await run(['put', 'cli/greeting', 'hello world', '--json']);
  assert.equal(put.code, 0, put.err);
  const { key, revision } = JSON.parse(put.out) as { key: string; revision: number };
  assert.equal(key, 'cli/greeting');
  assert.ok(revision > 0);

  const [plain, json, missing] = await Promise.all([
    run(['kv', 'get', 'cli/greeting']),
    run(['kv', 'get', 'cli/greeting', '--json']),
    run(['kv', 'get', 'cli/nothing-here']),
  ]);
  assert.equal(plain.code, 0, plain.err);
  assert.equal(plain.out, 'hello world\n');
  assert.deepEqual(JSON.parse(json.out), { key: 'cli/greeting', value: 'hello world', revision });
  assert.equal(missing.code, 1);
  assert.equal(missing.out, '');
  assert.match(missing.err, /not found/);
});

test('--if-revision applies only at that revision, else exit 65 and nothing changes', async () => {
  const { revision } = await sdk.put('cli/cas', 'one');
  const [mustNotExist, stale] = await Promise.all([
    run(['put', 'cli/cas', 'two', '--if-revision', '0']),
    run(['kv', 'put', 'cli/cas', 'two', '--if-revision', String(revision + 1000)]),
  ]);
  assert.equal(mustNotExist.code, 65, mustNotExist.err);
  assert.equal(stale.code, 65, stale.err);
  assert.equal(new TextDecoder().decode((await sdk.kvGet('cli/cas'))!.value), 'one');
  const ok = await run(['put', 'cli/cas', 'two', '--if-revision', String(revision)]);
  assert.equal(ok.code, 0, ok.err);
  assert.equal(new TextDecoder().decode((await sdk.kvGet('cli/cas'))!.value), 'two');
});

test('put --lock fences the write with a lock it takes for it; a busy lock runs out --wait (exit 74)', async () => {
  const fenced = await run(['put', 'cli/report', 'page 12', '--lock', 'cli/report-lock', '--wait', '5000', '--json']);
  assert.equal(fenced.code, 0, fenced.err);
  const out = JSON.parse(fenced.out) as { key: string; revision: number; lock: string; token: number };
  assert.equal(out.lock, 'cli/report-lock');
  assert.ok(out.token > 0 && out.revision > out.token, 'the write came after the grant');
  assert.deepEqual((await sdk.get('cli/report-lock')).holders, [], 'released after the write');

  const held = await sdk.acquire('cli/report-lock');
  try {
    const busy = await run(['put', 'cli/report', 'page 13', '--lock', 'cli/report-lock', '--wait', '300']);
    assert.equal(busy.code, 74, busy.err);
  } finally {
    await held.release();
  }
  assert.equal(new TextDecoder().decode((await sdk.kvGet('cli/report'))!.value), 'page 12');
});

test('kv delete removes a key (--json: existed, revision)', async () => {
  await sdk.put('cli/tmp', 'x');
  const del = await run(['kv', 'delete', 'cli/tmp', '--json']);
  assert.equal(del.code, 0, del.err);
  const out = JSON.parse(del.out) as { key: string; existed: boolean; revision: number };
  assert.equal(out.existed, true);
  assert.ok(out.revision > 0);
  assert.equal(await sdk.kvGet('cli/tmp'), null);
});

test('watch streams changes under a prefix as JSON lines until interrupted', async () => {
  await sdk.put('cli/cfg/before', 'old');
  const w = palisade(['watch', 'cli/cfg/', '--json', '--include-existing']);
  const ready = new Promise<void>((resolve) => {
    const onData = (d: string): void => {
      if (d.includes('watching')) resolve();
    };
    w.p.stderr.on('data', onData);
  });
  const lines = createInterface({ input: w.p.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
  await ready;
  const a = await sdk.put('cli/cfg/a', '1');
  await sdk.put('cli/other', 'not watched');
  const del = await sdk.delete('cli/cfg/a');
  const seen = [await next(), await next(), await next()];
  assert.deepEqual(seen[0], { type: 'put', key: 'cli/cfg/before', value: 'old', revision: seen[0]!['revision'] });
  assert.deepEqual(seen[1], { type: 'put', key: 'cli/cfg/a', value: '1', revision: a.revision });
  assert.deepEqual(seen[2], { type: 'delete', key: 'cli/cfg/a', revision: del.revision });
  w.p.kill('SIGINT');
  const r = await w.done;
  assert.equal(r.code, 0, r.err);
});

test('plain watch lines: put KEY REVISION "VALUE" (JSON string), base64 for non-UTF-8, delete KEY REVISION', () => {
  const enc = new TextEncoder();
  assert.equal(formatChange({ key: 'k', value: enc.encode('two words\nand more'), revision: 7 }, false), 'put k 7 "two words\\nand more"');
  assert.equal(formatChange({ key: 'k', value: new Uint8Array([0xff, 0x00]), revision: 8 }, false), 'put k 8 base64:/wA=');
  assert.equal(formatChange({ key: 'k', value: null, revision: 9 }, false), 'delete k 9');
  assert.equal(formatChange({ key: 'k', value: new Uint8Array([0xff]), revision: 8 }, true), '{"type":"put","key":"k","valueBase64":"/w==","revision":8}');
});

test('fence-sql prints the fence table SQL of PostgresFence (exit 64 on a bad table name)', async () => {
  const [plain, named, bad] = await Promise.all([
    run(['fence-sql'], false),
    run(['fence-sql', '--table', 'ops.fence'], false),
    run(['fence-sql', '--table', 'Fence; DROP TABLE x'], false),
  ]);
  assert.equal(plain.code, 0, plain.err);
  assert.equal(plain.out, PostgresFence.fenceSql());
  assert.equal(named.out, PostgresFence.fenceSql('ops.fence'));
  assert.equal(bad.code, 64);
  assert.equal(bad.out, '');
  assert.match(bad.err, /not a plain lower-case identifier/);
});
