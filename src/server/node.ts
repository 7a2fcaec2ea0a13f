// A Palisade node: the composition root. It wires the pure Raft core and lock machine to
// real time (RaftDriver), LevelDB (RaftStorage), peers (PeerTransport) and clients
// (ClientServer) and applies committed entries. The jobs around
// it live in modules of their own, each behind a narrow interface to the node:
// leader-duties.ts (the leader's timers), forwarding.ts (follower -> leader requests),
// membership-admin.ts (members, changes, transfer), request-dispatch.ts (serving client
// requests), client-gate.ts (auth and limits).
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { LockMachine } from '../lockfsm/index.js';
import type { MachineConfig, MachineEvent } from '../lockfsm/index.js';
import { RaftNode, decodeConfChange } from '../raft/index.js';
import type { Entry, Message, NodeId, ReadState, Snapshot, SoftState } from '../raft/index.js';
import { RaftStorage } from '../storage/index.js';
import { ClientServer, DEFAULT_PRE_AUTH, type ClientConnection } from '../transport/client-server.js';
import { PeerTransport } from '../transport/peer.js';
import { PROTOCOL_VERSION, type NodeStatus, type ServerEvent } from '../protocol/client-protocol.js';
import type { Answer } from '../protocol/ops.js';
import type { RpcCredentials } from '../protocol/rpc.js';
import type { ClusterConfig, NodeConfig } from '../config/cluster-config.js';
import { nodeById, parseWsUrl } from '../config/cluster-config.js';
import { NodeOps } from './ops/index.js';
import { HttpApi, apiNodeOf } from './api/http/index.js';
import { LeaseKeeper } from './leases/lease-keeper.js';
import { LeaderDuties } from './leases/leader-duties.js';
import { ClientGate } from './api/client-gate.js';
import { clientPortLimits } from './api/limits.js';
import { machineConfigFrom } from '../config/defaults.js';
import { clientPortTls, peerPortTls } from './node-tls.js';
import { MemberDirectory, bootstrapEntries, unwrapSnapshot, wrapSnapshot } from '../storage/members.js';
import { joinCluster } from './membership/join.js';
import { backupState } from './snapshots/backup-state.js';
import { Forwarder, type PeerApp } from './replication/forwarding.js';
import { KeepAliveBatcher } from './replication/keepalive-batch.js';
import { SnapshotPolicy } from './snapshots/snapshot-policy.js';
import { MembershipAdmin } from './membership/membership-admin.js';
import { RequestDispatcher } from './api/request-dispatch.js';
import { PeerIdentityGate, isIdentityApp } from './replication/peer-identity.js';
import { HealthNotes } from './ops/health-notes.js';
import { RaftDriver } from './replication/raft-driver.js';
import { ProposalTracker } from './replication/proposals.js';
import { AppliedWaiters, ReadIndexBatcher } from './replication/read-barrier.js';
import { Subscriptions, type EventSink } from './api/subscriptions.js';
import { pushedEvent } from './api/wire.js';
import { CommandProposer } from './replication/command-proposer.js';
import { ClusterClock } from './leases/cluster-clock.js';
import { StateDigests, isDigestApp } from './snapshots/state-digests.js';
import { fileDisagreements } from '../config/replicated-settings.js';

const REQUEST_TIMEOUT_MS = 5_000;
/** Table rows of a snapshot encoded per event-loop turn: a few milliseconds of work on a
 *  loaded node, well under a heartbeat interval. */
const SNAPSHOT_ROWS_PER_TURN = 5_000;


export interface NodeOptions {
  readonly config: ClusterConfig;
  readonly id: NodeId;
  readonly logger: Logger;
  /** Join the cluster at these client URLs instead of founding one from the config. */
  readonly join?: readonly string[];
  /** What the join's requests present (token, CA, certificate) to a cluster with auth or TLS. */
  readonly joinCredentials?: RpcCredentials;
  /** Called when the node stops for good (it was removed from the cluster). */
  readonly onRemoved?: (why: string) => void;
  /** Called once when the node cannot go on: its storage failed ('storage': a write or a
   *  snapshot could not be stored, so it can no longer promise what its disk holds), or the
   *  cluster refused it ('refused': peers hold another storage identity for it). The node
   *  has stopped serving clients by then; the caller ends the process (serve.ts). */
  readonly onFatal?: (err: Error, kind: FatalKind) => void;
}

export type FatalKind = 'storage' | 'refused';

export class PalisadeNode {
  readonly id: NodeId;
  private readonly cfg: ClusterConfig;
  private readonly self: NodeConfig;
  private readonly log: Logger;
  /** The settings this node's file gives: what it seeds a new cluster with, and what the
   *  machine applies the entries of a log written before settings were replicated with. */
  private readonly fileSettings: MachineConfig;
  /** Every lock-machine command this node proposes as leader (settings first). */
  private readonly proposer: CommandProposer;
  /** Checkpoint digests, ours and our peers' (snapshots/state-digests.ts). */
  private readonly digests: StateDigests;
  /** The index of the last checkpoint this node proposed as leader. */
  private checkpointProposedAt = 0;

  private storage!: RaftStorage;
  private raft!: RaftNode;
  private machine!: LockMachine;
  private driver!: RaftDriver;
  private peers!: PeerTransport;
  private identities!: PeerIdentityGate;
  private health!: HealthNotes;
  private clients!: ClientServer;
  private reads!: ReadIndexBatcher;

  private readonly applied = new AppliedWaiters();
  private readonly proposals = new ProposalTracker(REQUEST_TIMEOUT_MS);
  private readonly leases: LeaseKeeper;
  /** Session expiry, lock-delays and ledger pruning, while leader (leader-duties.ts). */
  private readonly duties: LeaderDuties;
  private readonly subs = new Subscriptions();
  private readonly sinks = new Map<ClientConnection, EventSink>();
  /** Requests a follower sends to the leader, and the leader's side of them (forwarding.ts). */
  private readonly forwarder: Forwarder;
  /** A follower's clients' keepalives, sent to the leader in batches (keepalive-batch.ts). */
  private readonly leaseBatch: KeepAliveBatcher;
  /** Members, membership changes, leadership transfer (membership-admin.ts). */
  private readonly admin: MembershipAdmin;
  /** Admission and serving of every client request (request-dispatch.ts). */
  private readonly dispatch: RequestDispatcher;
  private members!: MemberDirectory;
  /** Client URLs of an existing cluster this node joins (`--join`); empty for a founding node. */
  private readonly join: readonly string[];
  private readonly joinCredentials: RpcCredentials;
  private lastSnapshotIndex = 0;
  private snapshots!: SnapshotPolicy;
  private removedAt: number | null = null;
  private snapshotting = false;
  /** snapshotNow() calls made while a Ready was being applied: served at its advance. */
  private readonly snapshotWanted: { resolve: (index: number) => void; reject: (e: unknown) => void }[] = [];
  private stopping = false;
  /** Metrics, health checks and the status page; null when the node has no httpUrl. */
  private ops: NodeOps | null = null;
  /** Authentication, permissions and per-request limits of client requests (client-gate.ts). */
  private readonly gate: ClientGate;
  private readonly now = () => performance.now();

  constructor(opts: NodeOptions) {
    this.cfg = opts.config;
    this.id = opts.id;
    this.self = nodeById(opts.config, opts.id);
    this.log = opts.logger;
    this.leases = new LeaseKeeper(opts.config.raft.electionTimeoutMs * 2);
    this.fileSettings = machineConfigFrom(opts.config);
    this.proposer = new CommandProposer(() => this.raft, () => this.machine, this.fileSettings, () => this.driver.kick());
    this.digests = new StateDigests({
      send: (to, app) => this.peers.sendApp(to, app),
      peers: () => [...this.raft.confState.voters, ...this.raft.confState.learners].filter((id) => id !== this.id),
      logger: opts.logger,
    });
    this.duties = new LeaderDuties(
      {
        isLeader: () => this.raft.role === 'leader',
        propose: (command) => {
          const r = this.proposer.propose(command);
          return r.ok ? r.index : null;
        },
        machine: () => this.machine,
        leaderRound: () => this.admin.promoteCaughtUpLearners(),
      },
      this.leases,
      opts.config,
      new ClusterClock(this.now, Date.now),
      opts.logger,
      this.now,
    );
    this.gate = new ClientGate(opts.config, opts.logger, () => this.machine);
    this.join = opts.join ?? [];
    this.joinCredentials = opts.joinCredentials ?? {};
    this.forwarder = new Forwarder(
      {
        id: this.id,
        leader: () => this.raft.leader,
        isLeader: () => this.raft.role === 'leader',
        sendApp: (to, frame) => this.peers.sendApp(to, frame),
        handle: (req, owner) => this.dispatch.handle(req, null, owner),
        renewLeases: (sessions) => this.dispatch.renewLeases(sessions),
        unavailable: (message) => this.dispatch.unavailable(message),
        removedBy: (index) => this.removedBy(index),
      },
      REQUEST_TIMEOUT_MS,
      opts.config.raft.electionTimeoutMs * 3,
    );
    this.leaseBatch = new KeepAliveBatcher((sessions, gone) => this.forwarder.renewLeases(sessions, gone), opts.config.raft.tickMs);
    const node = this;
    this.dispatch = new RequestDispatcher({
      id: this.id,
      cfg: opts.config,
      log: opts.logger,
      leases: this.leases,
      applied: this.applied,
      proposals: this.proposals,
      subs: this.subs,
      raft: () => this.raft,
      machine: () => this.machine,
      proposer: () => this.proposer,
      stamp: () => this.duties.stamp(),
      members: () => this.members,
      reads: () => this.reads,
      admin: () => this.admin,
      forwarder: () => this.forwarder,
      leaseBatch: () => this.leaseBatch,
      ops: () => this.ops,
      status: () => this.status(),
      stopping: () => this.stopping,
      kick: () => this.driver.kick(),
      now: this.now,
    });
    this.admin = new MembershipAdmin(
      {
        id: this.id,
        get raft() {
          return node.raft;
        },
        proposals: this.proposals,
        electionTimeoutMs: opts.config.raft.electionTimeoutMs,
        members: () => this.members,
        kick: () => this.driver.kick(),
        forward: (req) => this.forwarder.forward(req),
        linearizable: () => this.dispatch.linearizable(),
        snapshotNow: () => this.snapshotNow(),
        backup: () => backupState(this.id, this.cfg.clusterId, () => this.dispatch.linearizable(), () => this.machine, this.raft),
        unavailable: (message) => this.dispatch.unavailable(message),
        now: this.now,
      },
      opts.logger,
    );
    this.onRemoved = opts.onRemoved ?? (() => {});
    this.onFatalHook = opts.onFatal ?? (() => {});
  }

  private readonly onRemoved: (why: string) => void;
  private readonly onFatalHook: (err: Error, kind: FatalKind) => void;

  /** Peers to dial at start: the members we know; a joining node asks the cluster. */
  private async initialPeers(): Promise<Map<NodeId, string>> {
    if (this.join.length > 0 && this.raft.log.lastIndex() === 0) {
      const list = await joinCluster(this.join, { id: this.id, peerUrl: this.self.peerUrl, clientUrl: this.self.clientUrl }, this.log, this.joinCredentials);
      for (const m of list) this.members.set(m.id, { peerUrl: m.peerUrl, clientUrl: m.clientUrl });
      return new Map(list.filter((m) => m.id !== this.id).map((m) => [m.id, m.peerUrl]));
    }
    const known = new Map<NodeId, string>();
    for (const [id, u] of this.members.entries()) if (id !== this.id) known.set(id, u.peerUrl);
    return known;
  }

  // ---- lifecycle ----------------------------------------------------------------------

  async start(): Promise<void> {
    this.storage = await RaftStorage.open(this.self.dataDir, { clusterId: this.cfg.clusterId, nodeId: this.id });
    const stored = await this.storage.load();
    let { hardState, entries } = stored;
    const emptyLog = !stored.snapshot && stored.entries.length === 0 && stored.hardState.term === 0;
    if (emptyLog && this.join.length > 0) {
      await this.storage.markJoining();
      this.log.info({ join: this.join }, 'joining a running cluster');
    }
    if (emptyLog && this.join.length === 0) {
      if (await this.storage.isJoining()) {
        await this.storage.close();
        throw new Error(
          `${this.self.dataDir} belongs to a node that was started to join a running cluster and has received no data yet: ` +
            'start it with --join again (without it, it would found a second cluster of its own)',
        );
      }
      // A founding member of a new cluster: the log starts with the founding membership.
      entries = bootstrapEntries(this.cfg.nodes);
      hardState = { term: 1, vote: null, commit: entries.length };
      await this.storage.save({ hardState, entries });
    }
    const snap = stored.snapshot ? unwrapSnapshot(stored.snapshot.data) : null;
    this.machine = snap ? LockMachine.restore(snap.machine, this.fileSettings) : new LockMachine(this.fileSettings);
    this.members = new MemberDirectory(snap?.members ?? this.cfg.nodes.map((n) => [n.id, { peerUrl: n.peerUrl, clientUrl: n.clientUrl }] as const), snap?.removed);
    this.lastSnapshotIndex = stored.snapshot?.meta.index ?? 0;
    this.snapshots = new SnapshotPolicy(this.cfg.snapshot.entries, { index: this.lastSnapshotIndex, bytes: stored.snapshot?.data.length ?? 0 });
    const { tickMs, heartbeatMs, electionTimeoutMs } = this.cfg.raft;
    this.raft = new RaftNode(
      {
        id: this.id,
        heartbeatTicks: Math.max(1, Math.round(heartbeatMs / tickMs)),
        electionTicks: Math.max(2, Math.round(electionTimeoutMs / tickMs)),
        random: (n) => Math.floor(Math.random() * n),
      },
      {
        hardState,
        // Membership comes from the log (bootstrap entries, conf changes) or the snapshot.
        conf: { voters: [], learners: [] },
        entries,
        ...(stored.snapshot ? { snapshot: stored.snapshot, applied: stored.snapshot.meta.index } : {}),
      },
    );
    this.driver = new RaftDriver(
      this.raft,
      this.storage,
      {
        send: (msgs) => this.sendMessages(msgs),
        apply: (entries) => this.applyEntries(entries),
        installSnapshot: (s) => this.installSnapshot(s),
        readStates: (rs, dropped) => this.onReadStates(rs, dropped),
        softState: (s) => this.onSoftState(s),
        afterAdvance: () => this.afterAdvance(),
        paused: (gap) => this.duties.paused(gap),
        fatal: (err) => this.onFatal(err),
      },
      tickMs,
      electionTimeoutMs,
      this.log,
      this.now,
    );
    this.reads = new ReadIndexBatcher(this.raft, () => this.driver.kick(), electionTimeoutMs * 2, this.id, undefined, tickMs);

    const peerAddr = parseWsUrl(this.self.peerUrl, 'peerUrl');
    this.peers = new PeerTransport({
      clusterId: this.cfg.clusterId,
      selfId: this.id,
      secret: this.cfg.secret,
      listenHost: peerAddr.host,
      listenPort: peerAddr.port,
      peers: await this.initialPeers(),
      logger: this.log,
      maxFrameBytes: 64 << 20,
      ...peerPortTls(this.cfg, this.id),
    });
    this.identities = new PeerIdentityGate({ selfId: this.id, storageId: this.storage.storageId, store: this.storage, send: (to, p) => this.peers.sendApp(to, p), logger: this.log, refused: (why) => this.onFatal(new Error(why), 'refused') });
    await this.identities.load();
    this.health = new HealthNotes({ id: this.id, raft: this.raft, configuredPeerUrl: this.self.peerUrl, recordedPeerUrl: () => this.members.get(this.id)?.peerUrl, mismatchedPeers: () => this.identities.mismatched, more: () => this.notes(), stallMs: Math.max(5_000, 10 * electionTimeoutMs), logger: this.log, now: this.now });
    this.peers.on('peerUp', (peer: NodeId) => {
      this.identities.onPeerUp(peer);
      this.forwarder.linkUp(peer);
    });
    this.peers.on('peerDown', (peer: NodeId) => {
      this.identities.onPeerDown(peer);
      this.forwarder.linkDown(peer);
    });
    this.peers.on('raft', (from: NodeId, msgs: readonly Message[]) => {
      if (!this.identities.admits(from)) return; // its storage is not (yet) the one we know
      this.ops?.onRaftReceived(from, msgs);
      for (const m of msgs) this.raft.step(m);
      this.driver.kick();
    });
    this.peers.on('app', (from: NodeId, p: unknown) => {
      if (isIdentityApp(p)) this.identities.onApp(from, p);
      else if (isDigestApp(p)) this.digests.onPeerDigest(from, p);
      else this.forwarder.onPeerApp(from, p as PeerApp);
    });
    await this.peers.start();

    const clientAddr = parseWsUrl(this.self.clientUrl, 'clientUrl');
    this.clients = new ClientServer({
      host: clientAddr.host,
      port: clientAddr.port,
      ...clientPortLimits(this.cfg.limits),
      preAuth: DEFAULT_PRE_AUTH,
      ...clientPortTls(this.cfg, this.id),
      logger: this.log,
      onConnection: (conn) => this.onClientConnection(conn),
      onHttpRequest: new HttpApi({ node: apiNodeOf(this.gate, this.subs, (g, r, s) => this.dispatch.serve(g, r, s)), limits: this.cfg.limits, logger: this.log, holdSlot: (r) => this.clients.holdAddressSlot(r), coolOff: (r, ms) => this.clients.coolOffAddress(r, ms) }).handle,
    });
    await this.clients.start();

    if (this.self.httpUrl) {
      this.ops = new NodeOps({
        httpUrl: this.self.httpUrl,
        logger: this.log,
        node: { id: this.id, config: this.cfg, raft: this.raft, machine: () => this.machine, clients: this.clients, storage: this.storage, stopping: () => this.stopping, health: this.health, leaseLeftMs: (session) => this.leases.remainingMs(session, this.now()), leases: this.leases, monotonicNow: this.now, diverged: () => this.diverged() },
        revoke: (token, session, reason, remote) => this.revokeForOps(token, session, reason, remote),
      });
      await this.ops.start();
    }

    this.gate.announce();
    this.health.start();
    this.driver.start();
    this.duties.start();
    this.log.info(
      { term: stored.hardState.term, lastIndex: this.raft.log.lastIndex(), snapshot: this.lastSnapshotIndex, peerUrl: this.self.peerUrl, clientUrl: this.self.clientUrl },
      'node started',
    );
  }

  /** SIGTERM: stop accepting, let in-flight writes finish (bounded), close LevelDB. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    await this.ops?.stop();
    await this.clients?.stop();
    const deadline = Date.now() + 2_000;
    while (this.proposals.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    this.duties.stop();
    this.digests.stop();
    this.reads?.stop();
    this.leaseBatch.stop();
    this.health?.stop();
    await this.driver?.stop();
    // A snapshot asked for mid-Ready waits for an advance that will not come now.
    for (const w of this.snapshotWanted.splice(0)) w.reject(new Error('node stopping'));
    await this.peers?.stop();
    this.proposals.failAll(new Error('node stopping'));
    await this.storage?.close();
    this.log.info('node stopped');
  }

  private fatalSeen = false;

  private onFatal(err: Error, kind: FatalKind = 'storage'): void {
    if (this.fatalSeen) return;
    this.fatalSeen = true;
    this.log.fatal({ err, kind }, `stopping: ${err.message}`);
    // The caller ends the process at once (a leader that lingers keeps its peer port open and
    // holds the cluster at n-1 without a supervisor noticing); stop() only starts the
    // goodbyes it has time for.
    void this.stop().catch(() => {});
    this.onFatalHook(err, kind);
  }

  // ---- raft plumbing ------------------------------------------------------------------

  private sendMessages(msgs: readonly Message[]): void {
    const byPeer = new Map<NodeId, Message[]>();
    for (const m of msgs) {
      let l = byPeer.get(m.to);
      if (!l) byPeer.set(m.to, (l = []));
      l.push(m);
    }
    this.peers.sendNow(byPeer); // now: an acknowledgement must not wait for this pass's apply
    this.ops?.onRaftSent(msgs);
  }

  private onSoftState(s: SoftState): void {
    const wasLeader = this.leases.isActive;
    if (s.role === 'leader' && !wasLeader) {
      this.proposer.seedIfNeeded(); // before anything else this term proposes
      this.duties.becameLeader();
      this.log.info({ term: this.raft.term }, 'became leader');
    } else if (s.role !== 'leader' && wasLeader) {
      this.duties.lostLeadership();
      this.log.info({ term: this.raft.term, leader: s.leader }, 'lost leadership');
    }
    this.ops?.onSoftState(s.role, s.leader, this.raft.term);
    if (s.leader === null) this.reads.abort();
    else this.forwarder.leaderKnown();
    this.log.info({ role: s.role, leader: s.leader, term: this.raft.term }, 'role changed');
  }

  private applyEntries(entries: readonly Entry[]): void {
    for (const e of entries) {
      if (e.type === 'conf') {
        this.applyMembershipChange(e);
        continue;
      }
      if (e.data.length === 0) {
        this.machine.skip(e.index); // the leader's no-op
        this.proposals.settle(e.index, e.term, null);
        continue;
      }
      const out = this.machine.applyRaw(e.index, e.data);
      // The state as of this very entry: the next entry of the batch may change it.
      if (out.result.type === 'checkpoint') void this.digests.checkpoint(e.index, this.machine.snapshotEncoder());
      this.snapshots.applied(e.data.length);
      this.proposals.settle(e.index, e.term, out.result);
      const answered = out.result.type === 'granted';
      for (const ev of out.events) this.onMachineEvent(ev, e.index, answered);
    }
    this.applied.advance(this.machine.appliedIndex);
  }

  private applyMembershipChange(e: Entry): void {
    const cc = decodeConfChange(e.data);
    this.members.apply(cc);
    const conf = this.raft.applyConfChange(e.data);
    this.machine.skip(e.index);
    this.proposals.settle(e.index, e.term, null);
    // The removed node may never learn that its removal committed (nobody replicates to it
    // any more), so tell it directly before its link is closed. Any node that applied the
    // entry knows the removal is committed, whoever its leader was.
    if (cc.type === 'remove' && cc.node !== this.id) this.peers?.sendApp(cc.node, { t: 'removed', index: e.index } satisfies PeerApp);
    if (cc.type === 'remove') {
      this.identities?.forget(cc.node);
      this.digests.forget(cc.node);
    }
    this.peers?.setPeers(this.members.peerMap(this.id, [...conf.voters, ...conf.learners]));
    if (e.index > this.bootstrapLength()) this.log.info({ change: cc.type, member: cc.node, index: e.index, voters: conf.voters, learners: conf.learners }, 'membership changed');
    if (cc.type === 'remove' && cc.node === this.id) this.removedBy(e.index, true);
  }

  private removedBy(index: number, fromLog = false): void {
    if (this.stopping || this.removedAt !== null) return;
    // A node that joined again under its old id replays its old removal before its new
    // addition (or hears of it from a lagging peer): the removal counts only if, once the
    // entries after it had a moment to arrive, it is still not a member.
    if (!fromLog && index <= this.machine.appliedIndex) return; // the log path decides
    this.removedAt = index;
    const why = `removed from the cluster by entry ${index}`;
    const stopIfOut = (): void => {
      const conf = this.raft.confState;
      if (fromLog && (conf.voters.includes(this.id) || conf.learners.includes(this.id))) return void (this.removedAt = null);
      this.log.warn(why + '; stopping');
      this.onRemoved(why);
    };
    // Let the driver finish this Ready (a removed leader steps down first), then stop.
    if (fromLog) setTimeout(stopIfOut, 2 * this.cfg.raft.electionTimeoutMs).unref();
    else setImmediate(stopIfOut);
  }

  private bootstrapLength(): number {
    return this.join.length > 0 ? 0 : this.cfg.nodes.length * 2;
  }

  /** `answered`: the entry's own result is a grant, so its granted event tells the
   *  requester nothing new. */
  private onMachineEvent(ev: MachineEvent, index: number, answered = false): void {
    this.duties.onMachineEvent(ev);
    this.ops?.onMachineEvent(ev, index);
    const w = pushedEvent(ev, index, answered); // not the requester's own news (wire.ts)
    if (w) this.subs.route(w);
    if (ev.type === 'sessionClosed') this.subs.sessions.removeKey(ev.session);
  }

  private installSnapshot(s: Snapshot): void {
    const snap = unwrapSnapshot(s.data);
    this.machine = LockMachine.restore(snap.machine, this.fileSettings);
    this.members = new MemberDirectory(snap.members, snap.removed);
    this.peers.setPeers(this.members.peerMap(this.id, [...s.meta.conf.voters, ...s.meta.conf.learners]));
    this.lastSnapshotIndex = s.meta.index;
    this.snapshots.taken(s.meta.index, s.data.length);
    this.proposals.failUpTo(s.meta.index);
    this.applied.advance(this.machine.appliedIndex);
    this.log.info({ index: s.meta.index, bytes: s.data.length }, 'installed snapshot from leader');
  }

  /** The core has recorded as applied all that the machine applied: the one point where a
   *  snapshot may be cut (the driver applies a Ready's entries while its write is in flight,
   *  and advances the core only after it). */
  private afterAdvance(): void {
    this.maybeCheckpoint();
    const wanted = this.snapshotWanted.splice(0);
    if (wanted.length > 0) {
      const taken = this.takeSnapshot();
      for (const w of wanted) taken.then(w.resolve, w.reject);
      return;
    }
    if (this.snapshotting || !this.snapshots.due(this.machine.appliedIndex)) return;
    // A snapshot that cannot be stored leaves this node unable to promise what its disk
    // holds, like any failed write; one cut short by a stop (the storage closes between the
    // compaction's chunks) is not a failure.
    this.takeSnapshot().catch((err: unknown) => {
      if (!this.stopping) this.onFatal(err instanceof Error ? err : new Error(String(err)));
    });
  }

  /** Snapshot the machine at its applied index, store it and compact the log: now, or once
   *  the Ready being applied has been advanced. */
  snapshotNow(): Promise<number> {
    if (this.stopping) return Promise.reject(new Error('node stopping'));
    if (this.machine.appliedIndex <= this.raft.log.applied) return this.takeSnapshot();
    return new Promise((resolve, reject) => this.snapshotWanted.push({ resolve, reject }));
  }

  private async takeSnapshot(): Promise<number> {
    if (this.snapshotting) return this.lastSnapshotIndex;
    this.snapshotting = true;
    try {
      const index = this.machine.appliedIndex;
      if (index <= this.lastSnapshotIndex || index > this.raft.log.applied) return this.lastSnapshotIndex;
      // The state at `index` is copied in this turn and encoded over the next ones: in one
      // go, at 300,000 sessions, it held the loop (and so the heartbeats) past an election
      // timeout on every node at once (docs/benchmarks.md, "The snapshot stall").
      const encoder = this.machine.snapshotEncoder();
      const appliedBefore = this.snapshots.pending;
      const conf = this.raft.confState;
      const members = new MemberDirectory(this.members.entries(), this.members.removedIds());
      while (!encoder.step(SNAPSHOT_ROWS_PER_TURN)) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (this.stopping) return this.lastSnapshotIndex;
      }
      // The snapshot's membership is the core's at compaction time, so a conf entry applied
      // meanwhile makes it wrong for `index`; a snapshot installed from the leader meanwhile
      // makes it stale. Either way the next due check takes a new one.
      if (this.raft.confState !== conf || index <= this.lastSnapshotIndex || index > this.raft.log.applied || this.raft.log.term(index) === undefined) {
        return this.lastSnapshotIndex;
      }
      const data = wrapSnapshot(encoder.bytes(), members);
      const snap = this.raft.compact(index, data, this.cfg.snapshot.keepTail);
      await this.storage.saveSnapshot(snap);
      await this.storage.compact(this.raft.log.snapshotIndex);
      this.lastSnapshotIndex = index;
      this.snapshots.taken(index, data.length, this.snapshots.pending - appliedBefore);
      this.log.info({ index, bytes: data.length }, 'snapshot taken');
      return index;
    } finally {
      this.snapshotting = false;
    }
  }

  /** As leader: a checkpoint entry every `snapshot.entries` entries, so that the members
   *  compare their state's digests (snapshots/state-digests.ts). */
  private maybeCheckpoint(): void {
    if (this.raft.role !== 'leader') return;
    const applied = this.machine.appliedIndex;
    const since = Math.max(this.digests.latestIndex, this.checkpointProposedAt);
    if (applied - since < this.cfg.snapshot.entries) return;
    const r = this.proposer.propose({ type: 'checkpoint' });
    if (r.ok) this.checkpointProposedAt = r.index;
  }

  /** Why this node's state cannot be trusted, or null (readiness). */
  private diverged(): string | null {
    const m = this.digests.mismatches[0];
    return m === undefined ? null : `state differs from ${m.peer}'s at checkpoint ${m.index}: the replicas diverged`;
  }

  /** Notes for status and /readyz beyond the health watch's: settings in this node's file
   *  that the cluster overrides, and diverged state. */
  private notes(): string[] {
    const out = this.machine.configured ? fileDisagreements(this.fileSettings, this.machine.settings) : [];
    for (const m of this.digests.mismatches) out.push(`state differs from ${m.peer}'s at checkpoint ${m.index} (ours ${m.ours.slice(0, 12)}, theirs ${m.theirs.slice(0, 12)})`);
    return out;
  }

  private onReadStates(states: readonly ReadState[], dropped: readonly Uint8Array[]): void {
    this.reads.onReadStates(states, dropped);
  }

  // ---- requests -----------------------------------------------------------------------

  private onClientConnection(conn: ClientConnection): void {
    const gate = this.gate.open(conn);
    const sink: EventSink = { id: conn.id, pushEvent: (e: ServerEvent) => gate.showsEvent(e) && conn.send(e), isOpen: () => conn.isOpen };
    this.sinks.set(conn, sink);
    // The port's pre-authentication limits end once the gate knows who this is (at once
    // when auth is off; after a hello with a valid token when it is on).
    if (gate.who) conn.authenticated();
    conn.on('request', (req) => {
      void this.dispatch.serve(gate, req, sink).then((ans) => conn.send(ans.ok ? { id: req.id, ok: true, result: ans.result } : { id: req.id, ok: false, error: ans.error }));
      if (gate.who) conn.authenticated(); // admit() has judged a hello synchronously
    });
    conn.on('close', () => {
      this.subs.dropConn(sink);
      this.sinks.delete(conn);
    });
  }

  /** The status page's revoke (ops/revoke.ts): the admin token authenticated by the client
   *  port's own gate, and the request served (and audit-logged) as a client's would be. */
  private async revokeForOps(token: string, session: number, reason: string, remote: string): Promise<Answer<'revokeSession'>> {
    const gate = this.gate.open({ id: 0, remoteAddress: `${remote} (status page)` });
    const hello = await this.dispatch.serve(gate, { id: 0, op: 'hello', version: PROTOCOL_VERSION, token }, null);
    if (!hello.ok) return hello;
    return this.dispatch.serve(gate, { id: 0, op: 'revokeSession', session, reason }, null);
  }

  // ---- status -------------------------------------------------------------------------

  status(): NodeStatus & { lastIndex: number; snapshotIndex: number; sessions: number; driver: Record<string, number>; transport: Record<string, number> } {
    const role = this.raft.role;
    return {
      id: this.id,
      role: role === 'preCandidate' ? 'candidate' : role,
      term: this.raft.term,
      leader: this.raft.leader,
      commitIndex: this.raft.log.committed,
      appliedIndex: this.machine.appliedIndex,
      members: [...this.raft.confState.voters, ...this.raft.confState.learners],
      pid: process.pid,
      warnings: this.health.notes(),
      ...(this.digests.view().latest ? { stateDigest: this.digests.view().latest! } : {}),
      lastIndex: this.raft.log.lastIndex(),
      snapshotIndex: this.raft.log.snapshotIndex,
      sessions: this.leases.size,
      driver: { ...this.driver.stats, ...this.storage.stats() },
      transport: { ...this.peers.stats(), keepAliveBatches: this.leaseBatch.batches, keepAlivesBatched: this.leaseBatch.batched },
    };
  }
}
