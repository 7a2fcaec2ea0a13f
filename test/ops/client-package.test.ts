// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The client-only package (packages/client, name palisade-client): packed, installed into an
// empty project as a user would, it brings only ws and msgpackr (with --omit=optional) or
// exactly the packages its README lists (a plain install: msgpackr's optional native
// accelerator too), holds nothing of the server, and its README's quick start takes a lock
// from a real 3-node cluster. `npm publish --dry-run` ships exactly the built SDK, the
// README and the licence, and says nothing but that it is a dry run.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';

const README = readFileSync(join(ROOT, 'packages/client/README.md'), 'utf8');

let c: TestCluster;
let tgz: string;
const dir = mkdtempSync(join(tmpdir(), 'palisade-client-pkg-'));
before(async () => {
  c = await TestCluster.started();
  tgz = execFileSync(process.execPath, [join(ROOT, 'scripts/pack-client.mjs'), dir], { encoding: 'utf8' }).trim().split('\n').pop()!;
});
after(async () => {
  await c?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh project with the tarball installed (npm's extra flags given); its package names. */
function install(name: string, flags: string[]): { app: string; installed: string[] } {
  const app = join(dir, name);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const r = spawnSync('npm', ['install', tgz, '--no-audit', '--no-fund', '--prefer-offline', ...flags], { cwd: app, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const installed = readdirSync(join(app, 'node_modules'))
    .filter((n) => !n.startsWith('.'))
    .flatMap((n) => (n.startsWith('@') ? readdirSync(join(app, 'node_modules', n)).map((m) => `${n}/${m}`) : [n]));
  console.log(`# npm install ${flags.join(' ')}: ${installed.length} packages: ${installed.join(', ')}`);
  return { app, installed: installed.sort() };
}

/** The README's quick start with this cluster's endpoints for the documented ones. */
function quickStart(): string {
  const code = README.match(/```js\n([\s\S]*?)```/)![1]!;
  const documented = [...code.matchAll(/ws:\/\/127\.0\.0\.1:700[0-9]/g)].map((m) => m[0]);
  assert.equal(documented.length, 3);
  return documented.reduce((text, url, i) => text.replace(url, c.endpoints[i]!), code);
}

test('with --omit=optional it installs alone (3 packages), and the README\'s quick start takes a lock', { timeout: 120_000 }, () => {
  const shipped = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' });
  assert.doesNotMatch(shipped, /dist\/(server|transport|raft|storage|cli|backup|config)\//, 'no server code in the package');
  // The one file of the lock machine it holds: the shared vocabulary, declarations only.
  assert.deepEqual(shipped.split('\n').filter((f) => f.includes('dist/lockfsm/')).sort(), ['package/dist/lockfsm/vocabulary.d.ts', 'package/dist/lockfsm/vocabulary.js']);
  assert.match(shipped, /^package\/README\.md$/m);
  assert.match(shipped, /^package\/LICENSE$/m);

  const { app, installed } = install('lean', ['--omit=optional']);
  assert.deepEqual(installed, ['msgpackr', 'palisade-client', 'ws']);
  writeFileSync(join(app, 'quick-start.mjs'), quickStart());
  const run = spawnSync(process.execPath, ['quick-start.mjs'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^holding reports\/nightly with fencing token \d+$/m);

  writeFileSync(
    join(app, 'fence.mjs'),
    `import { LockClient } from 'palisade-client';
import { FenceGuard, MemoryFenceStore } from 'palisade-client/fence';
const client = await LockClient.connect({ endpoints: process.argv[2].split(',') });
const lock = await client.acquire('pkg/lock');
const guard = new FenceGuard(new MemoryFenceStore());
await guard.check('pkg/resource', lock.token);
console.log('token', String(lock.token));
await lock.release();
await client.close();
`,
  );
  const fenced = spawnSync(process.execPath, ['fence.mjs', c.endpoints.join(',')], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  assert.equal(fenced.status, 0, fenced.stderr);
  assert.match(fenced.stdout, /^token \d+$/m);
});

test('a plain install brings exactly the packages the README lists, and works the same', { timeout: 120_000 }, () => {
  const sentence = README.match(/a plain install brings (\d+) packages:([\s\S]*?)\. The SDK/)!;
  const listed = [...sentence[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  const { app, installed } = install('plain', []);
  assert.equal(installed.length, Number(sentence[1]));
  const platform = installed.find((n) => n.startsWith('@msgpackr-extract/msgpackr-extract-'));
  assert.ok(platform, `no prebuilt binary package in ${installed.join(', ')}`);
  assert.deepEqual(installed, listed.map((n) => (n.endsWith('-<platform>') ? platform : n)).sort());
  writeFileSync(join(app, 'quick-start.mjs'), quickStart());
  const run = spawnSync(process.execPath, ['quick-start.mjs'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
});

test('npm publish --dry-run ships the built SDK, the README and the licence, and warns of nothing else', { timeout: 120_000 }, () => {
  const r = spawnSync('npm', ['publish', '--dry-run', '--json', '--offline'], { cwd: join(ROOT, 'packages/client'), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const warnings = r.stderr.split('\n').filter((l) => l.startsWith('npm warn') && !/requires you to be logged in .*\(dry-run\)/.test(l));
  assert.deepEqual(warnings, []);
  const files = (JSON.parse(r.stdout) as Record<string, { files: { path: string }[] }>)['palisade-client']!.files.map((f) => f.path).sort();
  const outside = files.filter((f) => !/^(LICENSE|README\.md|package\.json|dist\/(client|fence|protocol)\/[\w-]+\.(js|d\.ts)|dist\/lockfsm\/vocabulary\.(js|d\.ts))$/.test(f));
  assert.deepEqual(outside, [], 'files outside the SDK');
  for (const f of ['LICENSE', 'README.md', 'package.json', 'dist/client/index.js', 'dist/client/index.d.ts', 'dist/fence/index.js', 'dist/protocol/codec.js']) {
    assert.ok(files.includes(f), `${f} is not shipped`);
  }
  assert.ok(!files.some((f) => f.includes('fence/postgres')), 'the PostgreSQL fence stays with the server');
});

test('every copy of the licence is the root\'s Apache-2.0 text', () => {
  const root = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
  assert.match(root, /^ +Apache License\n +Version 2\.0, January 2004/);
  assert.match(root, /END OF TERMS AND CONDITIONS/);
  for (const copy of ['packages/client/LICENSE', 'clients/python/LICENSE', 'clients/go/LICENSE']) {
    assert.equal(readFileSync(join(ROOT, copy), 'utf8'), root, copy);
  }
  assert.equal(JSON.parse(readFileSync(join(ROOT, 'packages/client/package.json'), 'utf8')).license, 'Apache-2.0');
});
