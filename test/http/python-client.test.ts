// The Python client (clients/python, standard library only) against a real 3-node cluster:
// its unittest suite, with the nodes' HTTP URLs and pids (it SIGKILLs the leader while it
// holds a lock, last).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';
import { httpBase } from './http-client.js';

const python = spawnSync('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)']).status === 0;

describe('the Python client', { skip: !python && 'needs python3 >= 3.9', timeout: 180_000 }, () => {
  let c: TestCluster;

  before(async () => {
    c = await TestCluster.started();
  });

  after(async () => {
    await c?.stop();
  });

  it('passes its unittest suite against the cluster', async () => {
    const env = {
      ...process.env,
      PALISADE_URLS: c.nodes.map((n) => httpBase(n.clientUrl)).join(','),
      PALISADE_PIDS: c.nodes.map((n) => `${n.id}:${c.pid(n.id)}`).join(','),
    };
    const p = spawn('python3', ['-m', 'unittest', 'discover', '-v', '-s', 'tests'], { cwd: join(ROOT, 'clients/python'), env });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => p.on('exit', r));
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, /skipped/, out);
  });
});
