// A long-poll acquire and an event stream outlive the client port's HTTP request deadline
// (HTTP_REQUEST_TIMEOUT_MS, 10 s: it bounds receiving a request, not answering it), on a
// real node.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HTTP_REQUEST_TIMEOUT_MS } from '../../src/transport/tls.js';
import { TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

describe('HTTP API: long requests and the request deadline', { timeout: 60_000 }, () => {
  let c: TestCluster;

  before(async () => {
    c = await TestCluster.started({ nodes: 1 });
  });

  after(async () => {
    await c?.stop();
  });

  it('a long poll and a watch stream last past the request deadline', async () => {
    const base = httpBase(c.nodes[0]!.clientUrl);
    const holder = (await call(base, 'POST', '/v1/session/open', { ttlMs: 30_000 })).body.session as number;
    const waiter = (await call(base, 'POST', '/v1/session/open', { ttlMs: 30_000 })).body.session as number;
    assert.equal((await call(base, 'POST', '/v1/lock/acquire', { session: holder, seq: 1, name: 'long/x' })).body.status, 'granted');
    const stream = await fetch(`${base}/v1/kv/watch?prefix=long/`);
    const waitMs = HTTP_REQUEST_TIMEOUT_MS + 2_000;
    const started = Date.now();
    const polled = await call(base, 'POST', '/v1/lock/acquire', { session: waiter, seq: 1, name: 'long/x', waitMs });
    assert.equal(polled.status, 200, JSON.stringify(polled.body));
    assert.equal(polled.body.status, 'timeout');
    assert.ok(Date.now() - started >= waitMs);
    await call(base, 'POST', '/v1/kv/put', { session: holder, seq: 2, key: 'long/k', value: 'v' });
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes('event: kvChanged')) {
      const { value, done } = await reader.read();
      assert.ok(!done, `the stream ended early: ${text}`);
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
  });
});
