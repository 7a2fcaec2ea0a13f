// One table of scenarios, run through both transports against the same real 3-node
// cluster: the websocket protocol (msgpack frames) and the HTTP/JSON API. Each step's
// outcome (ok and the result's status, or the error code, plus the facts the scenario
// reads off the answer) must be the same on both: the HTTP API is the protocol, not a
// re-implementation of it. Names are prefixed per transport so the runs do not meet.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RawClient } from '../support/raw-client.js';
import { TestCluster } from '../support/cluster.js';
import { call, httpBase } from './http-client.js';

type Reply = { ok: true; result: any } | { ok: false; error: { code: string; currentToken?: number | null; currentRevision?: number } }; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Transport {
  readonly name: string;
  call(op: string, fields: Record<string, unknown>): Promise<Reply>;
}

/** op -> HTTP route; GET routes take their fields as query parameters. */
const HTTP: Record<string, [string, string]> = {
  openSession: ['POST', '/v1/session/open'],
  keepAlive: ['POST', '/v1/session/keepalive'],
  closeSession: ['POST', '/v1/session/close'],
  acquire: ['POST', '/v1/lock/acquire'],
  release: ['POST', '/v1/lock/release'],
  get: ['GET', '/v1/lock'],
  locks: ['GET', '/v1/locks'],
  put: ['POST', '/v1/kv/put'],
  delete: ['POST', '/v1/kv/delete'],
  kvGet: ['GET', '/v1/kv'],
  campaign: ['POST', '/v1/election/campaign'],
  proclaim: ['POST', '/v1/election/proclaim'],
  resign: ['POST', '/v1/election/resign'],
  leader: ['GET', '/v1/election/leader'],
};

/** Tokens back to numbers, values back to bytes: the websocket's shapes. */
function fromJson(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(fromJson);
  if (x === null || typeof x !== 'object') return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if ((k === 'token' || k === 'currentToken') && typeof v === 'string') out[k] = Number(v);
    // Bytes come once, as value + encoding (utf8 or base64).
    else if (k === 'value' && typeof v === 'string' && 'encoding' in x) out.value = new Uint8Array(Buffer.from(v, (x as { encoding: 'utf8' | 'base64' }).encoding));
    else if (k === 'encoding' && 'value' in x) continue;
    else out[k] = fromJson(v);
  }
  return out;
}

function httpTransport(base: string): Transport {
  return {
    name: 'http',
    async call(op, fields) {
      const [method, path] = HTTP[op]!;
      const f = { ...fields } as Record<string, unknown>;
      if (op === 'acquire') {
        if (f.wait === true) f.waitMs = 200;
        delete f.wait;
      }
      if (f.value instanceof Uint8Array) f.valueBase64 = Buffer.from(f.value).toString('base64'), delete f.value;
      const r =
        method === 'GET'
          ? await call(base, 'GET', `${path}?${new URLSearchParams(Object.entries(f).map(([k, v]) => [k, String(v)] as [string, string]))}`)
          : await call(base, 'POST', path, f);
      if (r.status === 200) return { ok: true, result: fromJson(r.body) };
      return { ok: false, error: fromJson(r.body.error) as { code: string } };
    },
  };
}

function wsTransport(client: RawClient): Transport {
  return { name: 'ws', call: (op, fields) => client.call({ op, ...fields }) as Promise<Reply> };
}

/** What a step showed: ok and the status, or the error code; and `facts` the scenario read. */
function outcome(r: Reply, facts: Record<string, unknown> = {}): string {
  const head = r.ok ? `ok${r.result && typeof r.result === 'object' && 'status' in r.result ? `:${r.result.status}` : ''}` : r.error.code;
  return Object.keys(facts).length ? `${head} ${JSON.stringify(facts)}` : head;
}

type Scenario = (t: Transport, p: string) => Promise<string[]>;

async function session(t: Transport) {
  const r = await t.call('openSession', { ttlMs: 10_000 });
  assert.ok(r.ok);
  let seq = 0;
  const id = r.result.session as number;
  return { id, next: () => ++seq, write: (op: string, f: Record<string, unknown>) => t.call(op, { ...f, session: id, seq: ++seq }) };
}

const SCENARIOS: Record<string, Scenario> = {
  'exclusive locks: try, re-acquire, busy, release with a wrong and the right token': async (t, p) => {
    const a = await session(t);
    const b = await session(t);
    const out: string[] = [];
    const g = await a.write('acquire', { name: `${p}x`, mode: 'exclusive', wait: false });
    out.push(outcome(g));
    const again = await a.write('acquire', { name: `${p}x`, mode: 'exclusive', wait: false });
    out.push(outcome(again, { sameToken: again.ok && g.ok && again.result.token === g.result.token }));
    const busy = await b.write('acquire', { name: `${p}x`, mode: 'exclusive', wait: false });
    out.push(outcome(busy, { holders: busy.ok ? busy.result.holders.length : -1 }));
    const wrong = await a.write('release', { name: `${p}x`, token: (g.ok ? g.result.token : 0) + 1000 });
    out.push(outcome(wrong, { current: !wrong.ok && g.ok && wrong.error.currentToken === g.result.token }));
    out.push(outcome(await a.write('release', { name: `${p}x`, token: g.ok ? g.result.token : 0 })));
    out.push(outcome(await a.write('release', { name: `${p}x`, token: g.ok ? g.result.token : 0 })));
    const lock = await t.call('get', { name: `${p}x` });
    out.push(outcome(lock, { holders: lock.ok ? lock.result.holders.length : -1 }));
    return out;
  },
  'shared locks with a limit, mode conflicts, limit on an exclusive lock': async (t, p) => {
    const [a, b, c] = [await session(t), await session(t), await session(t)];
    const out: string[] = [];
    out.push(outcome(await a.write('acquire', { name: `${p}sem`, mode: 'shared', limit: 2, wait: false })));
    out.push(outcome(await b.write('acquire', { name: `${p}sem`, mode: 'shared', limit: 2, wait: false })));
    out.push(outcome(await c.write('acquire', { name: `${p}sem`, mode: 'shared', limit: 2, wait: false })));
    out.push(outcome(await c.write('acquire', { name: `${p}sem`, mode: 'shared', limit: 3, wait: false })));
    out.push(outcome(await a.write('acquire', { name: `${p}sem`, mode: 'exclusive', wait: false })));
    out.push(outcome(await a.write('acquire', { name: `${p}ex`, mode: 'exclusive', limit: 2, wait: false })));
    const list = await t.call('locks', { prefix: p });
    out.push(outcome(list, { names: list.ok ? list.result.map((l: { name: string }) => l.name.slice(p.length)) : [] }));
    return out;
  },
  'key-value: plain, if-revision and fenced writes; get; delete': async (t, p) => {
    const a = await session(t);
    const out: string[] = [];
    const v = (s: string) => new Uint8Array(Buffer.from(s));
    const put = await a.write('put', { key: `${p}k`, value: v('one') });
    out.push(outcome(put));
    const rev = put.ok ? put.result.revision : 0;
    const c0 = await a.write('put', { key: `${p}k`, value: v('two'), ifRevision: 0 });
    out.push(outcome(c0, { current: !c0.ok && c0.error.currentRevision === rev }));
    out.push(outcome(await a.write('put', { key: `${p}k`, value: v('two'), ifRevision: rev })));
    const g = await a.write('acquire', { name: `${p}guard`, mode: 'exclusive', wait: false });
    const token = g.ok ? g.result.token : 0;
    out.push(outcome(await a.write('put', { key: `${p}k`, value: v('late'), fence: { lock: `${p}guard`, token: token + 1 } })));
    out.push(outcome(await a.write('put', { key: `${p}k`, value: v('three'), fence: { lock: `${p}guard`, token } })));
    const got = await t.call('kvGet', { key: `${p}k` });
    out.push(outcome(got, { value: got.ok ? Buffer.from(got.result.value).toString() : null }));
    const del = await a.write('delete', { key: `${p}k` });
    out.push(outcome(del, { existed: del.ok && del.result.existed }));
    const none = await t.call('kvGet', { key: `${p}k` });
    out.push(outcome(none, { absent: none.ok && none.result === null }));
    return out;
  },
  'elections: campaign, queue, proclaim, resign, leader': async (t, p) => {
    const [a, b] = [await session(t), await session(t)];
    const out: string[] = [];
    const lead = await a.write('campaign', { election: `${p}e`, value: 'a' });
    out.push(outcome(lead));
    out.push(outcome(await b.write('campaign', { election: `${p}e`, value: 'b' })));
    const token = lead.ok ? lead.result.token : 0;
    out.push(outcome(await b.write('proclaim', { election: `${p}e`, token, value: 'b!' })));
    out.push(outcome(await a.write('proclaim', { election: `${p}e`, token, value: 'a!' })));
    const l1 = await t.call('leader', { election: `${p}e` });
    out.push(outcome(l1, { value: l1.ok ? l1.result.value : null, isA: l1.ok && l1.result.leader === a.id }));
    out.push(outcome(await a.write('resign', { election: `${p}e`, token })));
    const l2 = await t.call('leader', { election: `${p}e` });
    out.push(outcome(l2, { value: l2.ok ? l2.result.value : null, isB: l2.ok && l2.result.leader === b.id }));
    return out;
  },
  'sessions: unknown session, stale seq, reused seq, close': async (t, p) => {
    const a = await session(t);
    const out: string[] = [];
    out.push(outcome(await t.call('keepAlive', { session: 987_654_321 })));
    out.push(outcome(await t.call('acquire', { session: a.id, seq: 5, name: `${p}s`, mode: 'exclusive', wait: false })));
    out.push(outcome(await t.call('acquire', { session: a.id, seq: 6, ackedSeq: 5, name: `${p}s`, mode: 'exclusive', wait: false })));
    out.push(outcome(await t.call('acquire', { session: a.id, seq: 5, name: `${p}s`, mode: 'exclusive', wait: false })));
    out.push(outcome(await t.call('release', { session: a.id, seq: 6, name: `${p}s`, token: 1 })));
    out.push(outcome(await t.call('closeSession', { session: a.id, seq: 7 })));
    out.push(outcome(await t.call('keepAlive', { session: a.id })));
    return out;
  },
};

describe('HTTP API: the same outcomes as the websocket protocol', { timeout: 120_000 }, () => {
  let c: TestCluster;
  let ws: RawClient;
  let http: Transport;

  before(async () => {
    c = await TestCluster.started();
    const l = await c.waitForLeader();
    const follower = c.nodes.find((n) => n.id !== l)!;
    ws = await RawClient.connect(follower.clientUrl);
    http = httpTransport(httpBase(follower.clientUrl));
  });

  after(async () => {
    ws?.close();
    await c?.stop();
  });

  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    it(name, async () => {
      const overWs = await scenario(wsTransport(ws), `ws/${name.length}/`);
      const overHttp = await scenario(http, `http/${name.length}/`);
      assert.deepEqual(overHttp, overWs);
      if (process.env.SHOW_OUTCOMES) console.log(name, overWs);
    });
  }
});
