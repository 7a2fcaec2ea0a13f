// Prometheus metrics of one node, on a Registry of its own (never prom-client's global one:
// tests run several nodes in one process, and a library must not write into its host's
// registry). Gauges that mirror state are read when scraped (collect), so a scrape always
// sees the state of that moment and the hot paths pay nothing for them; counters and
// histograms of things that happen are fed by the node's hooks.
import { readFileSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MachineEvent, MachineStats } from '../../lockfsm/index.js';
import type { StorageStats } from '../../storage/index.js';

export type NodeRole = 'leader' | 'follower' | 'candidate' | 'learner';
export const ROLES: readonly NodeRole[] = ['leader', 'follower', 'candidate', 'learner'];

/** What the leader knows of one member's log (raft.progress()), with the lag worked out. */
export interface PeerProgress {
  readonly id: string;
  readonly match: number;
  readonly next: number;
  readonly state: string;
  readonly learner: boolean;
  readonly active: boolean;
  /** The leader's last index minus this member's match index. */
  readonly lag: number;
  /** How long its match has not moved while it was behind (0 when up to date). */
  readonly stalledMs: number;
}

export interface RaftView {
  readonly role: NodeRole;
  readonly term: number;
  readonly leader: string | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly lastIndex: number;
  readonly snapshotIndex: number;
  /** Other members' progress; empty unless this node leads. */
  readonly peers: readonly PeerProgress[];
}

export interface ClientCounts {
  readonly connections: number;
  readonly requests: number;
  readonly invalidRequests: number;
  readonly badFrameCloses: number;
  readonly oversizeFrames: number;
  readonly slowConsumerDisconnects: number;
}

/** Read-only state the metrics sample when scraped. */
export interface MetricsSource {
  raft(): RaftView;
  machine(): MachineStats;
  clients(): ClientCounts;
  storage(): StorageStats;
}

export type ProposalOutcome = 'committed' | 'lost' | 'timeout' | 'failed';

/** Latencies from well under a millisecond (fsync on tmpfs) to seconds (a sick disk). */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Waits and holds: from an immediate grant to locks held for days. */
const HOLD_BUCKETS = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400];

/** The package's version (package.json is three levels up from src/server/ops and dist/server/ops). */
const PACKAGE_VERSION: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
})();

export class NodeMetrics {
  readonly registry = new Registry();
  private readonly leaderChanges: Counter;
  private readonly proposals: Counter<'outcome'>;
  private readonly proposalSeconds: Histogram;
  private readonly fsyncSeconds: Histogram;
  private readonly peerRtt: Histogram<'peer'>;
  private readonly expirations: Counter;
  private readonly revocations: Counter;
  private readonly lockDelays: Counter;
  private readonly grants: Counter<'mode'>;
  private readonly releases: Counter<'reason'>;
  private readonly rejected: Counter<'code' | 'op'>;
  private readonly requests: Counter<'op'>;
  private readonly lockWait: Histogram;
  private readonly lockHold: Histogram;

  constructor(nodeId: string, source: MetricsSource) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ node: nodeId });
    collectDefaultMetrics({ register: this.registry });

    new Gauge({
      name: 'palisade_raft_role',
      help: 'Raft role of this node: 1 for the current role, 0 for the others.',
      labelNames: ['role'],
      registers,
      collect() {
        const role = source.raft().role;
        for (const r of ROLES) this.set({ role: r }, r === role ? 1 : 0);
      },
    });
    gauge('palisade_raft_term', 'Current Raft term.', () => source.raft().term);
    gauge('palisade_raft_has_leader', '1 when this node knows a leader, else 0.', () => (source.raft().leader === null ? 0 : 1));
    gauge('palisade_raft_commit_index', 'Highest log index known committed.', () => source.raft().commitIndex);
    gauge('palisade_raft_applied_index', 'Highest log index applied to the lock machine.', () => source.raft().appliedIndex);
    gauge('palisade_raft_last_index', 'Last index of the local log.', () => source.raft().lastIndex);
    gauge('palisade_raft_snapshot_index', 'Index of the latest snapshot.', () => source.raft().snapshotIndex);
    this.leaderChanges = new Counter({ name: 'palisade_raft_leader_changes_total', help: 'Leader changes this node has seen (a new non-null leader).', registers });
    this.proposals = new Counter({
      name: 'palisade_raft_proposals_total',
      help: 'Client writes proposed by this node as leader, by outcome (committed, lost to a leader change, timeout, failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.proposalSeconds = new Histogram({
      name: 'palisade_raft_proposal_commit_seconds',
      help: 'Time from proposing a client write to applying its committed entry, on the leader.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.fsyncSeconds = new Histogram({
      name: 'palisade_storage_fsync_seconds',
      help: 'Duration of each synchronous (fsync) LevelDB write batch.',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    mirrorCounter('palisade_storage_bytes_written_total', 'Bytes of keys and values written to LevelDB.', () => source.storage().bytesWritten);
    new Gauge({
      name: 'palisade_raft_peer_replication_lag_entries',
      help: "Leader only: the leader's last index minus the peer's match index.",
      labelNames: ['peer'],
      registers,
      collect() {
        this.reset(); // a follower has no peers to report, and a removed peer must disappear
        for (const p of source.raft().peers) this.set({ peer: p.id }, p.lag);
      },
    });
    new Gauge({
      name: 'palisade_raft_peer_stalled_seconds',
      help: "Leader only: how long the peer's match index has not moved while the peer was behind (a follower that is not catching up).",
      labelNames: ['peer'],
      registers,
      collect() {
        this.reset();
        for (const p of source.raft().peers) this.set({ peer: p.id }, p.stalledMs / 1000);
      },
    });
    new Gauge({
      name: 'palisade_raft_peer_match_index',
      help: 'Leader only: highest index known replicated on the peer.',
      labelNames: ['peer'],
      registers,
      collect() {
        this.reset();
        for (const p of source.raft().peers) this.set({ peer: p.id }, p.match);
      },
    });
    this.peerRtt = new Histogram({
      name: 'palisade_raft_peer_rtt_seconds',
      help: 'Leader only: time from sending a heartbeat to a peer to reading its answer (includes the peer fsyncing a new commit index).',
      labelNames: ['peer'],
      buckets: LATENCY_BUCKETS,
      registers,
    });

    gauge('palisade_sessions', 'Open sessions (leases) in the lock machine.', () => source.machine().sessions);
    gauge('palisade_locks', 'Lock records: held, waited for, or in lock-delay.', () => source.machine().locks);
    gauge('palisade_locks_held', 'Holds of locks (a shared lock counts once per holder).', () => source.machine().holders);
    gauge('palisade_lock_waiters', 'Sessions queued for a lock.', () => source.machine().waiters);
    gauge('palisade_locks_in_delay', 'Locks held back by lock-delay after their holder expired.', () => source.machine().locksInDelay);
    gauge('palisade_elections', 'Elections with a leader or candidates.', () => source.machine().elections);
    gauge('palisade_watch_history_changes', 'Key-value changes the watch history keeps for watches that resume (watch.historyEntries bounds them).', () => source.machine().historyEntries);
    gauge('palisade_watch_history_bytes', 'Bytes of the watch history: keys, values and a record overhead each (watch.historyBytes bounds them).', () => source.machine().historyBytes);
    this.expirations = new Counter({ name: 'palisade_session_expirations_total', help: 'Sessions ended by lease expiry (applied on this node).', registers });
    this.revocations = new Counter({ name: 'palisade_session_revocations_total', help: 'Sessions ended by an operator\'s revoke (applied on this node).', registers });
    this.lockDelays = new Counter({ name: 'palisade_lock_delays_total', help: 'Lock-delays started: locks freed by expiry, not by release.', registers });
    this.grants = new Counter({ name: 'palisade_lock_grants_total', help: 'Lock grants applied on this node.', labelNames: ['mode'], registers });
    this.releases = new Counter({
      name: 'palisade_lock_releases_total',
      help: 'Locks freed, by reason (release, close, expire).',
      labelNames: ['reason'],
      registers,
    });

    // Known label values start at 0, so rate() works from the first increment on.
    for (const outcome of ['committed', 'lost', 'timeout', 'failed'] as const) this.proposals.inc({ outcome }, 0);
    for (const mode of ['exclusive', 'shared'] as const) this.grants.inc({ mode }, 0);
    for (const reason of ['release', 'close', 'expire'] as const) this.releases.inc({ reason }, 0);

    gauge('palisade_client_connections', 'Client connections open to this node.', () => source.clients().connections);
    this.requests = new Counter({
      name: 'palisade_client_requests_total',
      help: 'Client requests answered by this node (websocket and HTTP API), by op.',
      labelNames: ['op'],
      registers,
    });
    this.rejected = new Counter({
      name: 'palisade_client_requests_rejected_total',
      help: 'Client requests answered with an error, by error code and op.',
      labelNames: ['code', 'op'],
      registers,
    });
    this.lockWait = new Histogram({
      name: 'palisade_lock_wait_seconds',
      help: 'Leader only: from a lock request queued to its grant (0 for an immediate grant).',
      buckets: HOLD_BUCKETS,
      registers,
    });
    this.lockHold = new Histogram({
      name: 'palisade_lock_hold_seconds',
      help: 'Leader only: from a grant to the release (by release, session close or expiry).',
      buckets: HOLD_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'palisade_build_info',
      help: 'Always 1; the labels say which build this node runs.',
      labelNames: ['version', 'nodejs'],
      registers,
    }).set({ version: PACKAGE_VERSION, nodejs: process.versions.node }, 1);
    new Counter({
      name: 'palisade_client_frames_rejected_total',
      help: 'Frames refused by the client port before reaching the node, by reason.',
      labelNames: ['reason'],
      registers,
      collect: mirrorLabelled(() => {
        const c = source.clients();
        return {
          invalid_request: c.invalidRequests,
          bad_frame: c.badFrameCloses,
          oversize: c.oversizeFrames,
          slow_consumer: c.slowConsumerDisconnects,
        };
      }, 'reason'),
    });

    function gauge(name: string, help: string, read: () => number): void {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    }

    /** A counter whose total is kept elsewhere: scrapes add what grew since the last one. */
    function mirrorCounter(name: string, help: string, read: () => number): void {
      let seen = 0;
      new Counter({
        name,
        help,
        registers,
        collect() {
          const now = read();
          if (now > seen) this.inc(now - seen);
          seen = now;
        },
      });
    }
  }

  onLeaderChange(): void {
    this.leaderChanges.inc();
  }

  onProposal(outcome: ProposalOutcome, seconds: number): void {
    this.proposals.inc({ outcome });
    if (outcome === 'committed') this.proposalSeconds.observe(seconds);
  }

  onFsync(seconds: number): void {
    this.fsyncSeconds.observe(seconds);
  }

  onPeerRtt(peer: string, seconds: number): void {
    this.peerRtt.observe({ peer }, seconds);
  }

  /** The node is no longer leader: its peer round-trip series go, as the other peer series do. */
  clearPeerRtt(): void {
    this.peerRtt.reset();
  }

  /** A client request was answered (ok, or with the error `code`). */
  onAnswered(op: string, code: string | null): void {
    this.requests.inc({ op });
    if (code !== null) this.rejected.inc({ code, op });
  }

  onLockWait(seconds: number): void {
    this.lockWait.observe(seconds);
  }

  onLockHold(seconds: number): void {
    this.lockHold.observe(seconds);
  }

  onMachineEvent(ev: MachineEvent): void {
    switch (ev.type) {
      case 'sessionExpired':
        // A revoke is an expiry an operator asked for: counted apart, so that an expiry
        // storm alert does not fire for an operator draining sessions.
        if (ev.reason === 'revoke') this.revocations.inc();
        else this.expirations.inc();
        break;
      case 'lockDelayStarted':
        this.lockDelays.inc();
        break;
      case 'granted':
        this.grants.inc({ mode: ev.mode });
        break;
      case 'released':
        this.releases.inc({ reason: ev.reason });
        break;
      default:
        break;
    }
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** collect() for a labelled counter that mirrors totals kept elsewhere. */
function mirrorLabelled<L extends string>(read: () => Record<string, number>, label: L) {
  const seen = new Map<string, number>();
  return function (this: Counter<L>): void {
    for (const [value, total] of Object.entries(read())) {
      const before = seen.get(value) ?? 0;
      const labels = { [label]: value } as Record<L, string>;
      if (total > before) this.inc(labels, total - before);
      else if (!seen.has(value)) this.inc(labels, 0); // show the series at 0 from the start
      seen.set(value, total);
    }
  };
}
