// Membership administration on the leader: list members, add one (as a learner first),
// remove one, hand leadership over, and promote learners that caught up; and the node's
// own admin ops (compact now, a backup copy). Membership itself
// lives in the Raft log (members.ts applies it); this module only proposes changes and
// waits for them. Depends on the node through AdminCore only.
import { sleep, type NodeClock } from '../clock.js';
import type { Logger } from 'pino';
import type { ConfChange, RaftNode } from '../../raft/index.js';
import type { MemberInfo, Request } from '../../protocol/client-protocol.js';
import { parseWsUrl } from '../../config/cluster-config.js';
import { encodeMemberContext, type MemberDirectory } from '../../storage/members.js';
import { ProposalLost, ProposalTimeout, type ProposalTracker } from '../replication/proposals.js';
import { fail } from '../api/wire.js';
import { answer, type Answer } from '../../protocol/ops.js';

export type AdminRequest = Extract<Request, { op: 'members' | 'addMember' | 'removeMember' | 'transferLeader' | 'snapshot' }>;

/** The node as membership administration sees it. */
export interface AdminCore {
  readonly id: string;
  readonly raft: RaftNode;
  readonly proposals: ProposalTracker;
  readonly electionTimeoutMs: number;
  members(): MemberDirectory;
  /** Process the core's output soon (after a proposal). */
  kick(): void;
  forward<R extends Request>(req: R): Promise<Answer<R['op']>>;
  linearizable(): Promise<void>;
  snapshotNow(): Promise<number>;
  /** `palisade snapshot save`: a backup file of the state, a chunk at a time (backup-files.ts). */
  backup(req: Extract<Request, { op: 'snapshot' }>): Promise<Answer<'snapshot'>>;
  unavailable(message: string): Answer<never>;
  /** The node's clock (a transfer waits on it). */
  readonly clock: NodeClock;
}

export class MembershipAdmin {
  constructor(
    private readonly core: AdminCore,
    private readonly log: Logger,
  ) {}

  async serve(req: AdminRequest): Promise<Answer<AdminRequest['op']>> {
    const { core } = this;
    switch (req.op) {
      case 'members':
        await core.linearizable();
        return answer(req.op, this.memberList());
      case 'snapshot':
        if (req.backup) return core.backup(req);
        return answer(req.op, { index: await core.snapshotNow() });
      case 'addMember':
      case 'removeMember':
      case 'transferLeader':
        if (core.raft.role !== 'leader') return core.forward(req);
        if (req.op === 'transferLeader') return this.transferLeadership(req.to);
        return this.changeMembership(req);
    }
  }

  /** Voters, then learners, with the URLs the log recorded for them. */
  memberList(): MemberInfo[] {
    const conf = this.core.raft.confState;
    const members = this.core.members();
    const out: MemberInfo[] = [];
    for (const [ids, voter] of [[conf.voters, true], [conf.learners, false]] as const) {
      for (const id of ids) {
        const u = members.get(id);
        out.push({ id, peerUrl: u?.peerUrl ?? '', clientUrl: u?.clientUrl ?? '', voter });
      }
    }
    return out;
  }

  /** The leader promotes a learner once it holds the committed log (one change at a time). */
  promoteCaughtUpLearners(): void {
    const { raft } = this.core;
    if (raft.role !== 'leader') return;
    for (const p of raft.progress()) {
      if (!p.learner || p.match < raft.log.committed) continue;
      const r = raft.proposeConfChange({ type: 'promote', node: p.id });
      if (r.ok) {
        this.log.info({ member: p.id, index: r.index }, 'learner caught up: promoting to voter');
        this.core.kick();
      }
      return;
    }
  }

  private async changeMembership(req: Extract<Request, { op: 'addMember' | 'removeMember' }>): Promise<Answer<'addMember' | 'removeMember'>> {
    const { core } = this;
    let cc: ConfChange;
    if (req.op === 'addMember') {
      if (!/^[A-Za-z0-9_.-]{1,64}$/.test(req.member)) return fail('INVALID_ARGUMENT', 'member id may hold only letters, digits, ".", "_" and "-" (1-64)');
      try {
        parseWsUrl(req.peerUrl, 'peerUrl');
        parseWsUrl(req.clientUrl, 'clientUrl');
      } catch (e) {
        return fail('INVALID_ARGUMENT', (e as Error).message);
      }
      const known = core.members().get(req.member);
      const conf = core.raft.confState;
      if ((conf.voters.includes(req.member) || conf.learners.includes(req.member)) && known?.peerUrl === req.peerUrl && known.clientUrl === req.clientUrl) {
        return answer(req.op, { index: 0, already: true }); // a retried add
      }
      cc = { type: 'addLearner', node: req.member, context: encodeMemberContext({ peerUrl: req.peerUrl, clientUrl: req.clientUrl }) };
    } else {
      // A retried removal whose first attempt was applied (its answer lost, e.g. with the
      // removed leader's connection) is done, not a conflict: as for a retried add.
      const conf = core.raft.confState;
      if (!conf.voters.includes(req.member) && !conf.learners.includes(req.member) && core.members().wasRemoved(req.member)) return answer(req.op, { index: 0, already: true });
      cc = { type: 'remove', node: req.member };
    }
    const r = core.raft.proposeConfChange(cc);
    if (!r.ok) {
      if (r.reason === 'confInvalid') return fail('CONFLICT', r.message ?? 'invalid membership change');
      if (r.reason === 'notLeader') return core.forward(req);
      return core.unavailable(`${r.message ?? r.reason}; retry`);
    }
    core.kick();
    try {
      await core.proposals.wait(r.index, r.term);
      return answer(req.op, { index: r.index });
    } catch (e) {
      if (e instanceof ProposalLost) return core.unavailable(`${e.message}; retry`);
      if (e instanceof ProposalTimeout) return fail('TIMEOUT', e.message);
      throw e;
    }
  }

  /** Leadership transfer (thesis §3.10) to `to`, or to the most caught-up voter. */
  private async transferLeadership(to: string | undefined): Promise<Answer<'transferLeader'>> {
    const { core } = this;
    const { raft } = core;
    const target = to ?? raft.progress().filter((p) => p.id !== core.id && !p.learner).sort((a, b) => b.match - a.match)[0]?.id;
    if (target === core.id) return answer('transferLeader', { leader: core.id });
    if (!target) return fail('CONFLICT', 'no other voter to hand leadership to');
    if (!raft.transferLeader(target)) return fail('INVALID_ARGUMENT', `${target} is not a voter this leader can hand over to`);
    core.kick();
    const deadline = core.clock.now() + core.electionTimeoutMs * 2;
    while (core.clock.now() < deadline) {
      if (raft.role !== 'leader' && raft.leader !== null) return answer('transferLeader', { leader: raft.leader });
      await sleep(core.clock, 5);
    }
    return raft.role === 'leader' ? fail('TIMEOUT', `${target} did not take over within an election timeout`) : answer('transferLeader', { leader: raft.leader });
  }
}
