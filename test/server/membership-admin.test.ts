// Membership administration in process, on a real (pure) RaftNode that the test drives as a
// tiny driver would: each kick (in a later turn) takes the Ready, settles the proposals it commits, advances.
import { systemClock } from '../../src/server/clock.js';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { RaftNode, type ConfState } from '../../src/raft/index.js';
import { MemberDirectory } from '../../src/storage/members.js';
import { MembershipAdmin } from '../../src/server/membership/membership-admin.js';
import { ProposalTracker } from '../../src/server/replication/proposals.js';
import type { Answer } from '../../src/protocol/ops.js';
import type { Request } from '../../src/protocol/client-protocol.js';

const urls = (id: string) => ({ peerUrl: `ws://127.0.0.1:1${id.slice(1)}01`, clientUrl: `ws://127.0.0.1:1${id.slice(1)}02` });

function setup(conf: ConfState) {
  const raft = new RaftNode(
    { id: 'n1', heartbeatTicks: 1, electionTicks: 10, random: () => 0 },
    { hardState: { term: 1, vote: null, commit: 0 }, conf, entries: [] },
  );
  const members = new MemberDirectory([...conf.voters, ...conf.learners].map((id) => [id, urls(id)] as const));
  const proposals = new ProposalTracker(1_000);
  const forwarded: Request[] = [];
  const drive = () => {
    while (raft.hasReady()) {
      const rd = raft.ready();
      for (const e of rd.committedEntries) {
        if (e.type === 'conf') {
          raft.applyConfChange(e.data);
        }
        proposals.settle(e.index, e.term, null);
      }
      raft.advance(rd);
    }
  };
  // As RaftDriver does: a kick processes the core's output in a later turn, after the
  // caller has started waiting for its proposal.
  const kick = () => void setImmediate(drive);
  const admin = new MembershipAdmin(
    {
      id: 'n1',
      raft,
      proposals,
      electionTimeoutMs: 100,
      members: () => members,
      kick,
      // A marker instead of a real answer: the tests check that it was forwarded.
      forward: async <R extends Request>(req: R) => (forwarded.push(req), { ok: true, result: 'forwarded' } as unknown as Answer<R['op']>),
      linearizable: async () => {},
      snapshotNow: async () => 0,
      backup: async () => ({ ok: true, result: { backupId: 'b', clusterId: 'c', node: 'n1', index: 0, term: 1, bytes: 0, offset: 0, data: new Uint8Array(0) } }),
      unavailable: (message) => ({ ok: false, error: { code: 'UNAVAILABLE', message } }),
      clock: systemClock,
    },
    pino({ level: 'silent' }),
  );
  const elect = () => {
    for (let i = 0; i < 40 && raft.role !== 'leader'; i++) {
      raft.tick();
      drive();
    }
    assert.equal(raft.role, 'leader');
  };
  return { raft, admin, forwarded, elect, members };
}

const code = (a: Answer) => (a.ok ? 'ok' : a.error.code);

test('members lists voters, then learners, with the URLs the log recorded', async () => {
  const { admin } = setup({ voters: ['n1', 'n2'], learners: ['n3'] });
  const ans = await admin.serve({ id: 1, op: 'members' });
  assert.deepEqual(ans, {
    ok: true,
    result: [
      { id: 'n1', ...urls('n1'), voter: true },
      { id: 'n2', ...urls('n2'), voter: true },
      { id: 'n3', ...urls('n3'), voter: false },
    ],
  });
});

test('a node that does not lead forwards changes to the leader', async () => {
  const { admin, forwarded } = setup({ voters: ['n1', 'n2', 'n3'], learners: [] });
  await admin.serve({ id: 1, op: 'removeMember', member: 'n3' });
  await admin.serve({ id: 2, op: 'transferLeader' });
  assert.deepEqual(forwarded.map((r) => r.op), ['removeMember', 'transferLeader']);
});

test('the leader checks an added member, adds it as a learner, and a retried add is answered as done', async () => {
  const { admin, raft, elect, members } = setup({ voters: ['n1'], learners: [] });
  elect();
  assert.equal(code(await admin.serve({ id: 1, op: 'addMember', member: 'bad id!', ...urls('n4') })), 'INVALID_ARGUMENT');
  assert.equal(code(await admin.serve({ id: 2, op: 'addMember', member: 'n4', peerUrl: 'http://x', clientUrl: urls('n4').clientUrl })), 'INVALID_ARGUMENT');
  const added = await admin.serve({ id: 3, op: 'addMember', member: 'n4', ...urls('n4') });
  assert.equal(code(added), 'ok');
  assert.deepEqual(raft.confState.learners, ['n4']);
  // n4 joins the directory when its entry applies in the node; here the test records it.
  members.set('n4', urls('n4'));
  assert.deepEqual(await admin.serve({ id: 5, op: 'addMember', member: 'n4', ...urls('n4') }), { ok: true, result: { index: 0, already: true } });
  assert.equal(code(await admin.serve({ id: 4, op: 'transferLeader' })), 'CONFLICT', 'a learner is no voter to hand over to');
});
