// deploy/palisade@.service is a unit systemd accepts (systemd-analyze verify, on an
// instance), and it runs what docs/deployment.md says: `palisade serve --id INSTANCE`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/node-process.js';

const UNIT = join(ROOT, 'deploy/palisade@.service');
const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });

test('systemd-analyze verify accepts the unit template', { skip: analyze.status !== 0 && 'systemd-analyze is not installed' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-unit-'));
  try {
    const instance = join(dir, 'palisade@n1.service');
    copyFileSync(UNIT, instance);
    const r = spawnSync('systemd-analyze', ['verify', instance], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.trim(), '', 'no warnings');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the unit runs one node by its instance name and lets an operator act on a refusal to start', () => {
  const unit = readFileSync(UNIT, 'utf8');
  assert.match(unit, /^ExecStart=\/usr\/bin\/node \/opt\/palisade\/node_modules\/palisade-server\/bin\/palisade\.mjs serve --config \/etc\/palisade\/cluster\.config\.json --id %i$/m);
  assert.match(unit, /^KillSignal=SIGTERM$/m);
  assert.match(unit, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m, 'systemctl reload sends SIGHUP: the node reloads its config');
  assert.match(unit, /^RestartPreventExitStatus=1 64$/m);
  assert.match(unit, /^ReadWritePaths=\/var\/lib\/palisade$/m);
});
