// Forwarding in process: two Forwarders whose peer link is a function call, so the test
// sees exactly what a follower sends its leader and what comes back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Forwarder, type ForwardCore, type PeerApp } from '../../src/server/forwarding.js';
import { fail } from '../../src/server/wire.js';
import type { Answer } from '../../src/protocol/ops.js';
import type { Request } from '../../src/protocol/client-protocol.js';

interface Node {
  fwd: Forwarder;
  leader: string | null;
  handled: { req: Request; owner: string | null }[];
  linked: boolean;
  answer: Answer | 'never';
}

function pair(timeoutMs = 200): { follower: Node; leader: Node } {
  const nodes = new Map<string, Node>();
  const make = (id: string): Node => {
    const n: Node = { leader: null, handled: [], linked: true, answer: { ok: true, result: { served: id } } as unknown as Answer, fwd: null as unknown as Forwarder };
    const core: ForwardCore = {
      id,
      leader: () => n.leader,
      isLeader: () => n.leader === id,
      sendApp: (to: string, frame: PeerApp) => {
        if (!n.linked) return false;
        queueMicrotask(() => nodes.get(to)!.fwd.onPeerApp(id, structuredClone(frame)));
        return true;
      },
      // The fake answers a marker whatever the op: a cast, the real handle answers by op.
      handle: async <R extends Request>(req: R, owner: string | null) => {
        n.handled.push({ req, owner });
        return (n.answer === 'never' ? new Promise<Answer>(() => {}) : n.answer) as Promise<Answer<R['op']>> | Answer<R['op']>;
      },
      unavailable: (message) => fail('UNAVAILABLE', message),
      removedBy: () => {},
    };
    n.fwd = new Forwarder(core, timeoutMs, 100);
    nodes.set(id, n);
    return n;
  };
  const follower = make('n1');
  const leader = make('n2');
  follower.leader = leader.leader = 'n2';
  return { follower, leader };
}

const put: Request = { id: 7, op: 'put', session: 3, seq: 1, key: 'k', value: new Uint8Array([1]) };

test("a follower's request is served by the leader, with the sender's token, and the answer comes back", async () => {
  const { follower, leader } = pair();
  const ans = await follower.fwd.forward(put, 'jobs');
  assert.deepEqual(ans, { ok: true, result: { served: 'n2' } });
  assert.equal(leader.handled.length, 1);
  assert.equal(leader.handled[0]!.owner, 'jobs');
  assert.equal(follower.handled.length, 0);
});

test('a node that does not lead answers UNAVAILABLE instead of forwarding again', async () => {
  const { follower, leader } = pair();
  leader.leader = 'n1'; // n2 thinks n1 leads: no loop back
  const ans = await follower.fwd.forward(put);
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.equal(leader.handled.length, 0);
});

test('no answer within the timeout: TIMEOUT, the outcome unknown', async () => {
  const { follower, leader } = pair(50);
  leader.answer = 'never';
  const ans = await follower.fwd.forward(put);
  assert.equal(ans.ok ? null : ans.error.code, 'TIMEOUT');
});

test('no link to the leader: UNAVAILABLE at once', async () => {
  const { follower } = pair();
  follower.linked = false;
  const ans = await follower.fwd.forward(put);
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
});

test('with no leader known, a request waits for one and then goes to it', async () => {
  const { follower, leader } = pair();
  follower.leader = null;
  const pending = follower.fwd.forward(put);
  follower.leader = 'n2';
  follower.fwd.leaderKnown();
  assert.deepEqual(await pending, { ok: true, result: { served: 'n2' } });
  assert.equal(leader.handled.length, 1);
});

test('a forwarded request is validated again by the leader', async () => {
  const { follower, leader } = pair();
  const ans = await follower.fwd.forward({ id: 1, op: 'put', session: -1 } as unknown as Request);
  assert.equal(ans.ok ? null : ans.error.code, 'INVALID_ARGUMENT');
  assert.equal(leader.handled.length, 0);
});

test('a forward waiting on a leader that was replaced is answered at once: TIMEOUT, outcome unknown', async () => {
  const { follower, leader } = pair(60_000);
  leader.answer = 'never'; // the old leader is paused: it never answers
  const started = performance.now();
  const pending = follower.fwd.forward(put, null);
  await new Promise((r) => setTimeout(r, 20));
  follower.leader = 'n3'; // an election elsewhere
  follower.fwd.leaderKnown();
  const ans = await pending;
  assert.ok(performance.now() - started < 1_000, 'not after the forward timeout');
  assert.equal(ans.ok, false);
  assert.equal(!ans.ok && ans.error.code, 'TIMEOUT');
});

test('a leader whose own core refused the request (handing over) never serves it here again; it waits for the next leader', async () => {
  const { follower, leader } = pair();
  follower.leader = 'n1'; // n1 still names itself leader while its core refuses proposals
  const pending = follower.fwd.forward(put);
  await new Promise((r) => setTimeout(r, 20));
  follower.fwd.leaderKnown(); // still itself: keeps waiting
  assert.equal(follower.handled.length, 0, 'not served here again (that would loop)');
  follower.leader = 'n2';
  follower.fwd.leaderKnown();
  assert.deepEqual(await pending, { ok: true, result: { served: 'n2' } });
  assert.equal(leader.handled.length, 1);
});

test('a handing-over leader with no successor in time answers UNAVAILABLE', async () => {
  const { follower } = pair();
  follower.leader = 'n1';
  const ans = await follower.fwd.forward(put);
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.equal(follower.handled.length, 0);
});
