// The cluster as one node sees it, for the status page: its own status plus each peer's
// GET /api/status over the peers' HTTP ports. The node aggregates (rather than the browser
// asking every node) so that the page needs to reach only one node, needs no CORS, and
// shows an unreachable peer as such instead of as a browser network error.
import type { ClusterConfig } from '../../config/cluster-config.js';
import type { NodeStatusJson } from './node-view.js';

export interface ClusterNodeJson {
  readonly id: string;
  readonly httpUrl: string | null;
  readonly clientUrl: string;
  /** True for the node that answered this request. */
  readonly self: boolean;
  readonly reachable: boolean;
  /** Why there is no status: unreachable, timed out, no httpUrl configured. */
  readonly error: string | null;
  readonly status: NodeStatusJson | null;
}

export interface ClusterJson {
  readonly self: string;
  readonly clusterId: string;
  /** The reachable node that says it leads with the highest term, else null. */
  readonly leader: string | null;
  readonly term: number;
  readonly nodes: readonly ClusterNodeJson[];
  readonly at: number;
}

type PeerResult = { ok: true; status: NodeStatusJson } | { ok: false; error: string };

export const PEER_STATUS_TIMEOUT_MS = 400;

export class ClusterView {
  private peers = new Map<string, PeerResult>();
  private polling: Promise<void> | null = null;

  constructor(
    private readonly selfId: string,
    private readonly config: ClusterConfig,
    private readonly timeoutMs = PEER_STATUS_TIMEOUT_MS,
  ) {}

  /** Ask every peer for its status (one poll at a time; a second caller shares it). */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => (this.polling = null));
    return this.polling;
  }

  /** The view from the latest poll and our own status now. */
  compose(self: NodeStatusJson): ClusterJson {
    const nodes = this.config.nodes.map((n): ClusterNodeJson => {
      const base = { id: n.id, httpUrl: n.httpUrl ?? null, clientUrl: n.clientUrl };
      if (n.id === this.selfId) return { ...base, self: true, reachable: true, error: null, status: self };
      const r = this.peers.get(n.id);
      if (!r) return { ...base, self: false, reachable: false, error: n.httpUrl ? 'not asked yet' : 'no httpUrl configured', status: null };
      return r.ok
        ? { ...base, self: false, reachable: true, error: null, status: r.status }
        : { ...base, self: false, reachable: false, error: r.error, status: null };
    });
    let leader: NodeStatusJson | null = null;
    for (const n of nodes) {
      const s = n.status;
      if (s && s.role === 'leader' && (!leader || s.term > leader.term)) leader = s;
    }
    const term = Math.max(0, ...nodes.map((n) => n.status?.term ?? 0));
    return { self: this.selfId, clusterId: this.config.clusterId, leader: leader?.id ?? null, term, nodes, at: Date.now() };
  }

  private async pollOnce(): Promise<void> {
    const others = this.config.nodes.filter((n) => n.id !== this.selfId);
    const results = await Promise.all(
      others.map(async (n): Promise<[string, PeerResult]> => {
        if (!n.httpUrl) return [n.id, { ok: false, error: 'no httpUrl configured' }];
        return [n.id, await fetchStatus(n.httpUrl, this.timeoutMs)];
      }),
    );
    this.peers = new Map(results);
  }
}

async function fetchStatus(httpUrl: string, timeoutMs: number): Promise<PeerResult> {
  try {
    const res = await fetch(new URL('/api/status', httpUrl), { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return { ok: false, error: `HTTP ${res.status}` };
    const body: unknown = await res.json();
    if (!isStatus(body)) return { ok: false, error: 'answer is not a node status' };
    return { ok: true, status: body };
  } catch (e) {
    const err = e as Error & { cause?: { code?: string } };
    if (err.name === 'TimeoutError') return { ok: false, error: `no answer within ${timeoutMs} ms` };
    return { ok: false, error: err.cause?.code ?? err.message };
  }
}

function isStatus(x: unknown): x is NodeStatusJson {
  if (typeof x !== 'object' || x === null) return false;
  const o = x as Record<string, unknown>;
  return typeof o['id'] === 'string' && typeof o['role'] === 'string' && typeof o['term'] === 'number' && typeof o['commitIndex'] === 'number';
}
