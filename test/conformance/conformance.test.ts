// @system: a system suite (scripts/run-tests.mjs): run by `npm run test:system` and CI.
// The conformance table (scenarios.json) played by each client's runner against one real
// 3-node cluster, with the control server for faults (leader SIGKILL and restart, a pausable
// relay): the TypeScript SDK, the Python client and the Go client must each pass every row.
// A runner that is skipped says why (no python3, no go); one that runs must pass all.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';
import { captured, type Captured } from '../support/captured.js';
import { goEnv, haveGo } from '../support/go.js';
import { httpBase } from '../http/http-client.js';
import { Control } from './control.js';

const SCENARIOS = join(ROOT, 'test/conformance/scenarios.json');
const ids = (JSON.parse(readFileSync(SCENARIOS, 'utf8')) as { scenarios: { id: string }[] }).scenarios.map((s) => s.id);
const havePython = spawnSync('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)']).status === 0;
if (!havePython) console.log('# the Python runner is skipped: no python3 >= 3.9');
if (!haveGo) console.log('# the Go runner is skipped: no `go` on PATH (apt-get install golang-go)');

/** Every row passed: one `ok ID` line per scenario, and a clean exit. */
function passedAll(run: Captured): void {
  console.log(run.out.replace(/^/gm, '# '));
  for (const id of ids) assert.match(run.out, new RegExp(`^ok ${id} `, 'm'), run.out);
  assert.doesNotMatch(run.out, /^not ok /m, run.out);
  assert.equal(run.code, 0, run.out);
}

describe('the conformance table', { timeout: 900_000 }, () => {
  let c: TestCluster;
  let control: Control;
  let env: NodeJS.ProcessEnv;
  const dir = mkdtempSync(join(tmpdir(), 'palisade-conformance-'));

  before(async () => {
    c = await TestCluster.started();
    control = new Control(c);
    env = {
      ...process.env,
      PALISADE_ENDPOINTS: c.nodes.map((n) => httpBase(n.clientUrl)).join(','),
      PALISADE_CONTROL: await control.start(),
    };
  });

  after(async () => {
    await control?.stop();
    await c?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes with the TypeScript SDK', async () => {
    await control.restart();
    passedAll(await captured(process.execPath, ['--import', 'tsx', 'test/conformance/runner.ts', SCENARIOS], { cwd: ROOT, env }));
  });

  it('passes with the Python client', { skip: !havePython && 'no python3 >= 3.9' }, async () => {
    await control.restart();
    passedAll(await captured('python3', ['clients/python/tests/conformance.py', SCENARIOS], { cwd: ROOT, env }));
  });

  it('passes with the Go client', { skip: !haveGo && 'no `go` on PATH' }, async () => {
    await control.restart();
    passedAll(await captured('go', ['run', './cmd/conformance', SCENARIOS], { cwd: join(ROOT, 'clients/go'), env: goEnv(dir, env as Record<string, string>) }));
  });
});
