// The clients read every op's answer through one table (src/protocol/results.ts). Two
// promises are checked here against real nodes (an in-process cluster):
// - every op's live answer reads, and reading it drops nothing the node sent (a field the
//   node adds to an answer and the table does not know is a test failure, not a silent loss
//   in `palisade status --json` or the SDK);
// - every op of the protocol's table is exercised here, so a new op fails this test until it
//   has a live example.
// And one compile-time promise: a table without an op does not compile (@ts-expect-error
// below fails `npm run typecheck` if it ever does).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PROTOCOL_VERSION, type RequestBody } from '../../src/protocol/client-protocol.js';
import { OPS, type Op, type ResultOf } from '../../src/protocol/ops.js';
import { Malformed, parseResult, readAnswer, RESULT_PARSERS } from '../../src/protocol/results.js';
import { InProcessCluster } from '../support/in-process-cluster.js';

const { hello: _hello, ...withoutHello } = RESULT_PARSERS;
// @ts-expect-error: a table of readers without `hello` is refused by the compiler.
const everyOpRead: { readonly [O in Op]: (v: unknown) => ResultOf<O> } = withoutHello;
void [_hello, everyOpRead];

/** Paths at which `raw` holds a value that `read` lacks or differs on (read may add defaults). */
function lost(raw: unknown, read: unknown, path = '$'): string[] {
  if (raw instanceof Uint8Array) return read instanceof Uint8Array && Buffer.compare(raw, read) === 0 ? [] : [path];
  if (Array.isArray(raw)) {
    if (!Array.isArray(read) || read.length !== raw.length) return [path];
    return raw.flatMap((x, i) => lost(x, read[i], `${path}[${i}]`));
  }
  if (typeof raw === 'object' && raw !== null) {
    if (typeof read !== 'object' || read === null) return [path];
    const r = read as Record<string, unknown>;
    return Object.entries(raw).flatMap(([k, v]) => (k in r ? lost(v, r[k], `${path}.${k}`) : [`${path}.${k}`]));
  }
  return Object.is(raw, read) ? [] : [path];
}

let c: InProcessCluster;
before(async () => {
  c = await InProcessCluster.start();
});
after(() => c?.stop());

test('every op answers in a shape its reader takes whole', async () => {
  const seen = new Set<Op>();
  let leader = await c.waitForLeader();
  const ask = async <O extends Op>(body: RequestBody & { readonly op: O }, to = leader): Promise<ResultOf<O>> => {
    const response = await c.rawRpc(to, body, 10_000);
    assert.ok(response.ok, `${body.op}: ${response.ok ? '' : `${response.error.code} ${response.error.message}`}`);
    const read = parseResult(body.op, response.result);
    assert.deepEqual(lost(response.result, read), [], `${body.op}: the reader dropped what the node sent`);
    seen.add(body.op);
    return read;
  };
  const seqs = new Map<number, number>();
  const seq = (session: number) => {
    const n = (seqs.get(session) ?? 0) + 1;
    seqs.set(session, n);
    return { session, seq: n };
  };

  await ask({ op: 'hello', version: PROTOCOL_VERSION });
  await ask({ op: 'status' });
  const s1 = (await ask({ op: 'openSession', ttlMs: 30_000, label: 'reader-1' })).session;
  const s2 = (await ask({ op: 'openSession', ttlMs: 30_000 })).session;
  await ask({ op: 'attach', session: s1 });
  await ask({ op: 'keepAlive', session: s1 });
  assert.deepEqual((await ask({ op: 'keepAlives', sessions: [s1, s2, s2 + 10_000] })).ttls, [30_000, 30_000, null]);

  const a = await ask({ op: 'acquire', ...seq(s1), name: 'r/a', mode: 'exclusive', wait: false });
  assert.equal(a.status, 'granted');
  assert.equal((await ask({ op: 'acquire', ...seq(s2), name: 'r/a', mode: 'exclusive', wait: false })).status, 'busy');
  assert.equal((await ask({ op: 'acquire', ...seq(s2), name: 'r/a', mode: 'exclusive', wait: true })).status, 'queued');
  assert.equal((await ask({ op: 'get', name: 'r/a' })).waiters.length, 1);
  await ask({ op: 'locks', prefix: 'r/' });
  await ask({ op: 'cancelWait', ...seq(s2), name: 'r/a' });
  if (a.status === 'granted') await ask({ op: 'release', ...seq(s1), name: 'r/a', token: a.token });

  const e1 = await ask({ op: 'campaign', ...seq(s1), election: 'e', value: 'v1' });
  assert.equal(e1.status, 'leader');
  assert.equal((await ask({ op: 'campaign', ...seq(s2), election: 'e', value: 'v2' })).status, 'queued');
  if (e1.status === 'leader') {
    await ask({ op: 'proclaim', ...seq(s1), election: 'e', token: e1.token, value: 'v3' });
    assert.equal((await ask({ op: 'leader', election: 'e' })).value, 'v3');
    await ask({ op: 'observe', election: 'e' });
    await ask({ op: 'unobserve', election: 'e' });
    await ask({ op: 'resign', ...seq(s1), election: 'e', token: e1.token });
  }

  const put = await ask({ op: 'put', ...seq(s1), key: 'k/1', value: new Uint8Array([1, 2, 3]) });
  assert.deepEqual([...(await ask({ op: 'kvGet', key: 'k/1' }))!.value], [1, 2, 3]);
  assert.equal(await ask({ op: 'kvGet', key: 'k/none' }), null);
  await ask({ op: 'txn', ...seq(s1), compare: [{ target: 'absent', key: 'k/2' }], success: [{ op: 'put', key: 'k/2', value: new Uint8Array([9]) }], failure: [] });
  await ask({ op: 'watch', prefix: 'k/' });
  await ask({ op: 'watch', prefix: 'k/', snapshot: true });
  await ask({ op: 'watch', prefix: 'k/', fromRevision: put.revision - 1 });
  await ask({ op: 'unwatch', prefix: 'k/' });
  await ask({ op: 'delete', ...seq(s1), key: 'k/1' });

  const b = await ask({ op: 'acquire', ...seq(s1), name: 'r/b', mode: 'exclusive', wait: false });
  assert.ok(b.status === 'granted');
  const fence = { lock: 'r/b', token: b.token };
  assert.equal((await ask({ op: 'beginOp', ...seq(s1), opKey: 'o1', fence })).status, 'run');
  await ask({ op: 'completeOp', ...seq(s1), opKey: 'o1', result: new Uint8Array([7]), fence });
  assert.equal((await ask({ op: 'beginOp', ...seq(s1), opKey: 'o1', fence })).status, 'done');

  assert.ok((await ask({ op: 'sessions' })).some((s) => s.session === s1 && s.locks.length === 1));
  assert.equal((await ask({ op: 'sessionInfo', session: s1 }))?.label, 'reader-1');
  assert.equal(await ask({ op: 'sessionInfo', session: 999_999 }), null);
  await ask({ op: 'revokeSession', session: s2, reason: 'the reader test ends it' });
  await ask({ op: 'closeSession', ...seq(s1) });

  const config = await ask({ op: 'config' });
  const [key, value] = Object.entries(config.settings)[0]!;
  await ask({ op: 'configure', settings: { [key]: value } });
  await ask({ op: 'members' });
  await ask({ op: 'addMember', member: 'n9', peerUrl: 'ws://127.0.0.1:1/peer', clientUrl: 'ws://127.0.0.1:2' });
  await ask({ op: 'removeMember', member: 'n9' });
  await ask({ op: 'snapshot' });
  await ask({ op: 'snapshot', backup: true });
  await ask({ op: 'transferLeader' });
  leader = await c.waitForLeader();

  assert.deepEqual(OPS.filter((op) => !seen.has(op)), [], 'ops without a live example here');
});

test('an answer that is not its op\'s result is the node\'s INTERNAL error, not a cast', () => {
  const cases: [Op, unknown][] = [
    ['acquire', { status: 'granted', index: 3 }], // no token
    ['acquire', { status: 'won', index: 3 }],
    ['status', { id: 'n1', role: 'boss', term: 1 }],
    ['put', { revision: 4 }], // no index
    ['kvGet', { key: 'k', value: 'not bytes', revision: 1 }],
    ['members', { id: 'n1' }],
    ['config', { settings: { 'sessions.lockDelayMs': '15s' }, configured: true }],
  ];
  for (const [op, result] of cases) {
    assert.throws(() => parseResult(op, result), Malformed, op);
    const answer = readAnswer(op, { id: 1, ok: true, result });
    assert.equal(answer.ok ? 'read' : answer.error.code, 'INTERNAL', op);
  }
});
