// The client-only package (packages/client, name palisade-client): packed, installed into an
// empty project as a user would, it brings only ws and msgpackr, holds nothing of the
// server, and takes a lock from a real 3-node cluster.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';

let c: TestCluster;
const dir = mkdtempSync(join(tmpdir(), 'palisade-client-pkg-'));
before(async () => {
  c = await TestCluster.started();
});
after(async () => {
  await c?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('npm pack of palisade-client installs alone into an empty project and takes a lock', { timeout: 120_000 }, () => {
  const tgz = execFileSync(process.execPath, [join(ROOT, 'scripts/pack-client.mjs'), dir], { encoding: 'utf8' }).trim().split('\n').pop()!;
  const shipped = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' });
  assert.doesNotMatch(shipped, /dist\/(server|transport|raft|storage|cli|backup|config)\//, 'no server code in the package');
  // The one file of the lock machine it holds: the shared vocabulary, declarations only.
  assert.deepEqual(shipped.split('\n').filter((f) => f.includes('dist/lockfsm/')).sort(), ['package/dist/lockfsm/vocabulary.d.ts', 'package/dist/lockfsm/vocabulary.js']);

  const app = join(dir, 'app');
  execFileSync('mkdir', ['-p', app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const install = spawnSync('npm', ['install', tgz, '--no-audit', '--no-fund', '--prefer-offline', '--omit=optional'], { cwd: app, encoding: 'utf8' });
  assert.equal(install.status, 0, install.stderr);
  const installed = readdirSync(join(app, 'node_modules')).filter((n) => !n.startsWith('.'));
  console.log(`# palisade-client installed ${installed.length} packages: ${installed.join(', ')}`);
  assert.deepEqual(installed.sort(), ['msgpackr', 'palisade-client', 'ws']);

  writeFileSync(
    join(app, 'lock.mjs'),
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
  const run = spawnSync(process.execPath, ['lock.mjs', c.endpoints.join(',')], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^token \d+$/m);
});
