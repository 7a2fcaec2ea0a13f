// The Python client (clients/python, standard library only) against real clusters: its
// unittest suite against a 3-node cluster over plain HTTP, with the nodes' URLs and pids (it
// SIGKILLs the leader while it holds a lock, last), and its TLS tests against a cluster whose
// client port requires client certificates from a private CA.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TestCluster } from '../support/cluster.js';
import { makePki, type TestPki } from '../security/certs.js';
import { captured, type Captured } from '../support/captured.js';
import { httpBase } from './http-client.js';

const python = spawnSync('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)']).status === 0;
const skip = !python && 'needs python3 >= 3.9';

/** Runs `python3 -m unittest -v MODULES` in clients/python; its exit code and output. */
function unittest(modules: string[], env: Record<string, string>): Promise<Captured> {
  return captured('python3', ['-m', 'unittest', '-v', ...modules], { cwd: join(ROOT, 'clients/python'), env: { ...process.env, ...env } });
}

describe('the Python client', { skip, timeout: 300_000 }, () => {
  let c: TestCluster;

  before(async () => {
    c = await TestCluster.started();
  });

  after(async () => {
    await c?.stop();
  });

  it('passes its unittest suite against the cluster (the failover test last)', async () => {
    const { code, out } = await unittest(['tests.test_unit', 'tests.test_client', 'tests.test_safety', 'tests.test_zfailover'], {
      PALISADE_URLS: c.nodes.map((n) => httpBase(n.clientUrl)).join(','),
      PALISADE_PIDS: c.nodes.map((n) => `${n.id}:${c.pid(n.id)}`).join(','),
    });
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, / skipped '|skipped=/, out);
  });
});

describe('the Python client over TLS with client certificates', { skip, timeout: 180_000 }, () => {
  let pki: TestPki;
  let c: TestCluster;

  before(async () => {
    pki = makePki();
    for (const id of ['n1', 'n2', 'n3', 'app']) pki.issue(id);
    const certs = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key`, ca: pki.ca };
    c = await TestCluster.started({
      secure: { client: true },
      credentials: { ca: pki.read(pki.ca), cert: pki.read(`${pki.dir}/app.crt`), key: pki.read(`${pki.dir}/app.key`) },
      extraConfig: { tls: { client: { ...certs, requireClientCert: true } } },
    });
  });

  after(async () => {
    await c?.stop();
    pki?.remove();
  });

  it('takes locks with a private CA and a client certificate, and refuses what it should', async () => {
    const { code, out } = await unittest(['tests.test_tls'], {
      PALISADE_TLS_URLS: c.nodes.map((n) => httpBase(n.clientUrl)).join(','),
      PALISADE_CA: pki.ca,
      PALISADE_CERT: `${pki.dir}/app.crt`,
      PALISADE_KEY: `${pki.dir}/app.key`,
      PALISADE_ROGUE_CA: pki.rogueCa,
    });
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, / skipped '|skipped=/, out);
  });
});
