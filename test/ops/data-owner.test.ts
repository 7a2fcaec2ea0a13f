// Commands run as root leave data directories the service user can use: `snapshot restore`,
// `recover` and `serve` (which covers `serve --join` and a first start that creates the
// directory) give what they write to the owner of the directory that holds the data directory,
// as /var/lib/palisade belongs to the unit's user. Here that owner is `nobody`. Needs root.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CLI, TestCluster, freePort } from '../support/cluster.js';
import { signalNode, startNode, until } from '../support/node-process.js';

const run = promisify(execFile);
const NOBODY = 65534;
const SECRET = 'owner-test-secret-0123456789';
const asRoot = process.getuid?.() === 0;

/** Every path under `dir` (itself included) with an owner other than uid:gid. */
function notOwnedBy(dir: string, uid: number, gid: number): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    const st = lstatSync(p);
    if (st.uid !== uid || st.gid !== gid) out.push(`${p} (${st.uid}:${st.gid})`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(dir);
  return out;
}

describe('data written as root belongs to the data directory\'s holder', { skip: !asRoot && 'needs root', timeout: 120_000 }, () => {
  let c: TestCluster;
  let backup: string;
  let work: string;
  before(async () => {
    // The new clusters share its secret: a backup is verified under the cluster's secret.
    c = await TestCluster.started({ nodes: 1, secret: SECRET });
    work = mkdtempSync(join(tmpdir(), 'palisade-owner-'));
    chmodSync(work, 0o755); // nobody must be able to reach its directories below
    backup = join(work, 'backup.palisade');
    await run(process.execPath, [CLI, 'snapshot', 'save', backup, '--endpoints', c.endpoints[0]!]);
    await c.signal('n1', 'SIGTERM');
  });
  after(async () => {
    await c?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** A directory owned by nobody (as /var/lib/palisade by palisade) and a new cluster's
   *  config whose member keeps its data in `holder/sub/n1` (sub not yet there). */
  async function newCluster(name: string): Promise<{ config: string; dataDir: string; clientUrl: string }> {
    const holder = join(work, name);
    mkdirSync(holder);
    chownSync(holder, NOBODY, NOBODY);
    const clientUrl = `ws://127.0.0.1:${await freePort()}`;
    const config = join(work, `${name}.json`);
    const dataDir = join(holder, 'sub', 'n1');
    writeFileSync(config, JSON.stringify({ clusterId: `owned-${name}`, secret: SECRET, nodes: [{ id: 'n1', peerUrl: `ws://127.0.0.1:${await freePort()}`, clientUrl, dataDir }] }));
    return { config, dataDir, clientUrl };
  }

  test('snapshot restore', async () => {
    const { config, dataDir } = await newCluster('restored');
    await run(process.execPath, [CLI, 'snapshot', 'restore', backup, '--config', config, '--min-token', '1000']);
    assert.ok(readdirSync(dataDir).length > 0, 'restored');
    assert.deepEqual(notOwnedBy(join(dataDir, '..'), NOBODY, NOBODY), []);
  });

  test('recover', async () => {
    const { config, dataDir } = await newCluster('recovered');
    await run(process.execPath, [CLI, 'recover', '--from', c.node('n1').dataDir, '--config', config, '--id', 'n1', '--min-token', '1000']);
    assert.ok(readdirSync(dataDir).length > 0, 'recovered');
    assert.deepEqual(notOwnedBy(join(dataDir, '..'), NOBODY, NOBODY), []);
  });

  test('serve: creates the directory as its holder, runs as it, and so does everything written later', async () => {
    const { config, dataDir, clientUrl } = await newCluster('served');
    const p = await startNode({ id: 'n1', configPath: config, logPath: join(work, 'served.log'), clientUrl });
    try {
      const uids = readFileSync(`/proc/${p.pid}/status`, 'utf8').match(/^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m)!;
      assert.deepEqual(uids.slice(1).map(Number), [NOBODY, NOBODY, NOBODY], 'real, effective and saved uid');
      // A snapshot written while running (a later file of LevelDB's too) belongs to it as well.
      await run(process.execPath, [CLI, 'snapshot', 'compact', '--endpoint', clientUrl]);
      await until(() => readdirSync(dataDir).some((f) => f.endsWith('.ldb') || f.endsWith('.log')), 10_000, 'LevelDB files');
      assert.deepEqual(notOwnedBy(join(dataDir, '..'), NOBODY, NOBODY), []);
    } finally {
      await signalNode(p, 'SIGTERM');
    }
    assert.equal(p.exitCode, 0, readFileSync(join(work, 'served.log'), 'utf8').slice(-2000));
  });

  test('serve: a data directory root left behind is handed over before the start', async () => {
    const { config, dataDir, clientUrl } = await newCluster('left');
    mkdirSync(join(dataDir, '..'));
    chownSync(join(dataDir, '..'), NOBODY, NOBODY);
    mkdirSync(dataDir, { mode: 0o700 }); // root's, in a directory of nobody's
    writeFileSync(join(dataDir, 'stray'), 'left by root');
    const p = await startNode({ id: 'n1', configPath: config, logPath: join(work, 'left.log'), clientUrl });
    await signalNode(p, 'SIGTERM');
    assert.equal(p.exitCode, 0, readFileSync(join(work, 'left.log'), 'utf8').slice(-2000));
    assert.deepEqual(notOwnedBy(join(dataDir, '..'), NOBODY, NOBODY), []);
  });

  test('a holder owned by root changes nothing', async () => {
    const holder = join(work, 'rootowned');
    mkdirSync(holder);
    const config = join(work, 'rootowned.json');
    writeFileSync(config, JSON.stringify({ clusterId: 'owned-root', secret: SECRET, nodes: [{ id: 'n1', peerUrl: 'ws://127.0.0.1:1', clientUrl: 'ws://127.0.0.1:2', dataDir: join(holder, 'n1') }] }));
    await run(process.execPath, [CLI, 'snapshot', 'restore', backup, '--config', config, '--min-token', '1000']);
    assert.deepEqual(notOwnedBy(holder, 0, 0), []);
  });
});
