// The HTTP/JSON API on the client port (docs/http-api.md): every request becomes one
// client-protocol request, checked by the same validator and served by the same gate and
// dispatch as a websocket frame. What HTTP adds is only the mapping: JSON bodies in, JSON
// out with tokens as decimal strings, the bearer token from the Authorization header, and
// HTTP statuses for the protocol's error codes.
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { PROTOCOL_VERSION, type Request } from '../../protocol/client-protocol.js';
import { TokenBucket } from '../../transport/rate-limit.js';
import { isRequestError, parseRequest } from '../../protocol/validate.js';
import type { ClientLimitsConfig } from '../../config/cluster-config.js';
import type { ApiNode } from './api-node.js';
import { readJsonBody } from './body.js';
import { ApiError, sendError, sendJson } from './errors.js';
import { toJsonTokens } from './json-wire.js';
import { acquireWithWait } from './long-poll.js';
import { serveStream } from './streams.js';
import { API_PREFIX, OPENAPI_PATH, findRoute, waitMsOf, type Input } from './routes.js';

/** The OpenAPI document, shipped in web/ (same relative path from src/ and dist/). */
export const OPENAPI_FILE = new URL('../../../web/openapi.json', import.meta.url);

/** Requests worked on at once per HTTP connection. HTTP/1.1 answers in order, so a client
 *  gains nothing by pipelining more; each costs the node its request, gate and read. */
export const MAX_IN_FLIGHT = 64;

export interface HttpApiOptions {
  readonly node: ApiNode;
  readonly limits: ClientLimitsConfig;
  readonly logger: Logger;
  /** Takes a connection slot of `remote`'s address for an event stream or a long poll
   *  (ClientServer.holdAddressSlot): its release, or null when the address has none left. */
  readonly holdSlot?: (remote: string) => (() => void) | null;
}

export class HttpApi {
  /** One token bucket per TCP connection, like one per websocket connection. */
  private readonly buckets = new WeakMap<Socket, TokenBucket>();
  private readonly log: Logger;

  constructor(private readonly opts: HttpApiOptions) {
    this.log = opts.logger.child({ component: 'http-api' });
  }

  /** Requests being worked on, per connection (pipelined ones included). */
  private readonly inFlight = new WeakMap<Socket, number>();

  /** The client port's handler for plain HTTP requests. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    const busy = this.inFlight.get(socket) ?? 0;
    this.inFlight.set(socket, busy + 1);
    const work = busy >= MAX_IN_FLIGHT ? Promise.reject(new ApiError(429, 'LIMIT_EXCEEDED', `more than ${MAX_IN_FLIGHT} requests in flight on this connection; wait for answers before sending more`, { 'retry-after': '1' })) : this.serve(req, res);
    work.catch((e: unknown) => {
      if (!req.complete) closeUnreadBody(req, res, this.opts.limits.maxFrameBytes);
      if (e instanceof ApiError) return sendError(res, { code: e.code, message: e.message }, e.status, e.headers);
      this.log.error({ err: e, url: req.url?.slice(0, 200) }, 'http api request failed');
      if (!res.headersSent) sendError(res, { code: 'INTERNAL', message: 'internal error' });
      else res.destroy();
    }).finally(() => this.inFlight.set(socket, (this.inFlight.get(socket) ?? 1) - 1));
  };

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req.url ?? '/');
    const method = req.method ?? 'GET';
    if ((method === 'GET' || method === 'HEAD') && hasBody(req)) throw new ApiError(400, 'BAD_FRAME', `${method} takes no body (its fields go in the query string)`);
    if (!this.takeToken(req.socket)) {
      const rps = this.opts.limits.requestsPerSecond;
      throw new ApiError(429, 'RATE_LIMITED', `more than ${rps} requests per second on this connection; back off and retry`, { 'retry-after': '1' });
    }
    if (url.pathname === OPENAPI_PATH) {
      if (method !== 'GET') throw new ApiError(405, 'UNKNOWN_OP', `${OPENAPI_PATH} takes GET`, { allow: 'GET' });
      const doc = await readFile(OPENAPI_FILE);
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': doc.length, 'cache-control': 'no-store' });
      res.end(doc);
      return;
    }
    if (!url.pathname.startsWith(API_PREFIX + '/')) {
      throw new ApiError(404, 'UNKNOWN_OP', `no such path: ${url.pathname.slice(0, 200)} (the HTTP API is under ${API_PREFIX}/; websocket clients upgrade)`);
    }
    const route = findRoute(method, url.pathname);
    const gate = this.opts.node.openGate(req.socket.remoteAddress ?? 'unknown');
    // Authentication is the websocket hello's, with the bearer token of this request.
    const token = bearerToken(req.headers.authorization);
    const hello = await this.opts.node.serve(gate, { id: 0, op: 'hello', version: PROTOCOL_VERSION, ...(token !== undefined ? { token } : {}) }, null);
    if (!hello.ok) {
      const message = token === undefined ? 'this cluster requires a token: send "Authorization: Bearer <token>"' : 'the token was not accepted';
      return sendError(res, { code: hello.error.code, message }, undefined, { 'www-authenticate': 'Bearer', connection: 'close' });
    }
    // The body is read only once the token is accepted: an unauthenticated client costs no more than its headers.
    const input: Input = method === 'POST' ? await readJsonBody(req, this.opts.limits.maxFrameBytes) : Object.fromEntries(url.searchParams);
    const waitMs = route.op === 'acquire' ? waitMsOf(input) : 0;
    const parsed = parseRequest({ ...route.fields(input), id: 0, op: route.op });
    if (isRequestError(parsed)) return sendError(res, parsed.error);
    // What stays open (a stream, a long poll) holds a connection slot of its address while it does.
    const release = route.stream || waitMs > 0 ? this.holdSlot(req.socket.remoteAddress ?? 'unknown') : null;
    try {
      if (route.stream) return await serveStream(this.opts.node, gate, parsed as Extract<Request, { op: 'watch' | 'observe' }>, req, res);
      const answer = waitMs > 0 ? await acquireWithWait(this.opts.node, gate, parsed as Extract<Request, { op: 'acquire' }>, waitMs, closed(res)) : await this.opts.node.serve(gate, parsed, null);
      if (!answer.ok) return sendError(res, answer.error);
      sendJson(res, 200, toJsonTokens(answer.result ?? null));
    } finally {
      release?.();
    }
  }

  private holdSlot(remote: string): () => void {
    const release = this.opts.holdSlot ? this.opts.holdSlot(remote) : () => {};
    if (release) return release;
    const max = this.opts.limits.maxConnectionsPerAddress;
    throw new ApiError(429, 'LIMIT_EXCEEDED', `TOO_MANY_CONNECTIONS: at most ${max} websocket connections, event streams and long polls open at once from one address`, { 'retry-after': '1' });
  }

  private takeToken(socket: Socket): boolean {
    const { requestsPerSecond, requestBurst } = this.opts.limits;
    if (requestsPerSecond <= 0) return true;
    let b = this.buckets.get(socket);
    if (!b) this.buckets.set(socket, (b = new TokenBucket(requestsPerSecond, Math.max(1, requestBurst), () => performance.now())));
    return b.take();
  }
}

/** The token of `Authorization: Bearer <token>`; undefined when there is no header. */
function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!m) throw new ApiError(401, 'UNAUTHENTICATED', 'the Authorization header must be "Bearer <token>"', { 'www-authenticate': 'Bearer' });
  return m[1];
}

/** How long the rest of an unread body is drained after the answer, at most. */
const LINGER_MS = 1_000;

/**
 * A request answered before its body was read: Node drains the rest to reuse the
 * connection, which a client can make last the whole request deadline (gigabytes on a fast
 * link). The rest is drained for at most LINGER_MS or `maxBytes` after the answer, then
 * the connection is cut; closing at once would reset it and could lose the answer.
 */
function closeUnreadBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): void {
  res.once('finish', () => {
    const socket = req.socket;
    if (req.complete || socket.destroyed) return;
    let drained = 0;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    socket.on('data', (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > maxBytes) socket.destroy();
    });
  });
}

/** Whether the request says a body follows (a Content-Length above 0, or chunked). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Resolves when the client goes away before its answer was sent. */
function closed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => res.once('close', () => resolve()));
}

/** The request target as a URL; a malformed one (`GET http://[`) is the client's error (400),
 *  not a failure worth an error-level log line per request. */
function requestUrl(target: string): URL {
  try {
    return new URL(target, 'http://node');
  } catch {
    throw new ApiError(400, 'INVALID_ARGUMENT', 'malformed request URL');
  }
}
