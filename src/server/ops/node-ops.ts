// Everything a node does for its operators, behind one object the composition root holds:
// Prometheus metrics, /healthz and /readyz, the status page and its API, and the live
// event stream. The node calls the on*() hooks from its own code paths; each hook is cheap
// (a counter, a ring-buffer push), and the work that costs (reading peers' status,
// encoding JSON for pages) happens only while a status page is open.
import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { MachineEvent } from '../../lockfsm/index.js';
import type { Message } from '../../raft/index.js';
import { boundHttpTimes, capSocketsPerAddress } from '../../transport/tls.js';
import { browserPolicy, browserRefusal } from '../../transport/browser-guard.js';
import { RefusalLog } from '../../transport/refusal-log.js';
import { parseHttpUrl } from '../../config/cluster-config.js';
import { NodeMetrics, type ProposalOutcome } from './metrics.js';
import { ProposalLost, ProposalTimeout } from '../replication/proposals.js';
import { ClusterView, type ClusterJson } from './cluster-view.js';
import { NodeView, type NodeInternals } from './node-view.js';
import { PeerRtt } from './peer-rtt.js';
import { LockTiming } from '../leases/lock-timing.js';
import { RecentEvents, type RecentEvent } from './recent-events.js';
import { BadRequest, json, route } from './routes.js';
import { SseHub } from './sse.js';
import type { Revoke } from './revoke.js';

/** How often open pages are checked for changes: well inside the one second they promise. */
const PUSH_EVERY_MS = 100;
/** How often peers are asked for their status while a page is open. */
const POLL_PEERS_EVERY_MS = 500;
/** Lock-table change hints at most this often (each makes every page refetch a page). */
const LOCKS_HINT_EVERY_MS = 250;
/** The cluster view is re-sent at least this often, so uptimes and RTTs stay fresh. */
const CLUSTER_REFRESH_MS = 1_000;
/** Events per push; more in one push are counted as `dropped` and left to /api/recent. */
const EVENTS_PER_PUSH = 200;
/** TCP connections one address may hold open on the HTTP port (a monitoring system and a
 *  few status pages need a handful); more are destroyed on arrival. */
const MAX_SOCKETS_PER_ADDRESS = 32;

export interface NodeOpsOptions {
  readonly node: NodeInternals;
  readonly httpUrl: string;
  readonly logger: Logger;
  /** The status page's revoke: a client's revokeSession with this admin token (revoke.ts). */
  readonly revoke: Revoke;
}

export class NodeOps {
  readonly metrics: NodeMetrics;
  readonly view: NodeView;
  readonly events = new RecentEvents();
  private readonly rtt: PeerRtt;
  private readonly lockTiming: LockTiming;
  /** The last index of the log on disk when the node started: entries up to it are replays. */
  private readonly replayedUpTo: number;
  private readonly sse = new SseHub();
  private readonly cluster: ClusterView;
  private readonly log: Logger;
  private readonly refusals: RefusalLog;
  private server: Server | null = null;
  private pushTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;

  private lastRole: string | null = null;
  private lastLeader: string | null = null;
  private pending: RecentEvent[] = [];
  private dropped = 0;
  private locksDirty = false;
  private lastLocksHint = 0;
  private lastClusterKey = '';
  private lastClusterPush = 0;

  constructor(private readonly opts: NodeOpsOptions) {
    const n = opts.node;
    this.log = opts.logger.child({ component: 'ops-http' });
    this.refusals = new RefusalLog(this.log, "refused a browser's request on the HTTP port", 'browser requests refused on the HTTP port');
    this.replayedUpTo = n.raft.log.lastIndex();
    this.lockTiming = new LockTiming({ onLockWait: (s) => this.metrics.onLockWait(s), onLockHold: (s) => this.metrics.onLockHold(s) });
    this.rtt = new PeerRtt(
      () => performance.now(),
      (peer, ms) => this.metrics.onPeerRtt(peer, ms / 1000),
    );
    this.view = new NodeView(n, this.rtt, (session, name) => this.lockTiming.heldSince(session, name));
    this.metrics = new NodeMetrics(n.id, this.view);
    this.cluster = new ClusterView(n.id, n.config);
    n.storage.onFsync = (ms) => this.metrics.onFsync(ms / 1000);
  }

  async start(): Promise<{ host: string; port: number }> {
    const { host, port } = parseHttpUrl(this.opts.httpUrl, 'httpUrl');
    const browsers = browserPolicy({ ...this.opts.node.config.http, ownHost: host });
    const server = createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => {
      // A page on another site (or rebound to this address) reads nothing here.
      const refused = browserRefusal(req, browsers);
      if (refused) {
        this.refusals.refuse(req.socket.remoteAddress ?? 'unknown', { why: refused.message }, refused.kind);
        return json(res, refused.status, { error: refused.message });
      }
      route(
        {
          view: this.view,
          metrics: this.metrics,
          events: this.events,
          cluster: this.cluster,
          sse: this.sse,
          firstEvents: () => this.firstEvents(),
          authOn: this.opts.node.config.auth !== null,
          revoke: this.opts.revoke,
        },
        req,
        res,
      ).catch((e: Error) => {
        if (res.headersSent) return void res.destroy();
        if (e instanceof BadRequest) return json(res, 400, { error: e.message });
        this.log.error({ err: e, url: req.url }, 'ops request failed');
        json(res, 500, { error: e.message });
      });
    });
    boundHttpTimes(server);
    capSocketsPerAddress(server, MAX_SOCKETS_PER_ADDRESS);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.log.error({ err }, 'ops http server failed'));
    this.server = server;
    this.pushTimer = setInterval(() => this.push(), PUSH_EVERY_MS);
    this.pollTimer = setInterval(() => {
      if (this.sse.size > 0) void this.cluster.poll().then(() => this.pushCluster(true));
    }, POLL_PEERS_EVERY_MS);
    this.pushTimer.unref();
    this.pollTimer.unref();
    const a = server.address();
    const bound = typeof a === 'object' && a ? { host: a.address, port: a.port } : { host, port };
    this.log.info({ httpUrl: this.opts.httpUrl }, 'serving metrics, health checks and the status page');
    return bound;
  }

  async stop(): Promise<void> {
    this.refusals.close();
    if (this.pushTimer) clearInterval(this.pushTimer);
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.sse.close();
    const server = this.server;
    this.server = null;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  // ---- hooks the node calls -----------------------------------------------------------

  /** Raft soft state changed (role and/or leader), at `term`. */
  onSoftState(role: string, leader: string | null, term: number): void {
    const at = Date.now();
    const shownRole = role === 'preCandidate' ? 'candidate' : role;
    if (shownRole !== this.lastRole) {
      this.lastRole = shownRole;
      this.record(this.events.roleChanged(at, this.opts.node.id, shownRole, term));
      if (shownRole !== 'leader') {
        this.rtt.clear();
        this.metrics.clearPeerRtt();
      }
    }
    if (leader !== this.lastLeader) {
      if (leader !== null) this.metrics.onLeaderChange();
      this.record(this.events.leaderChanged(at, this.lastLeader, leader, term));
      this.lastLeader = leader;
      // Open pages want the whole cluster's new picture now, not at the next poll.
      if (this.sse.size > 0) void this.cluster.poll().then(() => this.pushCluster(true));
    }
  }

  onMachineEvent(ev: MachineEvent, index: number): void {
    this.metrics.onMachineEvent(ev);
    this.lockTiming.onEvent(ev, Date.now(), this.lastRole === 'leader');
    if (ev.type === 'kvChanged') return;
    this.locksDirty = true;
    const e = this.events.fromMachine(ev, index, Date.now(), index <= this.replayedUpTo);
    if (e) this.record(e);
  }

  onRaftSent(msgs: readonly Message[]): void {
    this.rtt.sent(msgs);
  }

  onRaftReceived(from: string, msgs: readonly Message[]): void {
    this.rtt.received(from, msgs);
  }

  /** A client request was answered: ok, or with the error `code`. */
  onAnswered(op: string, code: string | null): void {
    this.metrics.onAnswered(op, code);
  }

  /** Time a proposal from propose() until its entry is applied (or it is lost). */
  timeProposal<T>(applied: Promise<T>): Promise<T> {
    const started = performance.now();
    const done = (outcome: ProposalOutcome) => this.metrics.onProposal(outcome, (performance.now() - started) / 1000);
    return applied.then(
      (v) => {
        done('committed');
        return v;
      },
      (e: unknown) => {
        done(e instanceof ProposalLost ? 'lost' : e instanceof ProposalTimeout ? 'timeout' : 'failed');
        throw e;
      },
    );
  }

  // ---- live updates -------------------------------------------------------------------

  private record(e: RecentEvent): void {
    if (this.sse.size === 0) return; // nobody to push to; /api/recent still has it
    if (this.pending.length >= EVENTS_PER_PUSH) {
      this.pending.shift();
      this.dropped++;
    }
    this.pending.push(e);
  }

  private async firstEvents(): Promise<[string, unknown][]> {
    await this.cluster.poll();
    return [
      ['cluster', this.cluster.compose(this.view.status())],
      ['events', { events: this.events.list(100), dropped: 0 }],
    ];
  }

  private push(): void {
    if (this.sse.size === 0) {
      this.pending = [];
      this.dropped = 0;
      return;
    }
    this.pushCluster(false);
    if (this.pending.length) {
      this.sse.broadcast('events', { events: this.pending, dropped: this.dropped });
      this.pending = [];
      this.dropped = 0;
    }
    const now = performance.now();
    if (this.locksDirty && now - this.lastLocksHint >= LOCKS_HINT_EVERY_MS) {
      this.locksDirty = false;
      this.lastLocksHint = now;
      this.sse.broadcast('locks', { appliedIndex: this.opts.node.machine().appliedIndex });
    }
  }

  /** Send the cluster view when it changed (or `force`, after a peer poll, once a second). */
  private pushCluster(force: boolean): void {
    if (this.sse.size === 0) return;
    const view = this.cluster.compose(this.view.status());
    const key = clusterKey(view);
    const now = performance.now();
    if (key === this.lastClusterKey && !(force && now - this.lastClusterPush >= CLUSTER_REFRESH_MS)) return;
    this.lastClusterKey = key;
    this.lastClusterPush = now;
    this.sse.broadcast('cluster', view);
  }
}

/** The parts of a cluster view whose change is worth a push. */
function clusterKey(c: ClusterJson): string {
  return JSON.stringify(
    c.nodes.map((n) => {
      const s = n.status;
      return [n.id, n.reachable, n.error, s?.role, s?.term, s?.leader, s?.commitIndex, s?.appliedIndex, s?.ready, s?.peers.map((p) => p.match)];
    }),
  );
}
