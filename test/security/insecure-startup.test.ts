// Refusing to start insecurely outside loopback, and private data files (issue 18, finding
// 10): the published default secret, or plain ws:// peer links, on a non-loopback address
// stop `palisade serve` with a message saying what to configure, unless --allow-insecure is
// given; the data directory is 0700 and every file in it 0600, including files LevelDB
// creates later and files left with looser modes by an older version.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { LockClient } from '../../src/client/index.js';
import { isLoopbackHost, PUBLISHED_SECRET } from '../../src/server/exposure.js';
import { CLI, freePorts, logTail, signalNode, startNode } from '../support/node-process.js';

const SECRET = 'a-secret-of-this-test-0123456789';

function serve(configPath: string, args: string[] = []): Promise<{ code: number | null; err: string }> {
  const p = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--id', 'n1', '--log-level', 'warn', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
  return new Promise((resolve) =>
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, err });
    }),
  );
}

describe('start-up outside loopback, and the data directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-exposure-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function config(name: string, secret: string, host: string, ports: number[]): string {
    const path = join(dir, `${name}.json`);
    const node = { id: 'n1', peerUrl: `ws://${host}:${ports[0]}`, clientUrl: `ws://${host}:${ports[1]}`, dataDir: name };
    writeFileSync(path, JSON.stringify({ clusterId: 'exposure', secret, nodes: [node] }));
    return path;
  }

  test('loopback is recognised', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', '::ffff:127.0.0.1']) assert.ok(isLoopbackHost(h), h);
    for (const h of ['0.0.0.0', '10.0.0.1', '::', 'example.com', '192.168.1.1']) assert.ok(!isLoopbackHost(h), h);
  });

  test('the published secret on a non-loopback address is refused, saying what to set and how to opt out', async () => {
    const r = await serve(config('published', PUBLISHED_SECRET, '0.0.0.0', await freePorts(2)));
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /published development default/);
    assert.match(r.err, /set "secret"/);
    assert.match(r.err, /--allow-insecure/);
  });

  test('plain ws:// peer links on a non-loopback address are refused, naming tls.peer', async () => {
    const r = await serve(config('plain', SECRET, '0.0.0.0', await freePorts(2)));
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /configure "tls\.peer"/);
    assert.doesNotMatch(r.err, /secret/);
  });

  test('--allow-insecure starts anyway and warns; the published secret on loopback starts', async () => {
    const ports = await freePorts(2);
    const logPath = join(dir, 'allowed.log');
    const p = await startNode({ id: 'n1', configPath: config('allowed', PUBLISHED_SECRET, '0.0.0.0', ports), logPath, clientUrl: `ws://127.0.0.1:${ports[1]}`, args: ['--allow-insecure'] });
    try {
      assert.match(logTail(logPath, 20_000), /running insecurely \(--allow-insecure\)/);
    } finally {
      await signalNode(p, 'SIGTERM');
    }
    const lports = await freePorts(2);
    const lp = await startNode({ id: 'n1', configPath: config('local', PUBLISHED_SECRET, '127.0.0.1', lports), logPath: join(dir, 'local.log'), clientUrl: `ws://127.0.0.1:${lports[1]}` });
    await signalNode(lp, 'SIGTERM');
  });

  test('the data directory is 0700 and every file in it 0600, also ones left looser before', async () => {
    const ports = await freePorts(2);
    const dataDir = join(dir, 'private');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    writeFileSync(join(dataDir, 'left-by-an-older-version'), 'x');
    chmodSync(join(dataDir, 'left-by-an-older-version'), 0o644);
    const clientUrl = `ws://127.0.0.1:${ports[1]}`;
    const p = await startNode({ id: 'n1', configPath: config('private', SECRET, '127.0.0.1', ports), logPath: join(dir, 'private.log'), clientUrl });
    try {
      const client = await LockClient.connect({ endpoints: [clientUrl], requestTimeoutMs: 10_000 });
      for (let i = 0; i < 20; i++) await (await client.acquire(`modes/${i}`)).release();
      await client.close();
    } finally {
      await signalNode(p, 'SIGTERM');
    }
    const modes: string[] = [];
    const walk = (d: string): void => {
      modes.push(`${d}: ${(statSync(d).mode & 0o777).toString(8)}`);
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const path = join(d, e.name);
        if (e.isDirectory()) walk(path);
        else modes.push(`${path}: ${(statSync(path).mode & 0o777).toString(8)}`);
      }
    };
    walk(dataDir);
    assert.ok(modes.length > 3, modes.join('\n'));
    for (const m of modes) assert.match(m, m.startsWith(`${dataDir}:`) ? /: 700$/ : /: (600|700)$/, modes.join('\n'));
    assert.ok(modes.some((m) => m.includes('.log') || m.includes('CURRENT')), 'LevelDB files are among them');
  });
});
