// The node's HTTP API for operators: what each path answers. GET (and HEAD), which change
// nothing, and one POST, the status page's revoke, which needs an admin token (revoke.ts).
// docs/operations.md lists the paths for people.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeMetrics } from './metrics.js';
import type { ClusterView } from './cluster-view.js';
import { MAX_PAGE, type NodeView } from './node-view.js';
import type { RecentEvents } from './recent-events.js';
import { MAX_STREAMS, MAX_STREAMS_PER_ADDRESS, type SseHub } from './sse.js';
import { staticFile } from './static-files.js';
import { serveRevoke, type Revoke } from './revoke.js';

export interface RouteDeps {
  readonly view: NodeView;
  readonly metrics: NodeMetrics;
  readonly events: RecentEvents;
  readonly cluster: ClusterView;
  readonly sse: SseHub;
  /** A new event-stream subscriber arrived: what it is sent first. */
  readonly firstEvents: () => Promise<[string, unknown][]>;
  /** Whether clients authenticate (the revoke needs it), and the revoke itself. */
  readonly authOn: boolean;
  readonly revoke: Revoke;
}

const REVOKE_PATH = '/api/sessions/revoke';

const DEFAULT_PAGE = 50;
const MAX_PREFIX_CHARS = 4096;

export class BadRequest extends Error {}

/** The request target as a URL; a malformed one (`GET http://[`) is the client's error,
 *  answered 400 like any other, not a failure of the node worth an error-level log line. */
function parseUrl(target: string): URL {
  try {
    return new URL(target, 'http://node');
  } catch {
    throw new BadRequest('malformed request URL');
  }
}

export async function route(d: RouteDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = parseUrl(req.url ?? '/');
  if (url.pathname === REVOKE_PATH) {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return json(res, 405, { error: `${REVOKE_PATH} takes POST` });
    }
    return serveRevoke(req, res, d.authOn, d.revoke);
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return json(res, 405, { error: `method ${req.method} not allowed` });
  }
  const q = url.searchParams;
  switch (url.pathname) {
    case '/metrics': {
      const m = await d.metrics.scrape();
      return send(res, 200, m.contentType, m.body);
    }
    case '/healthz':
      // The process is up and serving; nothing about the cluster (that is /readyz).
      return json(res, 200, { status: 'ok', node: d.view.id });
    case '/readyz': {
      const r = d.view.raft();
      const ready = d.view.readiness(r);
      // Warnings do not fail readiness (this node still serves correctly), but they are
      // what an operator must act on: a member not catching up, a refused peer.
      const facts = { node: d.view.id, role: r.role, term: r.term, leader: r.leader, commitIndex: r.commitIndex, appliedIndex: r.appliedIndex, warnings: d.view.warnings() };
      return ready.ready ? json(res, 200, { status: 'ready', ...facts }) : json(res, 503, { status: 'not ready', reason: ready.reason, ...facts });
    }
    case '/api/status':
      return json(res, 200, d.view.status());
    case '/api/cluster':
      await d.cluster.poll();
      return json(res, 200, d.cluster.compose(d.view.status()));
    case '/api/locks':
      return json(res, 200, d.view.locks(prefixOf(q), intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER), intParam(q, 'limit', DEFAULT_PAGE, 1, MAX_PAGE)));
    case '/api/sessions':
      return json(res, 200, d.view.sessions(prefixOf(q), intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER), intParam(q, 'limit', DEFAULT_PAGE, 1, MAX_PAGE)));
    case '/api/elections':
      return json(res, 200, d.view.elections(prefixOf(q), intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER), intParam(q, 'limit', DEFAULT_PAGE, 1, MAX_PAGE)));
    case '/api/recent':
      return json(res, 200, { node: d.view.id, events: d.events.list(intParam(q, 'limit', 100, 1, 10_000)) });
    case '/api/events': {
      // The place first: a stream over a cap costs no cluster poll, no first events.
      const place = d.sse.reserve(req.socket.remoteAddress ?? 'unknown');
      if (!place) {
        res.setHeader('retry-after', '5');
        return json(res, 429, { error: `too many event streams (at most ${MAX_STREAMS} on this node, ${MAX_STREAMS_PER_ADDRESS} from one address); close a status page or retry later` });
      }
      try {
        d.sse.subscribe(place, req, res, await d.firstEvents());
      } catch (e) {
        place.release();
        throw e;
      }
      return;
    }
    default: {
      const f = await staticFile(url.pathname);
      if (!f) return json(res, 404, { error: `no such path: ${url.pathname}` });
      return send(res, 200, f.type, f.body);
    }
  }
}

function prefixOf(q: URLSearchParams): string {
  const p = q.get('prefix') ?? '';
  if (p.length > MAX_PREFIX_CHARS) throw new BadRequest(`prefix is longer than ${MAX_PREFIX_CHARS} characters`);
  return p;
}

function intParam(q: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = q.get(name);
  if (raw === null || raw === '') return dflt;
  if (!/^\d+$/.test(raw)) throw new BadRequest(`${name} must be a whole number`);
  const v = Number(raw);
  if (v < min || v > max) throw new BadRequest(`${name} must be between ${min} and ${max}`);
  return v;
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
