// Read-only views of one node for /metrics, the health checks and the status page API.
// Everything here reads the node's in-memory state as it is on THIS node: on a follower the
// lock table is the state applied here (at most a little behind the leader), not a
// linearizable read; every answer says which node and applied index it is from.
import type { MachineLockInfo, LockMachine, MachineStats, SessionLease } from '../../lockfsm/index.js';
import type { RaftNode } from '../../raft/index.js';
import type { StorageStats } from '../../storage/index.js';
import type { NodeStore } from '../../storage/node-store.js';
import type { ClientListener } from '../../transport/contracts.js';
import type { ClusterConfig } from '../../config/cluster-config.js';
import type { ClientCounts, MetricsSource, NodeRole, PeerProgress, RaftView } from './metrics.js';
import type { PeerRtt } from './peer-rtt.js';
import type { HealthNotes } from './health-notes.js';
import { sessionView, type LeaseClock } from '../api/session-views.js';
import type { SessionView } from '../../protocol/client-protocol.js';

/** What the composition root hands over: the node's parts, read but never changed here. */
export interface NodeInternals {
  readonly id: string;
  readonly config: ClusterConfig;
  readonly raft: RaftNode;
  /** A function: installing a snapshot replaces the machine. */
  machine(): LockMachine;
  readonly clients: ClientListener;
  readonly storage: NodeStore;
  stopping(): boolean;
  /** Members not catching up and other notes for an operator (see health-notes.ts). */
  readonly health: HealthNotes;
  /** Time left on the leader's deadline for a session (ms); null on a follower. */
  leaseLeftMs(session: number): number | null;
  /** The leader's lease clock (session-views.ts), and the monotonic time it counts in. */
  readonly leases: LeaseClock;
  monotonicNow(): number;
  /** Why this node's state cannot be trusted (it differs from a peer's at a checkpoint), or null. */
  diverged(): string | null;
}

/** /readyz fails when applying lags the known commit index by more than this many entries. */
export const READY_MAX_APPLY_LAG = 1_000;

export type Readiness = { readonly ready: true } | { readonly ready: false; readonly reason: string };

export interface PeerStatus extends PeerProgress {
  /** Latest heartbeat round trip in ms (leader only), null before the first. */
  readonly rttMs: number | null;
}

/** GET /api/status: one node's own view, its raft state and lock-table counts included. */
export interface NodeStatusJson extends RaftView, MachineCounts {
  readonly id: string;
  readonly clusterId: string;
  /** commitIndex - appliedIndex. */
  readonly applyLag: number;
  readonly ready: boolean;
  readonly notReadyReason: string | null;
  /** What an operator must act on (health-notes.ts); empty when nothing. */
  readonly warnings: readonly string[];
  readonly clientConnections: number;
  readonly lastFsyncMs: number;
  readonly pid: number;
  readonly uptimeSeconds: number;
  readonly clientUrl: string;
  readonly httpUrl: string | null;
  /** Leader only: each other member's replication progress. */
  readonly peers: readonly PeerStatus[];
  /** This node's wall clock (ms) when the status was taken. */
  readonly at: number;
}

export type MachineCounts = Pick<MachineStats, 'sessions' | 'locks' | 'holders' | 'waiters' | 'locksInDelay' | 'elections'>;

export interface HolderRow {
  readonly session: number;
  readonly token: number;
  readonly mode: 'exclusive' | 'shared';
  /** The session's TTL in ms: a full lease. */
  readonly ttlMs: number | null;
  /** Time left before the leader expires the session unless a keepalive comes (ms); null
   *  when this node does not lead (only the leader keeps deadlines). */
  readonly ttlLeftMs: number | null;
  /** How long this holder has held the lock (ms), as the leader saw the grant; null when
   *  this node does not lead or was not leading at the grant. */
  readonly heldForMs: number | null;
  /** What the client called itself when it opened the session (host:pid by default). */
  readonly label: string | null;
}

export interface LockRow {
  readonly name: string;
  readonly mode: 'exclusive' | 'shared' | null;
  readonly limit: number | null;
  readonly holders: readonly HolderRow[];
  readonly waiters: number;
  /** The first few in line. */
  readonly nextWaiters: readonly { readonly session: number; readonly mode: 'exclusive' | 'shared' }[];
  readonly delayed: boolean;
  readonly lockDelayMs: number | null;
}

export interface Page<T> {
  readonly node: string;
  readonly appliedIndex: number;
  readonly prefix: string;
  readonly offset: number;
  readonly limit: number;
  /** Rows matching the prefix in all. */
  readonly total: number;
  readonly rows: readonly T[];
}

export interface ElectionRow {
  readonly name: string;
  readonly leader: number | null;
  readonly value: string | null;
  readonly token: number | null;
  readonly candidates: number;
}

export const MAX_PAGE = 500;
const WAITERS_SHOWN = 3;

export class NodeView implements MetricsSource {
  private readonly startedAt = Date.now();
  /** The full sorted listing for one prefix at one applied index: paging through 10,000
   *  locks then costs one listing per change, not one per page. */
  private lockCache: { machine: LockMachine; applied: number; prefix: string; locks: MachineLockInfo[] } | null = null;
  /** Session leases at one applied index (machine.session() would list each session's locks). */
  private leaseCache: { machine: LockMachine; applied: number; leases: Map<number, SessionLease> } | null = null;
  /** The election table at one applied index and prefix. */
  private electionCache: { machine: LockMachine; applied: number; prefix: string; elections: ReturnType<LockMachine['elections']> } | null = null;

  constructor(
    private readonly n: NodeInternals,
    private readonly rtt: PeerRtt,
    /** When (Date.now() ms) this node, leading, saw `session` granted `name`. */
    private readonly heldSince: (session: number, name: string) => number | null = () => null,
  ) {}

  get id(): string {
    return this.n.id;
  }

  raft(): RaftView {
    const raft = this.n.raft;
    const lastIndex = raft.log.lastIndex();
    const peers: PeerProgress[] = [];
    const stuck = new Map(this.n.health.behind().map((p) => [p.id, p.stalledMs]));
    for (const p of raft.progress()) {
      if (p.id !== this.n.id) peers.push({ ...p, lag: Math.max(0, lastIndex - p.match), stalledMs: stuck.get(p.id) ?? 0 });
    }
    return {
      role: roleOf(raft.role),
      term: raft.term,
      leader: raft.leader,
      commitIndex: raft.log.committed,
      appliedIndex: this.n.machine().appliedIndex,
      lastIndex,
      snapshotIndex: raft.log.snapshotIndex,
      peers,
    };
  }

  machine(): MachineStats {
    return this.n.machine().stats();
  }

  clients(): ClientCounts {
    return { ...this.n.clients.stats(), connections: this.n.clients.connectionCount() };
  }

  storage(): StorageStats {
    return this.n.storage.stats();
  }

  warnings(): string[] {
    return this.n.health.notes();
  }

  readiness(r: RaftView = this.raft()): Readiness {
    if (this.n.stopping()) return { ready: false, reason: 'node is shutting down' };
    if (r.leader === null) return { ready: false, reason: 'no leader known' };
    const diverged = this.n.diverged();
    if (diverged !== null) return { ready: false, reason: diverged };
    const lag = r.commitIndex - r.appliedIndex;
    if (lag > READY_MAX_APPLY_LAG) return { ready: false, reason: `applied index ${r.appliedIndex} is ${lag} entries behind commit index ${r.commitIndex} (bound ${READY_MAX_APPLY_LAG})` };
    return { ready: true };
  }

  status(): NodeStatusJson {
    const r = this.raft();
    const m = this.machine();
    const ready = this.readiness(r);
    const self = this.n.config.nodes.find((x) => x.id === this.n.id)!;
    return {
      id: this.n.id,
      clusterId: this.n.config.clusterId,
      role: r.role,
      term: r.term,
      leader: r.leader,
      commitIndex: r.commitIndex,
      appliedIndex: r.appliedIndex,
      lastIndex: r.lastIndex,
      snapshotIndex: r.snapshotIndex,
      applyLag: r.commitIndex - r.appliedIndex,
      ready: ready.ready,
      notReadyReason: ready.ready ? null : ready.reason,
      warnings: this.warnings(),
      sessions: m.sessions,
      locks: m.locks,
      holders: m.holders,
      waiters: m.waiters,
      locksInDelay: m.locksInDelay,
      elections: m.elections,
      clientConnections: this.n.clients.connectionCount(),
      lastFsyncMs: this.n.storage.stats().lastFsyncMs,
      pid: process.pid,
      uptimeSeconds: Math.round((Date.now() - this.startedAt) / 1000),
      clientUrl: self.clientUrl,
      httpUrl: self.httpUrl ?? null,
      peers: r.peers.map((p) => ({ ...p, rttMs: this.rtt.lastMs(p.id) })),
      at: Date.now(),
    };
  }

  locks(prefix: string, offset: number, limit: number): Page<LockRow> {
    const machine = this.n.machine();
    const applied = machine.appliedIndex;
    let c = this.lockCache;
    if (!c || c.machine !== machine || c.applied !== applied || c.prefix !== prefix) {
      c = this.lockCache = { machine, applied, prefix, locks: machine.locks(prefix) };
    }
    let t = this.leaseCache;
    if (!t || t.machine !== machine || t.applied !== applied) {
      const leases = new Map<number, SessionLease>();
      for (const l of machine.sessionLeases()) leases.set(l.session, l);
      t = this.leaseCache = { machine, applied, leases };
    }
    const leases = t.leases;
    const now = Date.now();
    const rows = c.locks.slice(offset, offset + limit).map(
      (l): LockRow => ({
        name: l.name,
        mode: l.mode,
        limit: l.limit,
        holders: l.holders.map((h) => {
          const lease = leases.get(h.session);
          const since = this.heldSince(h.session, l.name);
          return {
            session: h.session,
            token: h.token,
            mode: h.mode,
            ttlMs: lease?.ttlMs ?? null,
            ttlLeftMs: this.n.leaseLeftMs(h.session),
            heldForMs: since === null ? null : Math.max(0, now - since),
            label: lease?.label ?? null,
          };
        }),
        waiters: l.waiters.length,
        nextWaiters: l.waiters.slice(0, WAITERS_SHOWN).map((w) => ({ session: w.session, mode: w.mode })),
        delayed: l.delayed,
        lockDelayMs: l.lockDelay?.delayMs ?? null,
      }),
    );
    return { node: this.n.id, appliedIndex: applied, prefix, offset, limit, total: c.locks.length, rows };
  }

  /** A page of the open sessions whose label starts with `prefix`, by id, with the lease
   *  clock when this node leads (the status page's sessions table and its revoke buttons). */
  sessions(prefix: string, offset: number, limit: number): Page<SessionView> {
    const machine = this.n.machine();
    const ids: number[] = [];
    for (const l of machine.sessionLeases()) if (prefix === '' || (l.label ?? '').startsWith(prefix)) ids.push(l.session);
    const now = this.n.monotonicNow();
    const rows = ids.slice(offset, offset + limit).map((id) => sessionView(machine.session(id)!, this.n.leases, now));
    return { node: this.n.id, appliedIndex: machine.appliedIndex, prefix, offset, limit, total: ids.length, rows };
  }

  elections(prefix: string, offset: number, limit: number): Page<ElectionRow> {
    const machine = this.n.machine();
    // Built once per applied index and prefix, as the lock table is: every page of every
    // open status page (and anyone polling) asks again, and nothing changes in between.
    let c = this.electionCache;
    if (!c || c.machine !== machine || c.applied !== machine.appliedIndex || c.prefix !== prefix) {
      c = this.electionCache = { machine, applied: machine.appliedIndex, prefix, elections: machine.elections(prefix) };
    }
    const all = c.elections;
    const rows = all.slice(offset, offset + limit).map(
      (e): ElectionRow => ({ name: e.election, leader: e.leader, value: e.value, token: e.token, candidates: e.candidates.length }),
    );
    return { node: this.n.id, appliedIndex: machine.appliedIndex, prefix, offset, limit, total: all.length, rows };
  }
}

function roleOf(role: RaftNode['role']): NodeRole {
  return role === 'preCandidate' ? 'candidate' : role;
}
