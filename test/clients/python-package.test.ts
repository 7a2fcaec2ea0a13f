// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The Python client as a user installs it: the offline install commands of
// clients/python/README.md, run as written in a fresh virtualenv (no index, no pip
// configuration), then the README's example against a real 3-node cluster from outside the
// source tree; a wheel that carries py.typed and the licence; and `mypy --strict` clean,
// for the package and for code that uses the installed package.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';

const README = readFileSync(join(ROOT, 'clients/python/README.md'), 'utf8');
const python = spawnSync('python3', ['-c', 'import sys, venv; assert sys.version_info >= (3, 9)']).status === 0;
const MYPY = '/usr/bin/mypy';

/** The fenced code blocks of `lang` in the README, in order. */
function blocks(lang: string): string[] {
  return [...README.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

/** The environment of a machine without a package index: no pip configuration at all. */
function offlineEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PIP_CONFIG_FILE: '/dev/null', PIP_DISABLE_PIP_VERSION_CHECK: '1', ...extra };
  for (const k of Object.keys(env)) if (k.startsWith('PIP_') && !(k in extra) && k !== 'PIP_CONFIG_FILE' && k !== 'PIP_DISABLE_PIP_VERSION_CHECK') delete env[k];
  return env;
}

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): string {
  const r = spawnSync('sh', ['-c', command], { cwd, env, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${command}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

describe('the Python client package', { skip: !python && 'needs python3 >= 3.9 with venv', timeout: 600_000 }, () => {
  let c: TestCluster;
  const dir = mkdtempSync(join(tmpdir(), 'palisade-py-pkg-'));

  before(async () => {
    c = await TestCluster.started();
    // The checkout as a user has it (without build leftovers), at ./clients/python.
    cpSync(join(ROOT, 'clients/python'), join(dir, 'clients/python'), {
      recursive: true,
      filter: (src) => !/(\/build|\.egg-info|__pycache__|\/dist)$/.test(src),
    });
  });

  after(async () => {
    await c?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('installs offline into a fresh virtualenv with the README\'s commands, and its example works', () => {
    assert.ok(existsSync('/usr/share/python-wheels') && readdirSync('/usr/share/python-wheels').some((f) => f.startsWith('wheel-')),
      'Debian\'s wheel as a .whl file is missing: apt-get install python3-wheel-whl (.ci/run does)');
    // The offline block, minus the apt-get line (the machine has the packages already).
    const offline = blocks('sh')[1]!.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l !== '' && !l.startsWith('apt-get'));
    assert.deepEqual(offline.map((l) => l.split(' ')[0]), ['python3', '.venv/bin/pip', '.venv/bin/pip']);
    for (const line of offline) sh(line, dir, offlineEnv());
    const listed = sh('.venv/bin/pip list --format=freeze', dir, offlineEnv());
    assert.match(listed, /^palisade-client==0\.1\.0$/m);

    const run = join(dir, 'elsewhere');
    mkdirSync(run);
    writeFileSync(join(run, 'example.py'), blocks('python')[0]!);
    const out = sh(`${join(dir, '.venv/bin/python')} example.py`, run, { ...process.env, PALISADE_URLS: c.endpoints.join(',') });
    assert.match(out, /^report written under token \d+$/m);
  });

  it('installs offline into a virtualenv of Debian\'s Python that sees its setuptools and wheel', { skip: !existsSync('/usr/bin/python3') && 'no /usr/bin/python3' }, () => {
    const where = join(dir, 'debian');
    cpSync(join(dir, 'clients'), join(where, 'clients'), { recursive: true, filter: (src) => !/(\/build|\.egg-info|__pycache__|\/dist)$/.test(src) });
    const lines = blocks('sh')[2]!.split('\n').map((l) => l.trim()).filter(Boolean);
    assert.deepEqual(lines.map((l) => l.split(' ')[0]), ['/usr/bin/python3', '.venv/bin/pip']);
    for (const line of lines) sh(line, where, offlineEnv());
    sh('.venv/bin/python -c "import palisade_client"', where, offlineEnv());
  });

  it('builds a wheel with py.typed and the licence', () => {
    const command = README.split('\n').find((l) => l.includes('pip wheel'))!.match(/`([^`]*pip wheel[^`]*)`/)![1]!;
    sh(command, dir, offlineEnv());
    const wheel = readdirSync(join(dir, 'dist')).find((f) => f.endsWith('.whl'));
    assert.ok(wheel, 'no wheel in dist/');
    const names = execFileSync('python3', ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', join(dir, 'dist', wheel)], { encoding: 'utf8' });
    assert.match(names, /^palisade_client\/py\.typed$/m);
    assert.match(names, /^palisade_client-0\.1\.0\.dist-info\/LICENSE$/m);
    assert.doesNotMatch(names, /^tests\//m, 'the tests are not shipped');
  });

  it('is clean under mypy --strict, and so is code using the installed package', { skip: !existsSync(MYPY) && `${MYPY} is missing (apt-get install mypy)` }, () => {
    sh(`${MYPY} --strict palisade_client examples/paused_holder.py`, join(ROOT, 'clients/python'), process.env);
    // From outside the source tree, against the virtualenv: the types come from py.typed.
    sh(`${MYPY} --strict --python-executable ${join(dir, '.venv/bin/python')} example.py`, join(dir, 'elsewhere'), process.env);
  });
});
