// The HTTP API shares the client port's TLS: with `tls.client` the API is https only, with
// the node's certificate, on the same port as wss (a real node, certificates by openssl).
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { makePki, type TestPki } from '../security/certs.js';

function httpsCall(url: string, ca: Buffer | undefined, method = 'GET', body?: string): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const headers = body !== undefined ? { 'content-type': 'application/json' } : {};
    const req = httpsRequest(url, { method, headers, ...(ca ? { ca } : {}) }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('HTTP API over the client port\'s TLS', { timeout: 60_000 }, () => {
  let pki: TestPki;
  let c: TestCluster;
  let ca: Buffer;
  let base: string;

  before(async () => {
    pki = makePki();
    pki.issue('n1');
    ca = pki.read(pki.ca);
    const certs = { cert: `${pki.dir}/{id}.crt`, key: `${pki.dir}/{id}.key`, ca: pki.ca };
    c = await TestCluster.create({
      nodes: 1,
      secure: { client: true },
      credentials: { ca },
      extraConfig: { tls: { client: { ...certs, requireClientCert: false } } },
    });
    await c.startAll();
    await c.waitForLeader();
    base = c.nodes[0]!.clientUrl.replace(/^wss/, 'https');
  });

  after(async () => {
    await c?.stop();
    pki?.remove();
  });

  it('serves https with the node\'s certificate, and nothing in plain text', async () => {
    const status = await httpsCall(`${base}/v1/status`, ca);
    assert.equal(status.status, 200);
    const open = await httpsCall(`${base}/v1/session/open`, ca, 'POST', '{"ttlMs":5000}');
    assert.equal(open.status, 200);
    assert.equal(typeof open.body.session, 'number');
    await assert.rejects(httpsCall(`${base}/v1/status`, undefined), /certificate/i, 'an untrusted CA is refused');
    const plain = base.replace(/^https/, 'http');
    await assert.rejects(
      new Promise((resolve, reject) => get(`${plain}/v1/status`, resolve).on('error', reject).setTimeout(5_000, () => reject(new Error('timeout')))),
      'plain HTTP on the TLS port gets no answer',
    );
  });
});
