// `palisade serve` facing bad files: a corrupted data directory, a broken config, missing
// certificates. Each is a clear start-up error and a non-zero exit, never a silent reset
// or a node that starts half-configured. And with auth and TLS off, the node says so once.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Level } from 'level';
import { LockClient } from '../../src/client/index.js';
import { entryKey, HARD_STATE_KEY } from '../../src/storage/keys.js';
import { CLI, TestCluster, freePort } from '../support/cluster.js';

function serve(configPath: string, id: string, timeoutMs = 20_000): Promise<{ code: number | null; err: string }> {
  const p = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--id', id, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, err });
    }),
  );
}

async function corrupt(dataDir: string, key: Uint8Array, value: Uint8Array): Promise<void> {
  const db = new Level<Uint8Array, Uint8Array>(dataDir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  await db.put(key, value);
  await db.close();
}

describe('a node with a data directory', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.create({ nodes: 1 });
    await c.startAll();
    await c.waitForLeader();
    const client = await LockClient.connect({ endpoints: c.endpoints });
    const lock = await client.acquire('before-corruption');
    await lock.release();
    await client.close();
  });
  after(async () => {
    await c?.stop();
  });

  test('with auth and TLS off, the node warns once of each at start-up', async () => {
    const log = c.logOf('n1');
    assert.equal(log.match(/clients are not authenticated/g)?.length, 1);
    assert.equal(log.match(/peer links are not encrypted/g)?.length, 1);
    assert.equal(log.match(/the client port is not encrypted/g)?.length, 1);
  });

  test('a corrupted value in LevelDB stops start-up with a message naming it, and exits non-zero', async () => {
    await c.signal('n1', 'SIGTERM');
    const dir = c.node('n1').dataDir;
    await corrupt(dir, HARD_STATE_KEY, new Uint8Array([0xc1, 0xff, 0x00]));
    const hard = await serve(c.configPath, 'n1');
    assert.notEqual(hard.code, 0);
    assert.match(hard.err, /corrupt value under "hard"/);
    assert.ok(hard.err.includes(dir), 'the message names the data directory');

    // A well-formed msgpack value of the wrong shape is corruption too.
    await corrupt(dir, HARD_STATE_KEY, new Uint8Array([0x93, 0x01, 0x02, 0x03]));
    await corrupt(dir, entryKey(2), new Uint8Array([0x81, 0xa1, 0x78, 0x01]));
    const shape = await serve(c.configPath, 'n1');
    assert.notEqual(shape.code, 0);
    assert.match(shape.err, /corrupt value under "(hard|entry 2)"/);
  });
});

describe('a broken config file or missing certificates', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'palisade-cfg-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function config(extra: Record<string, unknown>, scheme = 'ws'): Promise<string> {
    const path = join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        clusterId: 'c',
        secret: 'a-cluster-secret-0123456789',
        nodes: [{ id: 'n1', peerUrl: `${scheme}://127.0.0.1:${await freePort()}`, clientUrl: `${scheme}://127.0.0.1:${await freePort()}`, dataDir: join(dir, 'n1') }],
        sessions: { minTtlMs: 1000 },
        ...extra,
      }),
    );
    return path;
  }

  test('each is a clear error naming the field, and a non-zero exit', async () => {
    const cases: [string, RegExp][] = [
      [await config({ auth: { tokens: [{ name: 'a', token: 'short' }] } }), /config: auth\.tokens\[0\]\.token: must be 16/],
      [await config({ limits: { requestsPerSecond: -1 } }), /config: limits\.requestsPerSecond: must be between/],
      [await config({ tls: { client: { cert: join(dir, 'missing.crt'), key: join(dir, 'missing.key') } } }), /nodes\[0\]\.clientUrl: .* must be wss:\/\//],
      [await config({ tls: { peer: { cert: join(dir, 'missing.crt'), key: join(dir, 'missing.key') }, client: { cert: join(dir, 'missing.crt'), key: join(dir, 'missing.key') } } }, 'wss'), /config: tls\.peer\.cert: cannot read .*missing\.crt \(ENOENT\)/],
    ];
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, readFileSync(cases[0]![0], 'utf8').slice(0, 40));
    cases.push([broken, /is not valid JSON/]);
    const results = await Promise.all(cases.map(([path]) => serve(path, 'n1')));
    results.forEach((r, i) => {
      assert.notEqual(r.code, 0, cases[i]![0]);
      assert.match(r.err, cases[i]![1]);
    });
  });
});
