// npm test brings what its suites need (scripts/test-deps.sh): as root with apt it installs a
// missing Debian package; as another user it stops before any suite and says what to run.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/node-process.js';

const SCRIPT = join(ROOT, 'scripts/test-deps.sh');

test('with everything installed it says nothing and succeeds', () => {
  const r = spawnSync('bash', [SCRIPT], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('as a user who cannot install, a missing package stops it with the one command to run', (t) => {
  if (process.getuid?.() !== 0) return void t.skip('needs root to run the script as another user');
  const r = spawnSync('su', ['nobody', '-s', '/bin/bash', '-c', `bash ${SCRIPT}`], {
    encoding: 'utf8',
    env: { ...process.env, TEST_DEPS_EXTRA: 'no-such-command-here:no-such-package' },
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /not installed: no-such-package/);
  assert.match(r.stderr, /sudo apt-get install -y no-such-package/);
});
