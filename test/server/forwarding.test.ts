// Forwarding in process: two Forwarders whose peer link is a function call, so the test
// sees exactly what a follower sends its leader and what comes back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Forwarder, type ForwardCore, type PeerApp } from '../../src/server/replication/forwarding.js';
import { fail } from '../../src/server/api/wire.js';
import { MAX_LEASE_BATCH } from '../../src/server/replication/lease-batch.js';
import type { Answer } from '../../src/protocol/ops.js';
import type { Request } from '../../src/protocol/client-protocol.js';

interface Node {
  fwd: Forwarder;
  leader: string | null;
  handled: { req: Request; owner: string | null }[];
  renewed: number[][];
  /** False: no link to any peer. */
  linked: boolean;
  /** Peers this node has no link to. */
  unreachable: Set<string>;
  answer: Answer | 'never';
}

function pair(timeoutMs = 200): { follower: Node; leader: Node } {
  const { follower, leader } = trio(timeoutMs);
  return { follower, leader };
}

/** n1 a follower, n2 the leader, n3 another follower. */
function trio(timeoutMs = 200, leaderWaitMs = 100, linkRetryMs?: number): { follower: Node; leader: Node; third: Node } {
  const nodes = new Map<string, Node>();
  const make = (id: string): Node => {
    const n: Node = { leader: null, handled: [], renewed: [], linked: true, unreachable: new Set(), answer: { ok: true, result: { served: id } } as unknown as Answer, fwd: null as unknown as Forwarder };
    const core: ForwardCore = {
      id,
      leader: () => n.leader,
      isLeader: () => n.leader === id,
      sendApp: (to: string, frame: PeerApp) => {
        if (!n.linked || n.unreachable.has(to)) return false;
        queueMicrotask(() => nodes.get(to)!.fwd.onPeerApp(id, structuredClone(frame)));
        return true;
      },
      // The fake answers a marker whatever the op: a cast, the real handle answers by op.
      handle: async <R extends Request>(req: R, owner: string | null) => {
        n.handled.push({ req, owner });
        return (n.answer === 'never' ? new Promise<Answer>(() => {}) : n.answer) as Promise<Answer<R['op']>> | Answer<R['op']>;
      },
      renewLeases: async (sessions) => (n.renewed.push([...sessions]), { ok: true, result: { ttls: sessions.map((s) => s * 10) } }),
      unavailable: (message) => fail('UNAVAILABLE', message),
      removedBy: () => {},
    };
    n.fwd = new Forwarder(core, timeoutMs, leaderWaitMs, linkRetryMs);
    nodes.set(id, n);
    return n;
  };
  const follower = make('n1');
  const leader = make('n2');
  const third = make('n3');
  follower.leader = leader.leader = third.leader = 'n2';
  return { follower, leader, third };
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

test('no link to the leader and no other leader in time: UNAVAILABLE, with no hint to the unreachable node', async () => {
  const { follower } = pair();
  follower.linked = false;
  const started = performance.now();
  const ans = await follower.fwd.forward(put);
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.equal(ans.ok ? null : ans.error.leaderHint, undefined);
  assert.ok(performance.now() - started >= 90, 'waited for a leader it can reach');
});

test('no link to the leader (it was killed): the request waits for the next leader and goes there', async () => {
  const { follower, leader, third } = trio();
  follower.unreachable.add('n2'); // n2's sockets closed; the followers still name it leader
  const pending = follower.fwd.forward(put);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(leader.handled.length + third.handled.length, 0);
  follower.leader = third.leader = 'n3';
  follower.fwd.leaderKnown();
  assert.deepEqual(await pending, { ok: true, result: { served: 'n3' } });
  assert.equal(leader.handled.length, 0);
});

test('no link to the leader for a moment (its link is re-dialed): the request goes to it once the link is back', async () => {
  const { follower, leader } = pair();
  follower.linked = false;
  const pending = follower.fwd.forward(put);
  setTimeout(() => (follower.linked = true), 30);
  assert.deepEqual(await pending, { ok: true, result: { served: 'n2' } });
  assert.equal(leader.handled.length, 1);
});

test('a request held for want of a link to the leader goes the moment the link is up, not at its next retry', async () => {
  // A retry interval far longer than the test: only linkUp can send it in time.
  const { follower, leader } = trio(200, 60_000, 60_000);
  follower.linked = false;
  const started = performance.now();
  const pending = follower.fwd.forward(put);
  await new Promise((r) => setImmediate(r));
  assert.equal(leader.handled.length, 0);
  follower.linked = true;
  follower.fwd.linkUp('n3'); // another peer's link: not the one it waits for
  await new Promise((r) => setImmediate(r));
  assert.equal(leader.handled.length, 0);
  follower.fwd.linkUp('n2');
  assert.deepEqual(await pending, { ok: true, result: { served: 'n2' } });
  assert.ok(performance.now() - started < 30_000, 'waited for the retry instead of the link');
});

test('thousands of held requests all go to the next leader once it is elected', async () => {
  const { follower, third } = trio(5_000, 60_000);
  follower.unreachable.add('n2');
  const pending = Array.from({ length: 5_000 }, (_, i) => follower.fwd.forward({ ...put, seq: i + 1 }));
  await new Promise((r) => setTimeout(r, 120)); // a few link retries pass
  follower.leader = third.leader = 'n3';
  follower.fwd.leaderKnown();
  const answers = await Promise.all(pending);
  assert.ok(answers.every((a) => a.ok));
  assert.equal(third.handled.length, 5_000);
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

test("a follower's keepalive batch goes to the leader as one frame and its answer comes back", async () => {
  const { follower, leader } = pair();
  const ans = await follower.fwd.renewLeases([3, 1, 2]);
  assert.deepEqual(ans, { ok: true, result: { ttls: [30, 10, 20] } });
  assert.deepEqual(leader.renewed, [[3, 1, 2]]);
  assert.deepEqual(follower.renewed, []);
});

test('the leader checks a keepalive batch before renewing anything', async () => {
  const { follower, leader } = pair();
  for (const bad of [[1, -2], [1.5], ['7'], Array.from({ length: MAX_LEASE_BATCH + 1 }, (_, i) => i + 1)]) {
    const ans = await follower.fwd.renewLeases(bad as number[]);
    assert.equal(ans.ok ? null : ans.error.code, 'BAD_FRAME', JSON.stringify(bad).slice(0, 40));
  }
  assert.deepEqual(leader.renewed, []);
});

test('a keepalive batch that reaches a node that does not lead is UNAVAILABLE, never passed on', async () => {
  const { follower, leader } = pair();
  leader.leader = 'n1';
  const ans = await follower.fwd.renewLeases([1]);
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.deepEqual(leader.renewed, []);
});

test('keepalives go in batches only to a leader that said on its current link that it serves them', async () => {
  const { follower, leader } = pair();
  assert.equal(follower.fwd.batchesFor('n2'), false, 'nothing heard from n2 yet: as to an older release');
  leader.fwd.linkUp('n1');
  await new Promise((r) => queueMicrotask(() => r(null)));
  assert.equal(follower.fwd.batchesFor('n2'), true);
  follower.fwd.linkDown('n2');
  assert.equal(follower.fwd.batchesFor('n2'), false, 'a new link asks again: the peer may restart on another release');
  assert.equal(follower.fwd.batchesFor(null), true, 'no leader known: the batch waits for one');
});

test('a keepalive batch that filled while this node was elected is renewed here at once', async () => {
  const { follower, leader } = pair();
  follower.leader = 'n1';
  // Not taken for a handing-over leader's own request (held for the next leader, then UNAVAILABLE).
  assert.deepEqual(await follower.fwd.renewLeases([7]), { ok: true, result: { ttls: [70] } });
  assert.deepEqual(follower.renewed, [[7]]);
  assert.deepEqual(leader.renewed, []);
});

test('a keepalive batch waiting for a leader is renewed here when this node is elected', async () => {
  const { follower } = pair();
  follower.leader = null;
  const pending = follower.fwd.renewLeases([4]);
  follower.leader = 'n1';
  follower.fwd.leaderKnown();
  assert.deepEqual(await pending, { ok: true, result: { ttls: [40] } });
  assert.deepEqual(follower.renewed, [[4]]);
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

test('a request held for want of a link to the leader is dropped once its client has gone, not forwarded to the next leader', async () => {
  const { follower, leader, third } = trio();
  follower.unreachable.add('n2'); // n2 was killed; n1 holds the request for the next leader
  let clientGone = false;
  const pending = follower.fwd.forward(put, null, () => clientGone);
  await new Promise((r) => setTimeout(r, 20));
  // The client gave up on n1 (the SDK's scout moved it, or its deadline passed and it
  // withdrew the request at the new leader): a forward now would apply it after that.
  clientGone = true;
  follower.leader = third.leader = 'n3';
  follower.fwd.leaderKnown();
  const ans = await pending;
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.equal(leader.handled.length + third.handled.length, 0, 'never reached a leader');
});

test('a request waiting for a leader to be elected is dropped once its client has gone', async () => {
  const { follower, leader } = pair();
  follower.leader = null;
  let clientGone = false;
  const pending = follower.fwd.forward(put, null, () => clientGone);
  clientGone = true;
  follower.leader = 'n2';
  follower.fwd.leaderKnown();
  const ans = await pending;
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.equal(leader.handled.length, 0, 'never reached the leader');
});

test('a request is held for a leader at most leaderWaitMs in all: waiting for an election, then for a link, share one bound', async () => {
  const { follower } = trio(200, 400);
  follower.leader = null;
  const started = performance.now();
  const pending = follower.fwd.forward(put);
  await new Promise((r) => setTimeout(r, 300));
  // Elected: a leader the follower cannot reach (its link is still being dialed).
  follower.unreachable.add('n2');
  follower.leader = 'n2';
  follower.fwd.leaderKnown();
  const ans = await pending;
  const elapsed = performance.now() - started;
  assert.equal(ans.ok ? null : ans.error.code, 'UNAVAILABLE');
  assert.ok(elapsed < 600, `held ${Math.round(elapsed)} ms with a bound of 400 ms`);
});
