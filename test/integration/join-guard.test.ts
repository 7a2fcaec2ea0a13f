// A node started with --join has an empty log until the cluster sends it data, just like a
// founding member before it bootstraps. Restarted without --join in that state it must not
// found a cluster of its own: its first entries would sit at the same indexes and term as
// the real cluster's, with different members in them.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CLI, TestCluster, freePort, until } from '../support/cluster.js';

interface Served {
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  readonly kill: () => void;
}

function serve(config: string, id: string, extra: string[]): Served {
  const p = spawn(process.execPath, [CLI, 'serve', '--config', config, '--id', id, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => p.on('close', (code) => resolve(code)));
  return { output: () => out, exited, kill: () => p.kill('SIGKILL') };
}

describe('a joining node restarted without --join', () => {
  let c: TestCluster;
  before(async () => {
    c = await TestCluster.create({ nodes: 1 });
  });
  after(() => c.stop());

  test('refuses to start, and says to start it with --join again', async () => {
    await c.addNodeSpec('n2');
    const config = join(c.dir, 'n2.config.json');
    // Nobody answers at this address: the node stays in its joining phase, without data.
    const joining = serve(config, 'n2', ['--join', `ws://127.0.0.1:${await freePort()}`]);
    await until(() => joining.output().includes('joining a running cluster'), 15_000, 'the node to say it is joining');
    joining.kill();
    await joining.exited;
    const restarted = serve(config, 'n2', []);
    const code = await restarted.exited;
    assert.notEqual(code, 0, restarted.output());
    assert.match(restarted.output(), /started to join a running cluster and has received no data yet: start it with --join again/);
  });
});
