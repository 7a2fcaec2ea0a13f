// The OpenAPI document (web/openapi.json) against what a real node serves: every path and
// method in the document is routed by the running node (not 404/405), every route of the
// node's table is in the document, and methods the document does not list are refused
// with 405. The node serves the document itself at /v1/openapi.json.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { servedRoutes } from '../../src/server/api/http/index.js';
import { ROOT, TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

const METHODS = ['get', 'post', 'put', 'delete', 'patch'];

/** Status and JSON body of a request; an event stream is left unread (it never ends). */
async function probe(url: string, method: string): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(url, { method, ...(method === 'GET' ? {} : { body: '{}' }) });
  if (!(res.headers.get('content-type') ?? '').startsWith('application/json')) {
    await res.body?.cancel();
    return { status: res.status, body: null };
  }
  return { status: res.status, body: await res.json() };
}

describe('HTTP API: the OpenAPI document', { timeout: 60_000 }, () => {
  let c: TestCluster;
  let base: string;
  const inRepo = JSON.parse(readFileSync(join(ROOT, 'web/openapi.json'), 'utf8')) as { openapi: string; paths: Record<string, Record<string, unknown>> };

  before(async () => {
    c = await TestCluster.started({ nodes: 1 });
    base = httpBase(c.nodes[0]!.clientUrl);
  });

  after(async () => {
    await c?.stop();
  });

  function documented(doc: typeof inRepo): string[] {
    return Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  }

  it('is served by the node as it is in the repository', async () => {
    const served = await call(base, 'GET', '/v1/openapi.json');
    assert.equal(served.status, 200);
    assert.deepEqual(served.body, inRepo);
    assert.match(inRepo.openapi, /^3\./);
  });

  it('lists exactly the routes of the node\'s route table', () => {
    assert.deepEqual(documented(inRepo), servedRoutes().map((r) => `${r.method} ${r.path}`).sort());
  });

  it('every documented method and path is routed by the running node, others are refused', async () => {
    for (const [path, ops] of Object.entries(inRepo.paths)) {
      for (const m of METHODS) {
        const r = await probe(base + path, m.toUpperCase());
        if (m in ops) {
          assert.notEqual(r.status, 405, `${m} ${path}: ${JSON.stringify(r.body)}`);
          assert.ok(!(r.status === 404 && /no such path/.test(r.body?.error?.message ?? '')), `${m} ${path} is not routed`);
        } else {
          assert.equal(r.status, 405, `${m} ${path} is not documented but answered ${r.status}`);
        }
      }
    }
    const missing = await call(base, 'GET', '/v1/locks/extra');
    assert.equal(missing.status, 404);
  });
});
