// `palisade serve --join wss://...`: the joining node dials the cluster's client port with the
// config's tls.client.ca. Without a CA that signed the nodes' certificates the join used to
// retry the same failed handshake for 30 s and end with "unable to verify the first
// certificate"; it now stops after one round of the endpoints and says which setting to add.
// With the CA in the config, the same node joins. Real processes on 127.0.0.1, real TLS.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { rpc } from '../../src/protocol/rpc.js';
import { TestCluster, until } from '../support/cluster.js';
import { startNode } from '../support/node-process.js';
import { makePki, type TestPki } from '../security/certs.js';

describe('joining over wss://', { timeout: 120_000 }, () => {
  let pki: TestPki;
  let c: TestCluster;
  let ca: Buffer;

  before(async () => {
    pki = makePki();
    for (const id of ['n1', 'n2', 'n3']) pki.issue(id);
    ca = pki.read(pki.ca);
    const files = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key` };
    c = await TestCluster.create({
      nodes: 1,
      secure: { peer: true, client: true },
      credentials: { ca },
      // The client port's section has no CA: the cluster itself does not need one.
      extraConfig: { tls: { peer: { ...files, ca: pki.ca, requireClientCert: true }, client: files } },
    });
    await c.startAll();
    await c.waitForLeader();
  });
  after(async () => {
    await c?.stop();
    pki?.remove();
  });

  test('without tls.client.ca the join stops at once, naming the setting', async () => {
    const n2 = await c.addNodeSpec('n2');
    const started = Date.now();
    await assert.rejects(
      startNode({ id: 'n2', configPath: join(c.dir, 'n2.config.json'), logPath: join(c.dir, 'n2.log'), clientUrl: n2.clientUrl, credentials: { ca }, args: ['--join', c.endpoints[0]!], startTimeoutMs: 25_000 }),
      (e: Error) => {
        assert.match(e.message, /exited at start-up/);
        assert.match(e.message, /cannot verify the TLS certificate of wss:\/\/127\.0\.0\.1:\d+ \(.*(unable to verify|self[- ]signed|issuer).*\): no CA is configured for the client port.*set "tls\.client\.ca"/);
        return true;
      },
    );
    // One round of the endpoints, not the join's 30 s deadline.
    assert.ok(Date.now() - started < 15_000, `${Date.now() - started} ms`);
  });

  test('with tls.client.ca in the same config, it joins', async () => {
    const path = join(c.dir, 'n2.config.json');
    const cfg = JSON.parse(readFileSync(path, 'utf8')) as { tls: { client: Record<string, unknown> }; nodes: { id: string; dataDir: string }[] };
    cfg.tls.client.ca = pki.ca;
    // A fresh data directory: the failed attempt marked the first one as joining.
    cfg.nodes.find((n) => n.id === 'n2')!.dataDir = join(c.dir, 'n2-again');
    writeFileSync(path, JSON.stringify(cfg, null, 2));
    await startNode({ id: 'n2', configPath: path, logPath: join(c.dir, 'n2.log'), clientUrl: c.node('n2').clientUrl, credentials: { ca }, args: ['--join', c.endpoints[0]!] }).then((p) => c.procs.set('n2', p));
    await until(async () => (await rpc(c.endpoints[0]!, { op: 'members' }, 3_000, { ca })).find((m) => m.id === 'n2')?.voter === true, 30_000, 'n2 a voter');
  });
});
