// Request dispatch: admit one client request (the gate), then serve it — reads after a
// linearizable read, keepalives after a confirmed heartbeat round, writes proposed to the
// log and answered once applied, admin ops to membership-admin.ts, and anything a follower
// cannot do forwarded to the leader (forwarding.ts). The websocket port, the HTTP API and
// forwarded peer requests all come through `serve`/`handle`. Depends on the node through
// DispatchCore only.
import type { Logger } from 'pino';
import { isMachineError, validateCommand, type LockMachine } from '../../lockfsm/index.js';
import type { NodeId, RaftNode } from '../../raft/index.js';
import type { HelloChallenge, HelloResult, NodeStatus, Request, WireError } from '../../protocol/client-protocol.js';
import { PROTOCOL_VERSION } from '../../protocol/client-protocol.js';
import { answer, isWriteRequest, type Answer, type WriteRequest } from '../../protocol/ops.js';
import type { ConnectionGate } from './client-gate.js';
import { nodeById, type ClusterConfig } from '../../config/cluster-config.js';
import type { Forwarder } from '../replication/forwarding.js';
import type { LeaseAnswer } from '../replication/lease-batch.js';
import { keepAliveAnswer, type KeepAliveBatcher } from '../replication/keepalive-batch.js';
import type { NodeOps } from '../ops/index.js';
import type { LeaseKeeper } from '../leases/lease-keeper.js';
import { acquireLimitProblem } from './limits.js';
import type { MemberDirectory } from '../../storage/members.js';
import type { MembershipAdmin } from '../membership/membership-admin.js';
import { ProposalLost, ProposalTimeout, type ProposalTracker } from '../replication/proposals.js';
import { ReadUnavailable, type AppliedWaiters, type ReadIndexBatcher } from '../replication/read-barrier.js';
import type { EventSink, Subscriptions } from './subscriptions.js';
import type { CommandProposer } from '../replication/command-proposer.js';
import { settingsByKey } from '../../config/replicated-settings.js';
import { UnknownSetting, answerFor, commandFor, fail, freeLock, machineFail, wireElection, wireLock } from './wire.js';
import { ownSessionsOnly } from './auth.js';
import { sessionView, sessionViews } from './session-views.js';
import { watchAnswer } from './watch-answer.js';

/** The refusal of a hello in a protocol version this node does not speak. */
function unsupportedVersion(req: Extract<Request, { op: 'hello' }>): Answer<never> | null {
  return req.version === PROTOCOL_VERSION ? null : fail('INVALID_ARGUMENT', `protocol version ${req.version} not supported (this node speaks ${PROTOCOL_VERSION})`);
}

/** A hello with a challenge (node-proof.ts). */
function isChallenge(req: Request): req is Extract<Request, { op: 'hello' }> & { challenge: HelloChallenge } {
  return req.op === 'hello' && req.challenge !== undefined;
}

/** The answer to a refused request. To anyone but its owner (and admins) a session does not
 *  exist (session-owner.ts), and `sessionInfo` answers a session that is not open with null:
 *  so it answers its refusal as unknown too, or the two answers would tell live ids apart. */
function refusedAnswer<R extends Request>(req: R, refused: WireError): Answer<R['op']> {
  if (req.op === 'sessionInfo' && refused.code === 'UNKNOWN_SESSION') return answer('sessionInfo', null) as Answer<R['op']>;
  return fail(refused.code, refused.message);
}

/** The node as request dispatch sees it (parts made at start are read through functions). */
export interface DispatchCore {
  readonly id: NodeId;
  readonly cfg: ClusterConfig;
  readonly log: Logger;
  readonly leases: LeaseKeeper;
  readonly applied: AppliedWaiters;
  readonly proposals: ProposalTracker;
  readonly subs: Subscriptions;
  raft(): RaftNode;
  machine(): LockMachine;
  /** Proposes lock-machine commands, the cluster's settings first (command-proposer.ts). */
  proposer(): CommandProposer;
  /** The cluster's time to stamp into a command (leases/cluster-clock.ts). */
  stamp(): number;
  members(): MemberDirectory;
  reads(): ReadIndexBatcher;
  admin(): MembershipAdmin;
  forwarder(): Forwarder;
  /** A follower's batches of keepalives to the leader. */
  leaseBatch(): KeepAliveBatcher;
  ops(): NodeOps | null;
  status(): NodeStatus;
  stopping(): boolean;
  /** Process the core's output soon (after a proposal). */
  kick(): void;
  now(): number;
}

export class RequestDispatcher {
  constructor(private readonly core: DispatchCore) {}

  /** Admit and serve one client request: a websocket frame, or an HTTP API call (http-api/). */
  async serve<R extends Request>(gate: ConnectionGate, req: R, sink: EventSink | null): Promise<Answer<R['op']>> {
    const refused = isChallenge(req) ? null : await this.admit(gate, req);
    // (The casts: as in handle, the case's op is R's.)
    const ans: Answer<R['op']> = refused
      ? refusedAnswer(req, refused)
      : isChallenge(req)
        ? (this.answerChallenge(gate, req) as Answer<R['op']>)
        : req.op === 'keepAlives'
          ? ((await this.keepAlivesFrom(gate, req as Extract<Request, { op: 'keepAlives' }>, sink)) as Answer<R['op']>)
          : await this.handle(ownSessionsOnly(gate.who, req), sink, gate.owner);
    gate.observe(req, ans);
    this.core.ops()?.onAnswered(req.op, ans.ok ? null : ans.error.code);
    if (req.op === 'revokeSession') this.audit(gate, req, ans);
    return ans;
  }

  /** An operator's revoke, logged by the node that admitted it: who (the token's name, the
   *  address), which session, why, and what came of it. Refusals too: an attempt is news. */
  private audit(gate: ConnectionGate, req: Extract<Request, { op: 'revokeSession' }>, ans: Answer): void {
    const who = { audit: 'revokeSession', tokenName: gate.who?.name ?? null, remote: gate.remoteAddress, session: req.session, reason: req.reason };
    if (ans.ok) this.core.log.warn({ ...who, index: (ans.result as { index: number }).index }, 'session revoked by an operator');
    else this.core.log.warn({ ...who, code: ans.error.code, error: ans.error.message }, 'session revoke refused');
  }

  /** The gate's refusal of `req`, or null to serve it. A scoped token's use of a session is
   *  judged by state that covers every entry committed before the request arrived (a
   *  linearizable read first): this node may not have applied the lock the session took a
   *  moment ago elsewhere. */
  private async admit(gate: ConnectionGate, req: Request): Promise<WireError | null> {
    const refused = gate.admit(req);
    if (refused || !gate.judgesSession(req)) return refused;
    if (gate.needsCurrentState(req)) {
      try {
        await this.linearizable();
      } catch (e) {
        return { code: 'UNAVAILABLE', message: `cannot confirm the session's owner and scope now (${(e as Error).message}); retry` };
      }
      return gate.sessionScope(req);
    }
    const scope = gate.sessionScope(req);
    // Another token's session is refused as a session that is not open, and not faster than
    // one: an unknown session is answered after a read at least.
    if (scope?.code === 'UNKNOWN_SESSION') await this.linearizable().catch(() => {});
    return scope;
  }

  /** Serve one request from a client connected here (sink) or forwarded by a peer (no sink).
   *  `owner`: the token name a session opened by this request belongs to (null: auth off). */
  async handle<R extends Request>(req: R, sink: EventSink | null, owner: string | null = null): Promise<Answer<R['op']>> {
    // Every case below answers its op's own result (answer(req.op, ...), answerFor, the
    // admin's and the forwarder's typed answers), which the compiler checks case by case;
    // it cannot carry the case's op back out to R, hence the one cast.
    return (await this.answerOne(req, sink, owner)) as Answer<R['op']>;
  }

  private async answerOne(req: Request, sink: EventSink | null, owner: string | null): Promise<Answer> {
    if (this.core.stopping()) return fail('UNAVAILABLE', 'node is shutting down');
    try {
      switch (req.op) {
        case 'hello':
          return unsupportedVersion(req) ?? this.hello({ leader: this.core.raft().leader, members: this.advertisedMembers() });
        case 'status':
          return answer(req.op, this.core.status());
        case 'attach': {
          const a = await this.keepAlive(req.session, sink);
          if (a.ok && sink) this.core.subs.sessions.add(req.session, sink);
          return a;
        }
        case 'keepAlive':
          return await this.keepAlive(req.session, sink);
        case 'keepAlives': {
          const ans = await this.renew(req.sessions, sink);
          return ans.ok ? answer(req.op, ans.result) : ans;
        }
        case 'get':
          await this.linearizable();
          return answer(req.op, (() => { const l = this.core.machine().lock(req.name); return l ? wireLock(l) : freeLock(req.name); })());
        case 'locks':
          await this.linearizable();
          return answer(req.op, this.core.machine().locks(req.prefix, req.limit ?? 1000).map(wireLock));
        case 'leader':
          await this.linearizable();
          return answer(req.op, wireElection(req.election, this.core.machine().election(req.election)));
        case 'observe': {
          if (sink) this.core.subs.elections.add(req.election, sink);
          await this.linearizable();
          return answer(req.op, wireElection(req.election, this.core.machine().election(req.election)));
        }
        case 'unobserve':
          if (sink) this.core.subs.elections.remove(req.election, sink);
          return answer(req.op, {});
        case 'kvGet': {
          await this.linearizable();
          const kv = this.core.machine().kvGet(req.key);
          return answer(req.op, kv ? { key: kv.key, value: kv.value, revision: kv.revision } : null);
        }
        case 'watch':
          // Subscribed before the read: a change applied meanwhile is pushed (and is in the
          // answer too; a client drops what the answer's revision covers, kv-watch.ts).
          if (sink) this.core.subs.watches.add(req.prefix, sink);
          await this.linearizable();
          return watchAnswer(this.core.machine(), req);
        case 'sessions':
        case 'sessionInfo':
          return await this.leaderRead(req, sink, owner, () => {
            const m = this.core.machine();
            const now = this.core.now();
            if (req.op === 'sessions') return answer(req.op, sessionViews(m, this.core.leases, now, req));
            const s = m.session(req.session);
            return answer(req.op, s === null ? null : sessionView(s, this.core.leases, now));
          });
        case 'unwatch':
          if (sink) this.core.subs.watches.remove(req.prefix, sink);
          return answer(req.op, {});
        case 'config': {
          await this.linearizable();
          const m = this.core.machine();
          return answer(req.op, { settings: settingsByKey(m.settings), configured: m.configured });
        }
        case 'configure':
          return await this.write(req, owner, sink);
        case 'members':
        case 'addMember':
        case 'removeMember':
        case 'transferLeader':
        case 'snapshot':
          return await this.core.admin().serve(req);
        case 'openSession': {
          const ans = await this.write(req, owner, sink);
          // Events for a session go to the connections that carry it.
          if (sink && ans.ok) this.core.subs.sessions.add(ans.result.session, sink);
          return ans;
        }
        default: {
          if (!isWriteRequest(req)) return fail('UNKNOWN_OP', `unknown op ${String((req as { op: unknown }).op)}`);
          const ans = await this.write(req, owner, sink);
          if (sink && ans.ok && 'session' in req) {
            this.core.subs.sessions.add(req.session, sink);
            if (req.op === 'campaign') this.core.subs.elections.add(req.election, sink);
          }
          return ans;
        }
      }
    } catch (e) {
      if (e instanceof ReadUnavailable) return this.unavailable('no leader could confirm the read; retry');
      this.core.log.error({ err: e, op: req.op }, 'request failed');
      return fail('INTERNAL', (e as Error).message);
    }
  }

  /** A hello's answer: who this node is, in which cluster, at what timing; `said` adds the
   *  leader and members (an ordinary hello) or the proof (a challenge hello). */
  private hello(said: Partial<HelloResult> & Pick<HelloResult, 'leader' | 'members'>): Answer<'hello'> {
    const { cfg } = this.core;
    return answer('hello', { nodeId: this.core.id, clusterId: cfg.clusterId, ...said, timing: { heartbeatMs: cfg.raft.heartbeatMs, electionTimeoutMs: cfg.raft.electionTimeoutMs } });
  }

  /**
   * A challenge hello (docs/protocol.md §3, "Proving a node"): this node proves it holds the digest of
   * the client's token, for its own client URL, before the client sends the token. It is
   * answered to anyone (it costs one HMAC per token configured) and changes nothing about
   * who the connection is; it names no leader and no member, which an unauthenticated
   * connection may not learn. With auth off there is nothing to prove with: no proof.
   */
  private answerChallenge(gate: ConnectionGate, req: Extract<Request, { op: 'hello' }> & { challenge: HelloChallenge }): Answer<'hello'> {
    const unsupported = unsupportedVersion(req);
    if (unsupported) return unsupported;
    const proof = gate.prove(req.challenge, this.core.cfg.clusterId, nodeById(this.core.cfg, this.core.id).clientUrl);
    if (proof === 'unknownToken') return fail('UNAUTHENTICATED', 'no token of this cluster has the id in the challenge');
    return this.hello({ leader: null, members: [], ...(proof === null ? {} : { proof }) });
  }

  /**
   * The members a hello lists: voters only. A learner is not a member clients should use
   * until it has caught up and been promoted, and an admin's addMember alone makes a
   * learner of any URL; promotion needs a process that holds the cluster secret and the
   * log (docs/security.md, "What clients trust").
   */
  private advertisedMembers(): HelloResult['members'] {
    return this.core
      .admin()
      .memberList()
      .filter((m) => m.voter)
      .map((m) => ({ id: m.id, clientUrl: m.clientUrl }));
  }

  /** A linearizable read that only the leader can answer (it keeps the lease deadlines): a
   *  follower forwards it. */
  private async leaderRead<R extends Request>(req: R, sink: EventSink | null, owner: string | null, read: () => Answer): Promise<Answer> {
    if (this.core.raft().role !== 'leader') return this.core.forwarder().forward(req, owner, clientGone(sink));
    await this.linearizable();
    return read();
  }

  unavailable(message: string): Answer<never> {
    const hint = this.leaderHint();
    return fail('UNAVAILABLE', message, hint ? { leaderHint: hint } : {});
  }

  private leaderHint(): { id: string; clientUrl: string } | undefined {
    const l = this.core.raft().leader;
    // A leader is a voter; the check keeps a hint from ever naming a learner (as hello).
    const u = l && this.core.raft().confState.voters.includes(l) ? this.core.members().get(l) : undefined;
    return l && u ? { id: l, clientUrl: u.clientUrl } : undefined;
  }

  /** Wait until a read index confirmed after now has been applied here. */
  async linearizable(): Promise<void> {
    const index = await this.core.reads().request();
    await this.core.applied.wait(index, this.core.machine().appliedIndex);
  }

  /**
   * A client's keepAlives: each session is judged by the gate as its own keepAlive would be,
   * and one the client may not use (another token's) is answered as a session that is not
   * open, null, and not renewed; the rest are renewed together. As admit does for a refused
   * session, an answer with a refusal in it comes no sooner than a read.
   */
  private async keepAlivesFrom(gate: ConnectionGate, req: Extract<Request, { op: 'keepAlives' }>, sink: EventSink | null): Promise<Answer<'keepAlives'>> {
    const asOne = req.sessions.map((session) => ({ id: req.id, op: 'keepAlive' as const, session }));
    const judged = asOne.filter((k) => gate.judgesSession(k));
    if (judged.some((k) => gate.needsCurrentState(k))) {
      try {
        await this.linearizable();
      } catch (e) {
        return fail('UNAVAILABLE', `cannot confirm the sessions' owner now (${(e as Error).message}); retry`);
      }
    }
    const refused = new Set(judged.filter((k) => gate.sessionScope(k) !== null).map((k) => k.session));
    if (refused.size > 0) await this.linearizable().catch(() => {});
    const allowed = req.sessions.filter((s) => !refused.has(s));
    const ans = await this.renew(allowed, sink);
    if (!ans.ok) return ans;
    const ttl = new Map(allowed.map((s, i) => [s, ans.result.ttls[i] ?? null]));
    return answer('keepAlives', { ttls: req.sessions.map((s) => ttl.get(s) ?? null) });
  }

  /** Renew `sessions` wherever the leader is: here, in this node's next batch to it with its
   *  other clients' keepalives, or (a leader of a release that serves no batches) one
   *  forwarded keepAlive each. */
  private async renew(sessions: readonly number[], sink: EventSink | null): Promise<LeaseAnswer> {
    const raft = this.core.raft();
    if (sessions.length === 0) return { ok: true, result: { ttls: [] } };
    if (raft.role === 'leader') return this.renewLeases(sessions);
    const forwarder = this.core.forwarder();
    if (forwarder.batchesFor(raft.leader)) return this.core.leaseBatch().renewMany(sessions, clientGone(sink));
    const each = await Promise.all(sessions.map((session) => forwarder.forward({ id: 0, op: 'keepAlive', session }, null, clientGone(sink))));
    const failed = each.find((a) => !a.ok && a.error.code !== 'UNKNOWN_SESSION');
    if (failed && !failed.ok) return failed;
    return { ok: true, result: { ttls: each.map((a) => (a.ok ? a.result.ttlMs : null)) } };
  }

  private async keepAlive(session: number, sink: EventSink | null): Promise<Answer<'keepAlive' | 'attach'>> {
    // A leader of a release that serves no batches answers the keepalive itself, relayed as it is.
    const raft = this.core.raft();
    const forwarder = this.core.forwarder();
    if (raft.role !== 'leader' && !forwarder.batchesFor(raft.leader)) return forwarder.forward({ id: 0, op: 'keepAlive', session }, null, clientGone(sink));
    return keepAliveAnswer(await this.renew([session], sink), session);
  }

  /**
   * Renew the leases of `sessions` on this node, the leader: one client's keepalive, or a
   * follower's batch of them, all stamped with the time they reached this node. A keepalive
   * is acknowledged only once a heartbeat round that started after it arrived confirms we
   * still lead; otherwise a deposed leader could extend a client's belief beyond the
   * deadline the real leader keeps. A session we do not know yet may be one that a new
   * leader has not applied: its state is current only once an entry of its own term has
   * committed and been applied (thesis §6.4), so "no such session" waits for that rather
   * than end a live session on the client.
   */
  async renewLeases(sessions: readonly number[]): Promise<LeaseAnswer> {
    if (this.core.raft().role !== 'leader') return this.unavailable('keepalives reached a node that is not the leader; retry');
    const { leases } = this.core;
    const receivedAt = this.core.now();
    try {
      if (sessions.every((s) => leases.has(s))) await this.core.reads().request('lease');
      else await this.linearizable();
    } catch (e) {
      if (e instanceof ReadUnavailable) return this.unavailable('no leader could confirm the keepalive; retry');
      throw e;
    }
    if (!leases.isActive) return this.unavailable('leadership changed while confirming the keepalive; retry');
    return { ok: true, result: { ttls: sessions.map((s) => leases.keepAlive(s, receivedAt)) } };
  }

  private async write<R extends WriteRequest>(req: R, owner: string | null, sink: EventSink | null): Promise<Answer<R['op']>> {
    if (this.core.raft().role !== 'leader') return this.core.forwarder().forward(req, owner, clientGone(sink));
    // Validate before proposing: a bad request is answered at once and never reaches the log.
    const machine = this.core.machine();
    const { settings } = machine;
    // The file's default TTL, within the cluster's bounds (which the node's file may not know).
    const defaultTtlMs = Math.min(Math.max(this.core.cfg.sessions.defaultTtlMs, settings.minTtlMs), settings.maxTtlMs);
    let proposed;
    try {
      proposed = commandFor(req, defaultTtlMs, () => this.core.stamp(), owner);
    } catch (e) {
      if (e instanceof UnknownSetting) return fail('INVALID_ARGUMENT', e.message);
      throw e;
    }
    const cmd = validateCommand(proposed, settings);
    if (isMachineError(cmd)) return machineFail(cmd);
    // Locks and waits per session, waiters per lock: against the leader's applied state (limits.ts).
    const overLimit = acquireLimitProblem(this.core.cfg.limits, req, machine);
    if (overLimit) return fail(overLimit.code, overLimit.message);
    const r = this.core.proposer().propose(cmd);
    if (!r.ok) {
      if (r.reason === 'notLeader') return this.core.forwarder().forward(req, owner, clientGone(sink));
      return this.unavailable(`leader cannot take proposals now (${r.reason}); retry`);
    }
    try {
      const applied = this.core.proposals.wait(r.index, r.term);
      const result = await (this.core.ops()?.timeProposal(applied) ?? applied);
      return result === null ? fail('INTERNAL', 'no result') : answerFor<R['op']>(req.op, result, r.index);
    } catch (e) {
      if (e instanceof ProposalLost) return this.unavailable(`${e.message}; retry with the same seq`);
      if (e instanceof ProposalTimeout) return fail('TIMEOUT', `${e.message}; the outcome is unknown, retry with the same seq`);
      throw e;
    }
  }
}

/** Whether the client that sent a request has left (its connection closed): a request a
 *  follower holds for a leader is then dropped (forwarding.ts). */
function clientGone(sink: EventSink | null): () => boolean {
  return () => sink?.isOpen?.() === false;
}
