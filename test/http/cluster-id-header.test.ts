// Every answer of the HTTP API names the cluster in a `Palisade-Cluster-Id` header, so that
// clients can pin the cluster they first saw and refuse a node that answers for another
// (DESIGN.md, "The client SDK"): successes, errors, refusals before any work, the OpenAPI
// document and event streams alike.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { TestCluster } from '../support/cluster.js';
import { httpBase } from './http-client.js';

const HEADER = 'palisade-cluster-id';

/** Status and headers of one request on a connection of its own (the node allows one
 *  request per second per connection here). The body is not read: an event stream's never
 *  ends, so the request is cut once the headers arrive. */
function headersOf(url: string, method = 'GET', body?: string): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json' };
    const req = request(url, { method, agent: false, headers }, (res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
      req.destroy();
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('HTTP API: the Palisade-Cluster-Id header', { timeout: 60_000 }, () => {
  let c: TestCluster;
  let base: string;

  before(async () => {
    // One request per second per connection: the second request on a connection is refused.
    c = await TestCluster.started({ nodes: 1, extraConfig: { limits: { requestsPerSecond: 1, requestBurst: 1 } } });
    base = httpBase(c.nodes[0]!.clientUrl);
  });

  after(async () => {
    await c?.stop();
  });

  it('is on successes, errors and the OpenAPI document', async () => {
    const answers = [
      await headersOf(`${base}/v1/status`),
      await headersOf(`${base}/v1/session/keepalive`, 'POST', JSON.stringify({ session: 999_999 })),
      await headersOf(`${base}/v1/no-such-path`),
      await headersOf(`${base}/v1/lock/acquire`, 'POST', '{not json'),
      await headersOf(`${base}/v1/openapi.json`),
    ];
    assert.deepEqual(answers.map((a) => a.status), [200, 404, 404, 400, 200]);
    for (const a of answers) assert.equal(a.headers[HEADER], 'palisade-test', `status ${a.status}`);
  });

  it('is on an event stream and on a refusal', async () => {
    const stream = await headersOf(`${base}/v1/kv/watch?prefix=x/`);
    assert.equal(stream.status, 200);
    assert.equal(stream.headers[HEADER], 'palisade-test');
    // Two requests written at once on one connection: the second is past the rate limit.
    const statuses = await new Promise<{ status: number; id: string | undefined }[]>((resolve, reject) => {
      const { port } = new URL(base);
      const sock = connect(Number(port), '127.0.0.1');
      let text = '';
      sock.on('data', (d: Buffer) => (text += d.toString()));
      sock.on('error', reject);
      sock.on('close', () => {
        const heads = text.split('HTTP/1.1 ').slice(1);
        resolve(heads.map((h) => ({ status: Number(h.slice(0, 3)), id: /\r\npalisade-cluster-id: ([^\r]*)\r\n/i.exec(h)?.[1] })));
      });
      const get = `GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
      sock.write(get + get + get);
    });
    assert.ok(statuses.some((s) => s.status === 429), JSON.stringify(statuses));
    for (const s of statuses) assert.equal(s.id, 'palisade-test', `status ${s.status}`);
  });
});
