// Names and values on the operator's terminal (the built CLI against a real node). A lock
// named with ESC and BEL sequences was granted, and `palisade locks` and `snapshot inspect`
// printed those bytes raw; a lone surrogate was accepted as a name. Now new names are
// well-formed Unicode without control characters (refused at the protocol edge), and the
// CLI escapes what a terminal would act on in everything it prints from the cluster.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CLI, TestCluster } from '../support/cluster.js';
import { RawClient } from '../support/raw-client.js';

const run = promisify(execFile);
/** What a terminal acts on: C0 and C1 controls, DEL, bidi overrides. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('names and values on the terminal', { timeout: 120_000 }, () => {
  let c: TestCluster;
  let w: RawClient;
  let session: number;
  let seq = 0;

  before(async () => {
    c = await TestCluster.started({ nodes: 1 });
    w = await RawClient.connect(c.endpoints[0]!);
    session = (await w.ok({ op: 'openSession', ttlMs: 60_000 })).session as number;
  });

  after(async () => {
    w?.close();
    await c?.stop();
  });

  test('a new name with control characters is refused, over the websocket and over HTTP', async () => {
    for (const name of ['\u001b]0;pwned\u0007\u001b[2J', 'bell\u0007', 'c1\u009b31m', 'nul\u0000']) {
      const r = await w.call({ op: 'acquire', session, seq: ++seq, name, mode: 'exclusive', wait: false });
      assert.ok(!r.ok && r.error.code === 'INVALID_ARGUMENT', `${JSON.stringify(name)}: ${JSON.stringify(r)}`);
    }
    for (const [op, field] of [['campaign', 'election'], ['put', 'key']] as const) {
      const r = await w.call({ op, session, seq: ++seq, [field]: 'x\u001b[31m', value: op === 'put' ? new Uint8Array([1]) : 'v' });
      assert.ok(!r.ok && r.error.code === 'INVALID_ARGUMENT', `${op}: ${JSON.stringify(r)}`);
    }
    // JSON's "\ud800" is a lone surrogate: no Unicode text has one.
    const base = c.endpoints[0]!.replace(/^ws/, 'http');
    const res = await fetch(`${base}/v1/lock/acquire`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"session":${session},"seq":${++seq},"name":"lone\\ud800"}` });
    assert.equal(res.status, 400, await res.text());
  });

  test('palisade locks, leader and snapshot inspect escape what a terminal would act on', async () => {
    // A name may hold a bidi override (it is no control character), and a value anything.
    const name = 'invoice\u202egnp.exe';
    assert.ok((await w.call({ op: 'acquire', session, seq: ++seq, name, mode: 'exclusive', wait: false })).ok);
    assert.ok((await w.call({ op: 'campaign', session, seq: ++seq, election: 'primary', value: 'host-a\u009b2J\u001b]0;t\u0007' })).ok);
    const endpoints = ['--endpoints', c.endpoints[0]!];
    const locks = (await run(process.execPath, [CLI, 'locks', ...endpoints])).stdout;
    assert.doesNotMatch(locks, RAW_CONTROL, 'palisade locks');
    assert.match(locks, /invoice\\u202egnp\.exe/);
    const locksJson = (await run(process.execPath, [CLI, 'locks', '--json', ...endpoints])).stdout;
    assert.doesNotMatch(locksJson, RAW_CONTROL, 'palisade locks --json');
    assert.equal((JSON.parse(locksJson) as { name: string }[]).find((l) => l.name === name)?.name, name, 'the JSON still says the name');
    const leader = (await run(process.execPath, [CLI, 'leader', 'primary', ...endpoints])).stdout;
    assert.doesNotMatch(leader, RAW_CONTROL, 'palisade leader');
    const file = join(c.dir, 'names.palisade');
    await run(process.execPath, [CLI, 'snapshot', 'save', file, ...endpoints]);
    const inspect = (await run(process.execPath, [CLI, 'snapshot', 'inspect', file])).stdout;
    assert.doesNotMatch(inspect, RAW_CONTROL, 'snapshot inspect');
    assert.match(inspect, /invoice\\u202egnp\.exe/);
    const inspectJson = (await run(process.execPath, [CLI, 'snapshot', 'inspect', file, '--json'])).stdout;
    assert.doesNotMatch(inspectJson, RAW_CONTROL, 'snapshot inspect --json');
  });
});
