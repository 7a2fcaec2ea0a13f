// RaftDriver with its seams injected: a storage whose writes complete when the test says
// (as LevelDB's do, later), and timers the test runs by hand. What production's ordering
// promises: the leader's AppendEntries leave before its own write; votes and append
// acknowledgements only once the write is durable; committed entries are applied while the
// write of newer ones is in flight, but the core is advanced only after it; a commit-only
// Ready writes nothing, and a clean stop writes the commit index it held back. (The
// simulator runs the same driver with a store that is durable on return: test/sim.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RaftNode, type Message, type ReadyWrite } from '../../src/raft/index.js';
import { RaftDriver, type DriverHooks, type DriverTimers } from '../../src/server/replication/raft-driver.js';

const enc = new TextEncoder();

function setup(id: string, preVote = false, opts: { writesFail?: boolean; fatals?: string[] } = {}) {
  const raft = new RaftNode(
    { id, heartbeatTicks: 1, electionTicks: 10, random: () => 0, preVote },
    { hardState: { term: 1, vote: null, commit: 0 }, conf: { voters: ['a', 'b', 'c'], learners: [] }, entries: [] },
  );
  const events: string[] = [];
  const writes: { w: ReadyWrite; done: () => void }[] = [];
  const sent: Message[] = [];
  const storage = {
    save: (w: ReadyWrite) =>
      new Promise<void>((resolve, reject) => {
        const done = opts.writesFail ? () => reject(new Error('disk gone')) : resolve;
        events.push(`write ${w.entries.length} entries${w.hardState ? `, term ${w.hardState.term} vote ${w.hardState.vote} commit ${w.hardState.commit}` : ''}`);
        writes.push({ w, done });
      }),
  };
  const soon: (() => void)[] = [];
  const advances = { count: 0 };
  const timers: DriverTimers = { soon: (fn) => void soon.push(fn), every: () => () => {} };
  const hooks: DriverHooks = {
    send: (msgs) => {
      for (const m of msgs) {
        sent.push(m);
        events.push(`send ${m.type} to ${m.to}`);
      }
    },
    apply: (entries) => events.push(`apply ${entries.map((e) => e.index).join(',')}`),
    installSnapshot: () => {},
    readStates: () => {},
    softState: (s) => events.push(`role ${s.role}`),
    afterAdvance: () => void advances.count++,
    paused: () => {},
    fatal: (err) => {
      if (!opts.fatals) throw err;
      opts.fatals.push(err.message);
    },
  };
  const driver = new RaftDriver(raft, storage, hooks, 10, 100, { error: () => {} }, () => 0, timers);
  /** Run what the driver scheduled, then let resolved writes carry on. */
  const turn = async () => {
    for (const fn of soon.splice(0)) fn();
    await new Promise((r) => setImmediate(r));
  };
  const completeWrites = async () => {
    for (const w of writes.splice(0)) w.done();
    await new Promise((r) => setImmediate(r));
  };
  return { raft, driver, events, writes, sent, turn, completeWrites, advances };
}

test('a vote leaves only once the new term and vote are durable', async () => {
  const { raft, driver, events, writes, turn, completeWrites } = setup('a');
  raft.step({ type: 'vote', from: 'b', to: 'a', term: 2, index: 0, logTerm: 0 });
  driver.kick();
  await turn();
  assert.deepEqual(events, ['write 0 entries, term 2 vote b commit 0']);
  assert.equal(writes.length, 1);
  await completeWrites();
  assert.deepEqual(events.slice(1), ['send voteResp to b']);
});

test("a leader's AppendEntries leave before its own write; the acknowledgement of a follower after its write", async () => {
  const leader = setup('a');
  leader.raft.campaign();
  leader.driver.kick();
  await leader.turn();
  await leader.completeWrites(); // the candidate's term and vote, then its vote requests
  leader.raft.step({ type: 'voteResp', from: 'b', to: 'a', term: 2 });
  leader.raft.propose(enc.encode('x'));
  leader.events.length = 0;
  leader.driver.kick();
  await leader.turn();
  // Before the leader's own write completes, its AppendEntries are out.
  const appsBeforeWrite = leader.events.filter((e) => e.startsWith('send app'));
  assert.ok(appsBeforeWrite.length >= 2, leader.events.join('; '));
  assert.match(leader.events.at(-1)!, /^write 2 entries/);
  const app = leader.sent.find((m) => m.type === 'app' && m.to === 'b')!;

  const follower = setup('b');
  follower.raft.step(app);
  follower.driver.kick();
  await follower.turn();
  assert.deepEqual(follower.events.filter((e) => e.startsWith('send')), [], 'no acknowledgement before the write');
  await follower.completeWrites();
  assert.deepEqual(follower.events.filter((e) => e.startsWith('send')), ['send appResp to a']);
});

test('a commit-only Ready writes nothing; a clean stop writes the commit index it held back', async () => {
  const { raft, driver, events, writes, turn, completeWrites } = setup('b');
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 0, logTerm: 0, commit: 0, entries: [{ term: 2, index: 1, type: 'normal', data: new Uint8Array() }] });
  driver.kick();
  await turn();
  await completeWrites();
  events.length = 0;
  raft.step({ type: 'heartbeat', from: 'a', to: 'b', term: 2, commit: 1 });
  driver.kick();
  await turn();
  assert.equal(writes.length, 0, events.join('; '));
  assert.ok(events.includes('apply 1'), events.join('; '));
  const stopping = driver.stop();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(writes.map((w) => w.w.hardState), [{ term: 2, vote: null, commit: 1 }]);
  await completeWrites();
  await stopping;
});

test('committed entries are applied while the write of newer ones runs; the acknowledgement and the advance wait for it', async () => {
  const { raft, driver, events, writes, turn, completeWrites, advances } = setup('b');
  const entry = (index: number) => ({ term: 2, index, type: 'normal' as const, data: enc.encode(`e${index}`) });
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 0, logTerm: 0, commit: 0, entries: [entry(1)] });
  driver.kick();
  await turn();
  await completeWrites();
  events.length = 0;
  const advancedBefore = advances.count;
  // Entry 2 arrives with the news that entry 1 (already durable here) is committed.
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 1, logTerm: 2, commit: 1, entries: [entry(2)] });
  driver.kick();
  await turn();
  assert.equal(writes.length, 1, events.join('; '));
  assert.deepEqual(events, ['write 1 entries, term 2 vote null commit 1', 'apply 1'], 'entry 1 applied during the write');
  assert.equal(advances.count, advancedBefore, 'the core is not advanced before the write is durable');
  assert.equal(raft.log.applied, 0);
  await completeWrites();
  assert.deepEqual(events.slice(2), ['send appResp to a'], 'applied once, acknowledged after the write');
  assert.equal(advances.count, advancedBefore + 1);
  assert.equal(raft.log.applied, 1);
});

test('a committed entry that the same write makes durable is applied only after it', async () => {
  const { raft, driver, events, turn, completeWrites } = setup('b');
  raft.step({ type: 'heartbeat', from: 'a', to: 'b', term: 2, commit: 0 }); // follower of a at term 2
  driver.kick();
  await turn();
  await completeWrites();
  events.length = 0;
  const entry = { term: 2, index: 1, type: 'normal' as const, data: enc.encode('e1') };
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 0, logTerm: 0, commit: 1, entries: [entry] });
  driver.kick();
  await turn();
  assert.deepEqual(events, ['write 1 entries, term 2 vote null commit 1'], 'not applied before its own write');
  await completeWrites();
  assert.deepEqual(events.slice(1), ['send appResp to a', 'apply 1']);
});

test('an apply that throws while a write is in flight, then that write failing too, is one fatal error', async () => {
  const raft = new RaftNode(
    { id: 'b', heartbeatTicks: 1, electionTicks: 10, random: () => 0 },
    { hardState: { term: 2, vote: null, commit: 0 }, conf: { voters: ['a', 'b', 'c'], learners: [] }, entries: [{ term: 2, index: 1, type: 'normal', data: enc.encode('e1') }] },
  );
  raft.step({ type: 'heartbeat', from: 'a', to: 'b', term: 2, commit: 0 });
  const rejects: ((e: Error) => void)[] = [];
  const fatals: string[] = [];
  const soon: (() => void)[] = [];
  const driver = new RaftDriver(
    raft,
    { save: () => new Promise<void>((_, reject) => void rejects.push(reject)) },
    {
      send: () => {},
      apply: () => {
        throw new Error('apply failed');
      },
      installSnapshot: () => {},
      readStates: () => {},
      softState: () => {},
      afterAdvance: () => {},
      paused: () => {},
      fatal: (err) => void fatals.push(err.message),
    },
    10,
    100,
    { error: () => {} },
    () => 0,
    { soon: (fn) => void soon.push(fn), every: () => () => {} },
  );
  driver.kick();
  for (const fn of soon.splice(0)) fn(); // learns its leader: nothing to write or apply
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 1, logTerm: 2, commit: 1, entries: [{ term: 2, index: 2, type: 'normal', data: enc.encode('e2') }] });
  driver.kick();
  for (const fn of soon.splice(0)) fn(); // entry 2 written, entry 1 (durable) applied: it throws
  assert.equal(rejects.length, 1);
  for (const r of rejects.splice(0)) r(new Error('write failed'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(fatals, ['apply failed']);
});

test('after a failed write the driver writes nothing more, and stop() returns even when work arrived since', async () => {
  // Found by the in-process membership suite (a node crashed under load never finished its
  // stop): a message that kicked the driver after its write failed started a second pass, whose
  // write failed too; that second failure was ignored as "already failed" and left the loop
  // marked running, so stop() waited for a pass that would never end.
  const fatals: string[] = [];
  const { raft, driver, writes, turn, completeWrites } = setup('b', false, { writesFail: true, fatals });
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 0, logTerm: 0, commit: 0, entries: [{ term: 2, index: 1, type: 'normal', data: enc.encode('e1') }] });
  driver.kick();
  await turn();
  assert.equal(writes.length, 1);
  await completeWrites();
  assert.deepEqual(fatals, ['disk gone']);
  // More arrives after the failure: the driver takes no new pass, so writes nothing.
  raft.step({ type: 'app', from: 'a', to: 'b', term: 2, index: 1, logTerm: 2, commit: 1, entries: [{ term: 2, index: 2, type: 'normal', data: enc.encode('e2') }] });
  driver.kick();
  await turn();
  assert.equal(writes.length, 0, 'a failed driver must not write again');
  let stopped = false;
  const stopping = driver.stop().then(() => (stopped = true));
  await completeWrites(); // the commit index a stop keeps, refused by the same disk
  assert.ok(stopped, 'stop() after a failure must return');
  await stopping;
  assert.deepEqual(fatals, ['disk gone'], 'one fatal error');
});
