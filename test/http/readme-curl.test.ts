// The README's curl story, run as written (only the node's address changes) with bash,
// curl and jq against a real 3-node cluster: it must open a session, take the lock, hand
// the token to the report script, and leave the lock free and the session closed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

const tools = ['bash', 'curl', 'jq'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0);

function readmeStory(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Any language: HTTP/JSON'));
  const m = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(m, 'the README has the curl story');
  return m[1]!;
}

describe('README: the lock story with curl', { skip: !tools && 'needs bash, curl and jq', timeout: 60_000 }, () => {
  let c: TestCluster;
  let dir: string;

  before(async () => {
    c = await TestCluster.started();
    dir = mkdtempSync(join(tmpdir(), 'palisade-curl-'));
  });

  after(async () => {
    await c?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs as written', async () => {
    const story = readmeStory();
    assert.match(story, /^N=http:\/\/127\.0\.0\.1:7001 /m);
    const base = httpBase(c.nodes[1]!.clientUrl);
    const script = story.replace(/^N=http:\/\/127\.0\.0\.1:7001/m, `N=${base}`);
    writeFileSync(join(dir, 'make-report.sh'), '#!/bin/sh\necho "$2" > token.txt\n');
    chmodSync(join(dir, 'make-report.sh'), 0o755);
    const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, `the story failed:\n${r.stdout}\n${r.stderr}`);
    const token = readFileSync(join(dir, 'token.txt'), 'utf8').trim();
    assert.match(token, /^[1-9][0-9]*$/);
    const lock = await call(base, 'GET', '/v1/lock?name=reports/nightly');
    assert.deepEqual(lock.body.holders, [], 'released at the end');
    assert.match(r.stdout, new RegExp(`"token":"${token}"`), 'the lock was shown with its token while held');
  });
});
