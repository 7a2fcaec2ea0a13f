// docs/operations.md, "Replacing certificates": the cluster's CA replaced in three rounds, run
// as written against three real nodes with TLS on both ports and mutual TLS between peers
// (the certificates first made as docs/deployment.md §2 makes them), while a client holds a
// lock and writes under its fence: trust both CAs, new certificates from the new CA, drop
// the old CA, each followed by `systemctl reload` of every node in turn. No node restarts.
// Afterwards every port presents a certificate of the new CA, the peer links were made again
// with the new files (so the certificate a node dials with is the new one: its peers, which
// trust only the new CA now, accept it), a certificate of the old CA is refused on the peer
// port, and a client that trusts only the new CA is served.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';
import { LockClient } from '../../src/client/index.js';
import { TestCluster } from '../support/cluster.js';
import { DocSteps, Holder, healthy, linksMade } from '../support/rotation.js';

let c: TestCluster;
let steps: DocSteps;
let holder: Holder | undefined;
let certs: string;
const caFile = (): Buffer => readFileSync(join(certs, 'ca.crt'));

before(async () => {
  const files = { cert: 'certs/{id}.crt', key: 'certs/{id}.key', ca: 'certs/ca.crt' };
  c = await TestCluster.create({ secure: { peer: true, client: true }, extraConfig: { tls: { peer: { ...files, requireClientCert: true }, client: files } } });
  certs = join(c.dir, 'certs');
  mkdirSync(certs);
  steps = new DocSteps(c, { PALISADE_ENDPOINTS: c.endpoints.join(','), PALISADE_CA: join(certs, 'ca.crt') });
  await steps.run('certificates', { page: 'docs/deployment.md', marker: 'deployment step' });
  c.credentials = { ca: caFile() };
  await c.startAll();
  await c.waitForLeader();
});
after(async () => {
  await holder?.close();
  await c?.stop();
  steps?.remove();
});

/** Opens a websocket to `url` presenting `cert`; resolves true when the TLS handshake and the
 *  upgrade succeed, false when the node refuses. */
function opens(url: string, tls: { ca: Buffer; cert?: Buffer; key?: Buffer }): Promise<{ opened: boolean; issuer: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { ...tls, handshakeTimeout: 3_000 });
    let issuer = '';
    ws.on('upgrade', (res) => {
      issuer = (res.socket as unknown as { getPeerCertificate(): { issuer: { CN: string } } }).getPeerCertificate().issuer.CN;
    });
    ws.on('open', () => {
      ws.terminate();
      resolve({ opened: true, issuer });
    });
    ws.on('error', () => resolve({ opened: false, issuer }));
  });
}

test('the CA is replaced node by node, as documented, with a lock held throughout', async (t) => {
  // The client reads its CA file at each connection, as the page advises for a holder.
  holder = await Holder.start({ endpoints: c.endpoints, tls: () => ({ ca: caFile() }) }, 'rotation/held', 'rotation/written');
  const oldCert = { cert: readFileSync(join(certs, 'n1.crt')), key: readFileSync(join(certs, 'n1.key')) };
  copyFileSync(join(certs, 'ca.crt'), join(steps.work, 'first-ca.crt'));

  await steps.run('cert-trust-both');
  c.credentials = { ca: caFile() };
  assert.equal((caFile().toString().match(/BEGIN CERTIFICATE/g) ?? []).length, 2, 'ca.crt holds both CAs');
  await steps.reloadEach(holder);

  await steps.run('cert-issue');
  await steps.reloadEach(holder);

  const before3 = await linksMade(c);
  await steps.run('cert-drop-old');
  c.credentials = { ca: caFile() };
  await steps.reloadEach(holder);
  await healthy(c);
  const after3 = await linksMade(c);
  for (const id of ['n1', 'n2', 'n3']) assert.ok(after3[id]! > before3[id]!, `${id} made its links again with the new files: ${JSON.stringify({ before3, after3 })}`);

  const { writes, slowestMs } = await holder.check();
  assert.ok(writes >= 9, `${writes} fenced writes along the rotation (one after each of 9 reloads at least)`);
  t.diagnostic(`${writes} fenced writes along the rotation, the slowest ${slowestMs} ms`);

  const newCa = caFile();
  assert.equal((newCa.toString().match(/BEGIN CERTIFICATE/g) ?? []).length, 1, 'ca.crt holds the new CA only');
  const newCert = { cert: readFileSync(join(certs, 'n1.crt')), key: readFileSync(join(certs, 'n1.key')) };
  for (const n of c.nodes) {
    const client = await opens(n.clientUrl, { ca: newCa });
    assert.deepEqual(client, { opened: true, issuer: 'palisade CA 2' }, `${n.id}'s client port presents the new CA's certificate`);
    const peer = await opens(n.peerUrl, { ca: newCa, ...newCert });
    assert.deepEqual(peer, { opened: true, issuer: 'palisade CA 2' }, `${n.id}'s peer port presents the new CA's certificate and accepts one`);
    const old = await opens(n.peerUrl, { ca: newCa, ...oldCert });
    assert.equal(old.opened, false, `${n.id}'s peer port refuses a certificate of the old CA`);
  }
  const fresh = await LockClient.connect({ endpoints: c.endpoints, tls: { ca: newCa } });
  try {
    await fresh.put('rotation/fresh', 'served');
  } finally {
    await fresh.close();
  }
});
