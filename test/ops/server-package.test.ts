// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The release tarball of the server (palisade-server, `npm pack`): it holds dist/ built, its
// production dependencies bundled (the exact versions the tests ran with, so a host installs
// it without a registry), and nothing of the repository's sources, tests, dev dependencies or
// data; installed into an empty project offline with --omit=dev (no compiler), its `palisade`
// bin runs `--version` and `serve`, and `npx palisade-server` resolves to it, as the README's
// shell examples call it.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { rpc } from '../../src/protocol/rpc.js';
import { ROOT, freePorts, signalNode, startNode } from '../support/node-process.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string>; scripts: Record<string, string> };

interface PackResult {
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

/** npm pack --json: the tarball's name and file list (what `npm publish` would upload). */
function pack(dest: string, dryRun = false): PackResult {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dest, ...(dryRun ? ['--dry-run'] : [])], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return (JSON.parse(out) as PackResult[])[0]!;
}

describe('the palisade-server release tarball', { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-server-pkg-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('is named palisade-server, with a palisade bin, and builds in prepack, not at install', () => {
    assert.equal(pkg.name, 'palisade-server');
    assert.equal(pkg.bin['palisade'], 'bin/palisade.mjs');
    // Nothing runs when the tarball is installed: it holds dist/ (npm's `prepare` and install
    // scripts would run, or ask to, on the host). A checkout builds in `dependencies`, which
    // npm runs for the project itself only.
    for (const hook of ['prepare', 'preinstall', 'install', 'postinstall']) assert.equal(pkg.scripts[hook], undefined, hook);
    assert.match(pkg.scripts['dependencies'] ?? '', /ensure-built/);
    assert.match(pkg.scripts['prepack'] ?? '', /ensure-built/);
    assert.match(pkg.scripts['start'] ?? '', /ensure-built.*&&.*bin\/palisade\.mjs cluster/, 'npm start builds a missing or stale dist/ first');
  });

  test('its file list (what npm publish uploads) holds the build and no sources, tests or data', () => {
    const files = pack(dir, true).files.map((f) => f.path);
    for (const must of ['bin/palisade.mjs', 'dist/cli/main.js', 'dist/server/node.js', 'dist/client/index.d.ts', 'config.schema.json', 'cluster.config.json', 'deploy/palisade@.service', 'deploy/cluster.config.json', 'web/index.html', 'package.json', 'README.md']) {
      assert.ok(files.includes(must), `${must} is shipped`);
    }
    const ours = files.filter((f) => !f.startsWith('node_modules/'));
    const wrong = ours.filter((f) => /^(src|test|bench|examples|data|packages|clients|\.ci|ops)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')) || f.endsWith('.tgz'));
    assert.deepEqual(wrong, []);
    const bundled = new Set(files.filter((f) => f.startsWith('node_modules/')).map((f) => f.split('/').slice(1, f.split('/')[1]!.startsWith('@') ? 3 : 2).join('/')));
    for (const dep of Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies as object)) assert.ok(bundled.has(dep), `${dep} is bundled`);
    const dev = [...bundled].filter((p) => /^(typescript|tsx|esbuild|@esbuild\/.*|fast-check|pg|pg-.*|playwright-core|@types\/.*|palisade-server)$/.test(p));
    assert.deepEqual(dev, [], 'no dev dependency is bundled');
  });

  test('installs into an empty project offline without dev dependencies, and runs', async () => {
    const tgz = join(dir, pack(dir).filename);
    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    const install = spawnSync('npm', ['install', tgz, '--omit=dev', '--offline', '--no-audit', '--no-fund'], { cwd: app, encoding: 'utf8' });
    assert.equal(install.status, 0, install.stderr);
    assert.ok(!existsSync(join(app, 'node_modules/typescript')), 'no compiler installed');
    assert.ok(!existsSync(join(app, 'node_modules/tsx')), 'no dev dependency installed');

    const bin = join(app, 'node_modules/.bin/palisade');
    assert.equal(execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim(), pkg.version);
    // npx finds the installed package by its name, as the README's examples call it.
    assert.equal(execFileSync('npx', ['--offline', 'palisade-server', '--version'], { cwd: app, encoding: 'utf8' }).trim(), pkg.version);

    const [peer, client] = await freePorts(2);
    const clientUrl = `ws://127.0.0.1:${client}`;
    const configPath = join(app, 'cluster.config.json');
    writeFileSync(configPath, JSON.stringify({
      $schema: './node_modules/palisade-server/config.schema.json',
      clusterId: 'from-tarball',
      secret: 'from-tarball-secret-0123456789',
      nodes: [{ id: 'n1', peerUrl: `ws://127.0.0.1:${peer}`, clientUrl, dataDir: 'data/n1' }],
    }));
    const node = await startNode({ id: 'n1', configPath, logPath: join(app, 'n1.log'), clientUrl, cli: join(app, 'node_modules/palisade-server/bin/palisade.mjs') });
    try {
      const st = await rpc(clientUrl, { op: 'status' }, 5_000);
      assert.equal(st.id, 'n1');
      const status = spawnSync(bin, ['status', '--endpoints', clientUrl], { cwd: app, encoding: 'utf8', timeout: 30_000 });
      assert.equal(status.status, 0, status.stderr);
      assert.match(status.stdout, /n1/);
    } finally {
      await signalNode(node, 'SIGTERM');
    }
    assert.equal(node.exitCode, 0);
  });
});
