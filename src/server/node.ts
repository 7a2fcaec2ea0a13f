// A Palisade node: the composition root. PalisadeNode.open builds it in one step from its
// config and a NodeDeps (clock, storage, peer network, client port, status page: every I/O
// it does, node-deps.ts), wiring the pure Raft core and lock machine to them through the
// RaftDriver, and applies committed entries. The jobs around it live in modules of their own,
// each behind a narrow interface to the node (docs/internals.md has the map): leases/ (the
// leader's timers), replication/ (driver, forwarding, read barriers, proposals), membership/
// (members, changes, transfer, removal), api/ (serving client requests), snapshots/
// (snapshots, checkpoint digests), ops/ (status page, metrics, health).
import type { Logger } from 'pino';
import { LockMachine } from '../lockfsm/index.js';
import type { MachineConfig, MachineEvent } from '../lockfsm/index.js';
import { RaftNode, decodeConfChange } from '../raft/index.js';
import type { Entry, Message, NodeId, Snapshot, SoftState } from '../raft/index.js';
import type { ClusterConfig } from '../config/cluster-config.js';
import { nodeById } from '../config/cluster-config.js';
import { machineConfigFrom } from '../config/defaults.js';
import { fileDisagreements } from '../config/replicated-settings.js';
import type { NodeStore } from '../storage/node-store.js';
import { MemberDirectory, unwrapSnapshot } from '../storage/members.js';
import type { ClientListener, PeerNetwork } from '../transport/contracts.js';
import type { NodeClock } from './clock.js';
import type { FatalKind, NodeDeps, NodeOptions } from './node-deps.js';
import type { NodeOps } from './ops/index.js';
import { HealthNotes } from './ops/health-notes.js';
import { nodeStatus } from './ops/node-status.js';
import type { NodeStatus } from '../protocol/client-protocol.js';
import { openState, type Opened } from './node-state.js';
import { HttpApi, apiNodeOf } from './api/http/index.js';
import { ClientGate } from './api/client-gate.js';
import { opsRevoke } from './api/ops-revoke.js';
import { serveConnection } from './api/client-connections.js';
import { RequestDispatcher } from './api/request-dispatch.js';
import { Subscriptions } from './api/subscriptions.js';
import { pushedEvent } from './api/wire.js';
import { LeaseKeeper } from './leases/lease-keeper.js';
import { LeaderDuties } from './leases/leader-duties.js';
import { ClusterClock } from './leases/cluster-clock.js';
import { MembershipAdmin } from './membership/membership-admin.js';
import { Removal } from './membership/removal.js';
import { CommandProposer } from './replication/command-proposer.js';
import { Forwarder, type PeerApp } from './replication/forwarding.js';
import { KeepAliveBatcher } from './replication/keepalive-batch.js';
import { PeerIdentityGate, isIdentityApp } from './replication/peer-identity.js';
import { ProposalTracker } from './replication/proposals.js';
import { RaftDriver, byDestination, driverTimers } from './replication/raft-driver.js';
import { AppliedWaiters, ReadIndexBatcher } from './replication/read-barrier.js';
import { BackupFiles } from './snapshots/backup-files.js';
import { Snapshotter } from './snapshots/snapshotter.js';
import { StateDigests, isDigestApp } from './snapshots/state-digests.js';
import { ConfigReloads } from './config-reload.js';

const REQUEST_TIMEOUT_MS = 5_000;
/** How long a stopping node lets in-flight writes finish. */
const STOP_GRACE_MS = 2_000;

export type { FatalKind, NodeOptions } from './node-deps.js';

export class PalisadeNode {
  readonly id: NodeId;
  private readonly log: Logger;
  private readonly clock: NodeClock;
  /** The settings this node's file gives: what it seeds a new cluster with, and what the
   *  machine applies the entries of a log written before settings were replicated with. */
  private readonly fileSettings: MachineConfig;
  private readonly store: NodeStore;
  private readonly raft: RaftNode;
  /** Replaced when a snapshot from the leader is installed. */
  private machine: LockMachine;
  private members: MemberDirectory;
  private readonly driver: RaftDriver;
  private readonly peers: PeerNetwork;
  private readonly clients: ClientListener;
  private readonly ops: NodeOps | null;
  private readonly identities: PeerIdentityGate;
  private readonly health: HealthNotes;
  private readonly reads: ReadIndexBatcher;
  private readonly applied = new AppliedWaiters();
  private readonly proposals: ProposalTracker;
  private readonly leases: LeaseKeeper;
  private readonly proposer: CommandProposer;
  private readonly duties: LeaderDuties;
  private readonly subs = new Subscriptions();
  private readonly forwarder: Forwarder;
  private readonly leaseBatch: KeepAliveBatcher;
  private readonly admin: MembershipAdmin;
  private readonly backups: BackupFiles; // the files `palisade snapshot save` is reading
  private readonly removal: Removal;
  private readonly dispatch: RequestDispatcher;
  private readonly gate: ClientGate;
  private readonly snapshots: Snapshotter;
  private readonly digests: StateDigests;
  private readonly reloads: ConfigReloads;
  /** The config the node runs with: the file's at start, then what reloads changed. */
  private config: ClusterConfig;
  /** The number of entries the founding log starts with (0 for a node that joined). */
  private readonly bootstrapLength: number;
  private readonly onRemoved: (why: string) => void;
  private readonly onFatalHook: (err: Error, kind: FatalKind) => void;
  private stopping = false;
  private fatalSeen = false;

  /** Opens this node's storage (founding the log of a new cluster, or joining a running one)
   *  and builds the node; start() then opens its ports. */
  static async open(opts: NodeOptions, deps: NodeDeps): Promise<PalisadeNode> {
    return new PalisadeNode(opts, deps, await openState(opts, deps));
  }

  private constructor(opts: NodeOptions, deps: NodeDeps, opened: Opened) {
    const cfg = opts.config;
    const { tickMs, heartbeatMs, electionTimeoutMs } = cfg.raft;
    this.id = opts.id;
    this.config = cfg;
    this.log = deps.logger;
    this.clock = deps.clock;
    this.fileSettings = machineConfigFrom(cfg);
    this.store = opened.store;
    this.machine = opened.machine;
    this.members = opened.members;
    this.bootstrapLength = (opts.join?.length ?? 0) > 0 ? 0 : cfg.nodes.length * 2;
    this.onRemoved = opts.onRemoved ?? (() => {});
    this.onFatalHook = opts.onFatal ?? (() => {});
    const { state } = opened;
    this.raft = new RaftNode(
      { id: this.id, heartbeatTicks: Math.max(1, Math.round(heartbeatMs / tickMs)), electionTicks: Math.max(2, Math.round(electionTimeoutMs / tickMs)), random: (n) => deps.random(n) },
      // Membership comes from the log (bootstrap entries, conf changes) or the snapshot.
      { hardState: state.hardState, conf: { voters: [], learners: [] }, entries: state.entries, ...(state.snapshot ? { snapshot: state.snapshot, applied: state.snapshot.meta.index } : {}) },
    );
    this.proposals = new ProposalTracker(REQUEST_TIMEOUT_MS, this.clock);
    this.leases = new LeaseKeeper(electionTimeoutMs * 2);
    this.proposer = new CommandProposer(() => this.raft, () => this.machine, this.fileSettings, () => this.driver.kick());
    this.peers = deps.peerNetwork(opened.peers);
    this.digests = new StateDigests({ send: (to, app) => this.peers.sendApp(to, app), peers: () => [...this.raft.confState.voters, ...this.raft.confState.learners].filter((id) => id !== this.id), logger: this.log, clock: this.clock, propose: () => this.proposer.propose({ type: 'checkpoint' }), everyEntries: cfg.snapshot.entries });
    this.snapshots = new Snapshotter(
      { raft: this.raft, store: this.store, clock: this.clock, log: this.log, machine: () => this.machine, members: () => this.members, stopping: () => this.stopping, fatal: (err) => this.onFatal(err) },
      cfg.snapshot,
      { index: state.snapshot?.meta.index ?? 0, bytes: state.snapshot?.data.length ?? 0 },
    );
    this.driver = new RaftDriver(
      this.raft,
      this.store,
      {
        send: (msgs) => this.sendMessages(msgs), apply: (entries) => this.applyEntries(entries), installSnapshot: (s) => this.installSnapshot(s),
        readStates: (rs, dropped) => this.reads.onReadStates(rs, dropped), softState: (s) => this.onSoftState(s), afterAdvance: () => this.afterAdvance(),
        paused: (gap) => this.duties.paused(gap), fatal: (err) => this.onFatal(err),
      },
      tickMs, electionTimeoutMs, this.log, () => this.clock.now(), driverTimers(this.clock),
    );
    this.reads = new ReadIndexBatcher(this.raft, () => this.driver.kick(), electionTimeoutMs * 2, this.id, this.clock, tickMs);
    this.duties = new LeaderDuties(
      {
        isLeader: () => this.raft.role === 'leader',
        propose: (command) => ((r) => (r.ok ? r.index : null))(this.proposer.propose(command)),
        machine: () => this.machine,
        leaderRound: () => this.admin.promoteCaughtUpLearners(),
      },
      this.leases,
      cfg,
      new ClusterClock(() => this.clock.now(), () => this.clock.wall()),
      this.log,
      this.clock,
    );
    this.gate = new ClientGate(cfg, this.log, () => this.machine, this.clock);
    this.removal = new Removal({ id: this.id, raft: this.raft, clock: this.clock, log: this.log, electionTimeoutMs, appliedIndex: () => this.machine.appliedIndex, stopping: () => this.stopping, removed: (why) => this.onRemoved(why) });
    this.forwarder = new Forwarder(
      {
        id: this.id, leader: () => this.raft.leader, isLeader: () => this.raft.role === 'leader', sendApp: (to, frame) => this.peers.sendApp(to, frame),
        handle: (req, owner) => this.dispatch.handle(req, null, owner), renewLeases: (sessions) => this.dispatch.renewLeases(sessions),
        unavailable: (message) => this.dispatch.unavailable(message), removedBy: (index) => this.removal.removedBy(index),
      },
      REQUEST_TIMEOUT_MS, electionTimeoutMs * 3, undefined, this.clock,
    );
    this.leaseBatch = new KeepAliveBatcher((sessions, gone) => this.forwarder.renewLeases(sessions, gone), tickMs, this.clock);
    this.dispatch = new RequestDispatcher({
      id: this.id, cfg, log: this.log, leases: this.leases, applied: this.applied, proposals: this.proposals, subs: this.subs,
      raft: () => this.raft, machine: () => this.machine, proposer: () => this.proposer, stamp: () => this.duties.stamp(),
      members: () => this.members, reads: () => this.reads, admin: () => this.admin, forwarder: () => this.forwarder,
      leaseBatch: () => this.leaseBatch, ops: () => this.ops, status: () => this.status(), stopping: () => this.stopping,
      kick: () => this.driver.kick(), now: () => this.clock.now(),
    });
    this.backups = new BackupFiles({ node: this.id, clusterId: cfg.clusterId, secret: () => this.config.secrets[0]!, maxBufferedBytes: cfg.limits.maxBufferedBytes, linearizable: () => this.dispatch.linearizable(), machine: () => this.machine, raft: this.raft });
    this.admin = new MembershipAdmin(
      {
        id: this.id, raft: this.raft, proposals: this.proposals, electionTimeoutMs, clock: this.clock,
        members: () => this.members, kick: () => this.driver.kick(), forward: (req) => this.forwarder.forward(req),
        linearizable: () => this.dispatch.linearizable(), snapshotNow: () => this.snapshots.now(), unavailable: (message) => this.dispatch.unavailable(message),
        backup: (req) => this.backups.serve(req),
      },
      this.log,
    );
    this.reloads = new ConfigReloads(
      {
        id: this.id,
        running: () => this.config,
        apply: (next) => {
          const transport = deps.reloadTransport?.(next) ?? (() => []); // throws before anything changes
          const changed = [...transport(), ...this.gate.setTokens(next.auth)];
          this.config = next;
          return changed;
        },
      },
      this.log,
      this.clock,
    );
    this.identities = new PeerIdentityGate({ selfId: this.id, storageId: this.store.storageId, store: this.store, send: (to, p) => this.peers.sendApp(to, p), logger: this.log, refused: (why) => this.onFatal(new Error(why), 'refused'), now: () => this.clock.now() });
    this.health = new HealthNotes({ id: this.id, raft: this.raft, configuredPeerUrl: nodeById(cfg, opts.id).peerUrl, recordedPeerUrl: () => this.members.get(this.id)?.peerUrl, mismatchedPeers: () => this.identities.mismatched, more: () => this.notes(), stallMs: Math.max(5_000, 10 * electionTimeoutMs), logger: this.log, clock: this.clock });
    this.clients = deps.clientPort({
      onConnection: (conn) => serveConnection(conn, this.gate, (g, r, sink) => this.dispatch.serve(g, r, sink), this.subs),
      http: (port) => new HttpApi({ node: apiNodeOf(this.gate, this.subs, (g, r, s) => this.dispatch.serve(g, r, s)), limits: cfg.limits, logger: this.log, holdSlot: (r) => port.holdAddressSlot(r), coolOff: (r, ms) => port.coolOffAddress(r, ms), takeAddressToken: (r) => port.takeAddressToken(r), clusterId: cfg.clusterId }).handle,
    });
    this.ops = deps.opsPort({ id: this.id, config: cfg, raft: this.raft, machine: () => this.machine, clients: this.clients, storage: this.store, stopping: () => this.stopping, health: this.health, leaseLeftMs: (session) => this.leases.remainingMs(session, this.clock.now()), leases: this.leases, monotonicNow: () => this.clock.now(), diverged: () => this.digests.diverged() }, opsRevoke(this.gate, (g, r, s) => this.dispatch.serve(g, r, s)));
    this.listenToPeers();
  }

  // ---- lifecycle ----------------------------------------------------------------------

  async start(): Promise<void> {
    await this.identities.load();
    await this.peers.start();
    await this.clients.start();
    await this.ops?.start();
    this.gate.announce();
    this.health.start();
    this.driver.start();
    this.duties.start();
    this.log.info({ term: this.raft.term, lastIndex: this.raft.log.lastIndex(), snapshot: this.snapshots.lastSnapshotIndex, peerUrl: nodeById(this.config, this.id).peerUrl, clientUrl: nodeById(this.config, this.id).clientUrl }, 'node started');
  }

  /** SIGTERM: stop accepting, let in-flight writes finish (bounded), close the storage. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    await this.ops?.stop();
    await this.clients.stop();
    this.gate.close();
    this.backups.stop();
    const deadline = this.clock.now() + STOP_GRACE_MS;
    while (this.proposals.size > 0 && this.clock.now() < deadline) await new Promise((r) => this.clock.setTimeout(() => r(undefined), 10));
    this.duties.stop();
    this.digests.stop();
    this.reads.stop();
    this.leaseBatch.stop();
    this.health.stop();
    await this.driver.stop();
    this.snapshots.stop();
    await this.peers.stop();
    this.proposals.failAll(new Error('node stopping'));
    await this.store.close();
    this.log.info('node stopped');
  }

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

  private listenToPeers(): void {
    this.peers.on('peerUp', (peer) => (this.identities.onPeerUp(peer), this.forwarder.linkUp(peer)));
    this.peers.on('peerDown', (peer) => (this.identities.onPeerDown(peer), this.forwarder.linkDown(peer)));
    this.peers.on('raft', (from, msgs) => {
      if (!this.identities.admits(from)) return this.identities.dropped(from); // its storage is not (yet) the one we know
      this.ops?.onRaftReceived(from, msgs);
      for (const m of msgs) this.raft.step(m);
      this.driver.kick();
    });
    this.peers.on('app', (from, p) => {
      if (isIdentityApp(p)) this.identities.onApp(from, p);
      else if (isDigestApp(p)) this.digests.onPeerDigest(from, p);
      else this.forwarder.onPeerApp(from, p as PeerApp);
    });
  }

  private sendMessages(msgs: readonly Message[]): void {
    this.peers.sendNow(byDestination(msgs)); // now: an acknowledgement must not wait for this pass's apply
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

  // ---- apply --------------------------------------------------------------------------

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
      if (out.result.type === 'checkpoint') this.digests.checkpoint(e.index, this.machine.snapshotEncoder());
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
    if (cc.type === 'remove') {
      // The removed node may never learn that its removal committed (nobody replicates to
      // it any more), so tell it directly before its link is closed. Any node that applied
      // the entry knows the removal is committed, whoever its leader was.
      if (cc.node !== this.id) this.peers.sendApp(cc.node, { t: 'removed', index: e.index } satisfies PeerApp);
      this.identities.forget(cc.node);
      this.digests.forget(cc.node);
    }
    this.peers.setPeers(this.members.peerMap(this.id, [...conf.voters, ...conf.learners]));
    if (e.index > this.bootstrapLength) this.log.info({ change: cc.type, member: cc.node, index: e.index, voters: conf.voters, learners: conf.learners }, 'membership changed');
    if (cc.type === 'remove' && cc.node === this.id) this.removal.removedBy(e.index, true);
  }

  /** `answered`: the entry's own result is a grant, so its granted event tells the
   *  requester nothing new. */
  private onMachineEvent(ev: MachineEvent, index: number, answered = false): void {
    this.duties.onMachineEvent(ev);
    this.ops?.onMachineEvent(ev, index);
    const w = pushedEvent(ev, index, answered); // not the requester's own news (wire.ts)
    if (w) this.subs.route(w);
    if (ev.type === 'sessionClosed') this.subs.sessions.removeKey(ev.session);
    if (ev.type === 'sessionClosed' || ev.type === 'sessionExpired') this.gate.sessionEnded(ev.session);
  }

  private installSnapshot(s: Snapshot): void {
    const snap = unwrapSnapshot(s.data);
    this.machine = LockMachine.restore(snap.machine, this.fileSettings);
    this.members = new MemberDirectory(snap.members, snap.removed);
    this.peers.setPeers(this.members.peerMap(this.id, [...s.meta.conf.voters, ...s.meta.conf.learners]));
    this.snapshots.installed(s.meta.index, s.data.length);
    this.proposals.failUpTo(s.meta.index);
    this.applied.advance(this.machine.appliedIndex);
    this.log.info({ index: s.meta.index, bytes: s.data.length }, 'installed snapshot from leader');
  }

  /** After each processed Ready: a checkpoint (leader), a snapshot when one is due. */
  private afterAdvance(): void {
    if (this.raft.role === 'leader') this.digests.maybeCheckpoint(this.machine.appliedIndex);
    this.snapshots.afterAdvance();
  }

  /**
   * Reloads the config (SIGHUP): `load` reads the file again (and throws on a bad one). The
   * secrets, tokens and certificates are replaced, all or nothing; what cannot change while
   * the node runs is reported (config-reload.ts). False when the reload was refused.
   */
  reload(load: () => ClusterConfig): boolean {
    if (this.stopping) return false;
    return this.reloads.reload(load);
  }

  /** Notes for status and /readyz beyond the health watch's: settings in this node's file
   *  that the cluster overrides, and diverged state. */
  private notes(): string[] {
    const out = this.machine.configured ? fileDisagreements(this.fileSettings, this.machine.settings) : [];
    const refused = [...(this.peers.refusedLinks?.() ?? [])].map(([peer, why]) => `peer ${peer} refuses the link from this node: ${why}`);
    return [...out, ...this.digests.notes(), ...this.reloads.notes(), ...refused];
  }

  // ---- status -------------------------------------------------------------------------

  status(): NodeStatus {
    return nodeStatus({
      id: this.id, raft: this.raft, appliedIndex: this.machine.appliedIndex, warnings: this.health.notes(), digest: this.digests.view().latest,
      sessions: this.leases.size, driver: { ...this.driver.stats, ...this.store.stats() },
      transport: { ...this.peers.stats(), keepAliveBatches: this.leaseBatch.batches, keepAlivesBatched: this.leaseBatch.batched },
    });
  }
}
