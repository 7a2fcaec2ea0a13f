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
import { PROTOCOL_VERSION, type Request } from '../../../protocol/client-protocol.js';
import { TokenBucket } from '../../../transport/rate-limit.js';
import { isRequestError, parseRequest } from '../../../protocol/validate.js';
import type { ClientLimitsConfig } from '../../../config/cluster-config.js';
import type { ApiNode } from './api-node.js';
import { readJsonBody, requireJsonBody } from './body.js';
import { ApiError } from './errors.js';
import { sendError, sendJson } from './respond.js';
import { toJsonTokens } from './json-wire.js';
import { acquireWithWait } from './long-poll.js';
import { serveStream } from './streams.js';
import { TurnBudget } from './turn-budget.js';
import { API_PREFIX, OPENAPI_PATH, findRoute, waitMsOf, type Input } from './routes.js';

/** The OpenAPI document, shipped in web/ (the same relative path from src/server/api/http/ and
 *  dist/server/api/http/: four levels up). */
export const OPENAPI_FILE = new URL('../../../../web/openapi.json', import.meta.url);

/** Requests worked on at once per HTTP connection. HTTP/1.1 answers in order, so a client
 *  gains nothing by pipelining more; each costs the node its request, gate and read. The
 *  next one is answered 429 and the connection closed after it (HttpApi.refuse). */
export const MAX_IN_FLIGHT = 64;

/** Requests begun per turn of the event loop, on the turns after the one they were parsed
 *  in. The first steps of a request (gate, hello, validation, the read or proposal) run as
 *  microtasks of the turn it begins in, so 640 requests parsed at once (a few pipelined
 *  connections) held the loop ~250 ms in one go, and the Raft timers with it. */
export const STARTS_PER_TURN = 32;

/** How long an address that pipelined past MAX_IN_FLIGHT has its new connections refused:
 *  the Retry-After of its 429. */
export const COOL_OFF_MS = 1_000;

export interface HttpApiOptions {
  readonly node: ApiNode;
  readonly limits: ClientLimitsConfig;
  readonly logger: Logger;
  /** Takes a connection slot of `remote`'s address for an event stream or a long poll
   *  (ClientServer.holdAddressSlot): its release, or null when the address has none left. */
  readonly holdSlot?: (remote: string) => (() => void) | null;
  /** Refuses `remote`'s new connections for `ms` (ClientServer.coolOffAddress). */
  readonly coolOff?: (remote: string, ms: number) => void;
  /** Sent as `Palisade-Cluster-Id` on every answer: clients pin the cluster they first saw
   *  and refuse a node that answers for another (DESIGN.md, "The client SDK"). */
  readonly clusterId?: string;
  /** Takes a token of `remote`'s address bucket, shared with its websockets
   *  (ClientServer.takeAddressToken); false when it is empty. */
  readonly takeAddressToken?: (remote: string) => boolean;
}

export class HttpApi {
  /** One token bucket per TCP connection, like one per websocket connection. */
  private readonly buckets = new WeakMap<Socket, TokenBucket>();
  /** Requests being worked on, per connection (pipelined ones included). */
  private readonly inFlight = new WeakMap<Socket, number>();
  /** Connections answered a last time (a refusal, or an answer before the body was read):
   *  what they pipelined after it is not worked on, and they are not read further. */
  private readonly closing = new WeakSet<Socket>();
  /** Connections refused (a 429), with their refusal. */
  private readonly refused = new WeakMap<Socket, Refusal>();
  /** Connections whose unread body is being drained before they are closed. */
  private readonly draining = new WeakSet<Socket>();
  private readonly rateRefusal: Refusal;
  private readonly addressRateRefusal: Refusal;
  private readonly inFlightRefusal: Refusal;
  private readonly starts = new TurnBudget(STARTS_PER_TURN);
  private readonly log: Logger;

  constructor(private readonly opts: HttpApiOptions) {
    this.log = opts.logger.child({ component: 'http-api' });
    const rps = opts.limits.requestsPerSecond;
    this.rateRefusal = refusal('RATE_LIMITED', `more than ${rps} requests per second on this connection; back off and retry on a new connection`);
    this.addressRateRefusal = refusal('RATE_LIMITED', `more than ${opts.limits.requestsPerSecondPerAddress} requests per second from this address (limits.requestsPerSecondPerAddress); back off and retry`);
    this.inFlightRefusal = refusal('LIMIT_EXCEEDED', `more than ${MAX_IN_FLIGHT} requests in flight on this connection; wait for answers before sending more`);
  }

  /** The client port's handler for plain HTTP requests. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    // Before any answer is written, refusals included (writeHead merges it in).
    if (this.opts.clusterId !== undefined) res.setHeader('palisade-cluster-id', this.opts.clusterId);
    // Requests a connection pipelined after its last answer: never answered (that answer
    // says `Connection: close`), and the socket is read no further. Node parses the rest of
    // the chunk it holds, no more.
    if (this.closing.has(socket)) return void (socket.isPaused() || socket.pause());
    // The refusals come first and cost no parsing, no URL, no promise: a flood of requests
    // past either bound is what they are for.
    const busy = this.inFlight.get(socket) ?? 0;
    if (busy >= MAX_IN_FLIGHT) {
      // Pipelining this far ahead is no client's normal use; its address may connect again
      // when its Retry-After is over, not at once to have another read parsed.
      if (!this.refused.has(socket)) this.opts.coolOff?.(socket.remoteAddress ?? 'unknown', COOL_OFF_MS);
      return this.refuse(socket, res, this.inFlightRefusal);
    }
    if (!this.takeToken(socket)) return this.refuse(socket, res, this.rateRefusal);
    const remote = socket.remoteAddress ?? 'unknown';
    if (this.opts.takeAddressToken && !this.opts.takeAddressToken(remote)) {
      // A new connection would start with a full bucket of its own but not of its address's:
      // refused on arrival for the Retry-After rather than parsed to be refused again.
      if (!this.refused.has(socket)) this.opts.coolOff?.(remote, COOL_OFF_MS);
      return this.refuse(socket, res, this.addressRateRefusal);
    }
    this.inFlight.set(socket, busy + 1);
    this.starts.run(() => this.work(req, res));
  };

  private work(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const done = (): void => void this.inFlight.set(socket, (this.inFlight.get(socket) ?? 1) - 1);
    // Its client left while it waited for a turn: nobody to answer.
    if (socket.destroyed) return done();
    // Its connection was refused while it waited: it is not worked on either. The first such
    // answer is the connection's last (it says `Connection: close`): requests pipelined past
    // a bound in one read are all refused before any begins, so the connection is answered
    // one 429 and closed at once, and what Node parsed from that read (hundreds of requests
    // from one 64 KiB read) dies sooner. Kept until 64 answers were worked out, it outlived
    // the young generation: 30 -> 157 MB of heap under the pipelined reads of
    // test/security/http-flood.test.ts alone, scavenges of up to 250 ms.
    const refused = this.refused.get(socket);
    if (refused) {
      res.writeHead(429, refused.headers);
      res.end(refused.body);
      return done();
    }
    this.serve(req, res)
      .catch((e: unknown) => {
        // An answer before the body was read is the connection's last (closeUnread).
        const last = !req.complete;
        if (last) this.closeUnread(req, res);
        if (e instanceof ApiError) return sendError(res, { code: e.code, message: e.message }, e.status, last ? { ...e.headers, connection: 'close' } : e.headers);
        this.log.error({ err: e, url: req.url?.slice(0, 200) }, 'http api request failed');
        if (!res.headersSent) sendError(res, { code: 'INTERNAL', message: 'internal error' }, undefined, last ? { connection: 'close' } : {});
        else res.destroy();
      })
      .finally(done);
  }

  /**
   * One 429, and the connection is closed once it is written (after the answers owed before
   * it: HTTP/1.1 answers in order); until then the socket is not read, so a client that
   * pipelines thousands of requests past a bound costs the node the one read it had taken
   * (28,302 429s, one parsed request and one answer each, in 6 s before this). The answer is
   * the same bytes every time. A client that is merely too fast reconnects, as after any
   * `Connection: close`, and its new connection gets a fresh bucket.
   */
  private refuse(socket: Socket, res: ServerResponse, r: Refusal): void {
    this.closing.add(socket);
    this.refused.set(socket, r);
    socket.pause();
    res.writeHead(429, r.headers);
    res.end(r.body);
  }

  /**
   * After this answer (it says `Connection: close`) the connection is closed, and nothing
   * pipelined after it is worked on. When the request's body is still arriving, the rest is
   * drained (once per connection) rather than reset (see drainThenClose).
   */
  private closeUnread(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    this.closing.add(socket);
    if (req.complete || this.draining.has(socket)) return;
    this.draining.add(socket);
    res.once('finish', () => drainThenClose(socket, this.opts.limits.maxFrameBytes));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req.url ?? '/');
    const method = req.method ?? 'GET';
    if ((method === 'GET' || method === 'HEAD') && hasBody(req)) throw new ApiError(400, 'BAD_FRAME', `${method} takes no body (its fields go in the query string)`);
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
      this.closeUnread(req, res); // its answer closes the connection: what follows it is not worked on
      const message = token === undefined ? 'this cluster requires a token: send "Authorization: Bearer <token>"' : 'the token was not accepted';
      return sendError(res, { code: hello.error.code, message }, undefined, { 'www-authenticate': 'Bearer', connection: 'close' });
    }
    // The body is read only once the token is accepted: an unauthenticated client costs no
    // more than its headers. A body that is not said to be JSON is not read at all (415).
    if (method === 'POST') requireJsonBody(req);
    const input: Input = method === 'POST' ? await readJsonBody(req, this.opts.limits.maxFrameBytes) : Object.fromEntries(url.searchParams);
    const waitMs = route.op === 'acquire' ? waitMsOf(input) : 0;
    // Added to the fresh object, not spread into a new one (see RaftNode.send for why).
    const parsed = parseRequest(Object.assign(route.fields(input), { id: 0, op: route.op }));
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
 * A connection answered before its request's body was read. Node half-closes it after the
 * `Connection: close` answer and destroys it as soon as the FIN is out; with the client's
 * body still arriving that is a reset, which can lose the answer before the client reads it
 * (an HTTP client writing a body reads the answer only then). Draining the rest instead, as
 * Node would for a keep-alive connection, lets a client make that last the whole request
 * deadline (6.5 GB in 10 s on loopback). So the rest is read and dropped up to `maxBytes`,
 * then no longer read, and the connection is cut LINGER_MS after the answer.
 */
function drainThenClose(socket: Socket, maxBytes: number): void {
  if (socket.destroyed) return;
  socket.removeListener('finish', socket.destroy); // Node's destroySoon: cut once the FIN is out
  if (!socket.writableEnded) socket.end();
  let drained = 0;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
  socket.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    // Past the bound, stop reading rather than cut: a reset now, with the client still
    // writing, can lose the answer it has not read yet. The linger timer cuts it.
    if (drained > maxBytes) socket.pause();
  });
}

/** A refusal's answer, built once: the same bytes for every request it refuses. */
interface Refusal {
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: Buffer;
}

function refusal(code: 'RATE_LIMITED' | 'LIMIT_EXCEEDED', message: string): Refusal {
  const body = Buffer.from(JSON.stringify({ error: { code, message } }));
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': body.length,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'retry-after': '1',
    connection: 'close',
  };
  return { headers: Object.freeze(headers), body };
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
