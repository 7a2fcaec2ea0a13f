// One WebSocket to one node: frame ids, matching responses to requests, and handing server
// events upward. It knows nothing of sessions, retries or other nodes (link.ts does).
import { randomBytes } from 'node:crypto';
import type { HelloResult, Request, RequestBody, Response, ServerEvent, WireError } from '../protocol/client-protocol.js';
import { NONCE_BYTES, PROTOCOL_VERSION } from '../protocol/client-protocol.js';
import { proofMatches, tokenDigest, tokenIdOf } from '../protocol/node-proof.js';
import type { TrustViolation } from './trust.js';
import type { Clock, TimerHandle } from './clock.js';
import { waitFor } from './wait.js';
import { errorFromWire } from './errors.js';
import { readAnswer } from '../protocol/results.js';
import { decodeFrame, encodeFrame } from '../protocol/codec.js';
import { isInvalidServerFrame, parseServerFrame, type ParsedServerFrame } from '../protocol/validate.js';

/** What the SDK needs of a WebSocket: satisfied by the `ws` package and by the WHATWG WebSocket. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  /** Destroys the socket without the close handshake (the `ws` package; browsers have none). */
  terminate?(): void;
  addEventListener(type: 'message', listener: (event: { readonly data: unknown }) => void): void;
  addEventListener(type: 'open' | 'close' | 'error', listener: () => void): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export type { RequestBody };

/**
 * The socket closed, could not be opened, or did not answer in time. Whatever was in
 * flight on it may or may not have been applied. Internal: callers retry elsewhere.
 */
export class ConnectionLostError extends Error {
  /** Where the node said to go instead, when it knew. */
  readonly leaderHint: WireError['leaderHint'];
  constructor(message: string, leaderHint?: WireError['leaderHint']) {
    super(message);
    this.name = 'ConnectionLostError';
    this.leaderHint = leaderHint;
  }
}

interface Pending {
  resolve(response: Response): void;
  reject(error: unknown): void;
  /** When the request was sent (for the hello: undefined). */
  readonly sentAt?: number;
}

/**
 * The node is not to be trusted: it answered for another cluster, or (a learned member) did
 * not prove it holds the client's token. Internal: the link sets the node aside and reports
 * the violation; callers never see it, only an UnavailableError naming it if no node serves.
 */
export class UntrustedNodeError extends ConnectionLostError {
  readonly violation: TrustViolation;
  constructor(violation: TrustViolation) {
    super(violation.message);
    this.name = 'UntrustedNodeError';
    this.violation = violation;
  }
}

export interface ConnectionOptions {
  readonly WebSocket: WebSocketConstructor;
  readonly clock: Clock;
  /** Bound on opening the socket plus the hello exchange. */
  readonly connectTimeoutMs: number;
  readonly authToken?: string;
  /** The cluster the node must answer for (the client's pin), read when the node answers;
   *  null: any (before the first connection). */
  readonly clusterId?: () => string | null;
  /**
   * The URL was learned from a node (a member list or a hint), not given by the application:
   * the token goes to it only after it proved it holds the token's digest (a challenge hello
   * first: docs/protocol.md §3, "Proving a node"), and any refusal it answers with is its
   * own failing (UntrustedNodeError), never the client's credentials being wrong.
   */
  readonly learned?: boolean;
}

const WS_OPEN = 1;
const WS_CLOSED = 3;

/**
 * How long a closed socket may wait for the node's half of the close handshake. A paused
 * node (SIGSTOP) never sends it, and `ws` would keep the socket, and a timer that holds the
 * process, for its 30 s close timeout; a live node answers in a round trip.
 */
const CLOSE_HANDSHAKE_MS = 1_000;

/** Starts the close handshake, and ends the socket if the node has not finished it in time. */
function closeSocket(ws: WebSocketLike, clock: Clock, code?: number, reason?: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closing
  }
  if (ws.readyState === WS_CLOSED || !ws.terminate) return;
  const timer = clock.setTimeout(() => {
    if (ws.readyState !== WS_CLOSED) ws.terminate?.();
  }, CLOSE_HANDSHAKE_MS);
  // The socket itself keeps the process alive until it is gone; this timer need not.
  (timer as { unref?: () => void } | null)?.unref?.();
}

export class Connection {
  readonly url: string;
  readonly hello: HelloResult;
  /** Server-pushed events; set by the owner. */
  onEvent: (event: ServerEvent) => void = () => {};
  /** Called once, when the socket is gone (closed by either side). */
  onClose: () => void = () => {};

  private readonly ws: WebSocketLike;
  private readonly clock: Clock;
  private readonly pending: Map<number, Pending>;
  private nextId: number;
  private closed = false;
  private lostToNode = false;
  /** When the node last sent anything (liveness.ts watches it). */
  lastHeardAt: number;

  private constructor(url: string, ws: WebSocketLike, clock: Clock, hello: HelloResult, pending: Map<number, Pending>, nextId: number) {
    this.url = url;
    this.ws = ws;
    this.clock = clock;
    this.hello = hello;
    this.pending = pending;
    this.nextId = nextId;
    this.lastHeardAt = clock.now();
  }

  /** Requests sent and not yet answered. */
  get outstanding(): number {
    return this.pending.size;
  }

  /** When the longest-waiting request still unanswered was sent; null when none is. */
  get oldestOutstandingAt(): number | null {
    let oldest: number | null = null;
    for (const p of this.pending.values()) if (p.sentAt !== undefined && (oldest === null || p.sentAt < oldest)) oldest = p.sentAt;
    return oldest;
  }

  /** Closed by the node (or its host: killed, crashed) or given up as silent, rather than
   *  closed by this side to move elsewhere. */
  get lost(): boolean {
    return this.lostToNode;
  }

  /** Ends the connection because the node went silent: whatever is in flight fails over. */
  abandonSilent(reason: string): void {
    if (!this.closed) this.lostToNode = true;
    for (const p of this.pending.values()) p.reject(new ConnectionLostError(reason));
    this.pending.clear();
    this.close();
  }

  /** Opens a socket to `url` and says hello (greet). Rejects with ConnectionLostError (an
   *  UntrustedNodeError when the node may not be used) or the node's typed error. */
  static open(url: string, options: ConnectionOptions): Promise<Connection> {
    const { clock } = options;
    return new Promise<Connection>((resolve, reject) => {
      let ws: WebSocketLike;
      try {
        ws = new options.WebSocket(url);
      } catch (e) {
        reject(new ConnectionLostError(`cannot open ${url}: ${(e as Error).message}`));
        return;
      }
      ws.binaryType = 'arraybuffer';
      const pending = new Map<number, Pending>();
      let connection: Connection | null = null;
      let settled = false;
      const fail = (error: unknown): void => {
        if (settled) return;
        settled = true;
        clock.clearTimeout(timer);
        closeSocket(ws, clock);
        reject(error);
      };
      const timer: TimerHandle = clock.setTimeout(
        () => fail(new ConnectionLostError(`no hello from ${url} within ${options.connectTimeoutMs} ms`)),
        options.connectTimeoutMs,
      );

      ws.addEventListener('message', (event) => {
        if (connection) connection.lastHeardAt = clock.now();
        const frame = readFrame(event.data);
        if (isInvalidServerFrame(frame)) {
          // An answer we cannot read says nothing of the outcome: the caller retries it
          // elsewhere (same seq). Anything else unreadable is ignored rather than trusted.
          const p = frame.id === undefined ? undefined : pending.get(frame.id);
          if (p && frame.id !== undefined) {
            pending.delete(frame.id);
            p.reject(new ConnectionLostError(`unreadable answer from ${url}: ${frame.invalid}`));
          }
          return;
        }
        if ('id' in frame) {
          const p = pending.get(frame.id);
          if (p) {
            pending.delete(frame.id);
            p.resolve(frame);
          }
        } else if (connection) {
          connection.onEvent(frame);
        }
      });
      // 'close' follows an error; the error's text (a refused certificate, say) is kept so
      // that a caller who never gets connected can be told why.
      let socketError = '';
      // (WebSocketLike promises no error event argument; the ws package passes one with a message.)
      ws.addEventListener('error', (event?: unknown) => {
        const message = (event as { readonly message?: unknown } | undefined)?.message;
        if (typeof message === 'string' && message) socketError = `: ${message}`;
      });
      ws.addEventListener('close', () => {
        if (connection) connection.handleClosed(true);
        else fail(new ConnectionLostError(`connection to ${url} closed during hello${socketError}`));
        for (const p of pending.values()) p.reject(new ConnectionLostError(`connection to ${url} closed`));
        pending.clear();
      });
      let nextId = 1;
      /** One request before the connection exists (the hellos); its response, ok or not. */
      const ask = (body: RequestBody): Promise<Response> =>
        new Promise<Response>((resolveAsk, rejectAsk) => {
          const id = nextId++;
          pending.set(id, { resolve: resolveAsk, reject: rejectAsk });
          try {
            ws.send(encodeFrame({ id, ...body } as Request));
          } catch (e) {
            rejectAsk(new ConnectionLostError(`cannot send to ${url}: ${(e as Error).message}`));
          }
        });
      ws.addEventListener('open', () => {
        greet(url, options, ask).then((hello) => {
          if (settled) return;
          settled = true;
          clock.clearTimeout(timer);
          connection = new Connection(url, ws, clock, hello, pending, nextId);
          resolve(connection);
        }, fail);
      });
    });
  }

  get isOpen(): boolean {
    return !this.closed && this.ws.readyState === WS_OPEN;
  }

  /**
   * Sends one request and resolves with the node's response, ok or not. Rejects with
   * ConnectionLostError when the socket goes or no answer comes within `timeoutMs`, and
   * with the signal's reason when it aborts.
   */
  request(body: RequestBody, timeoutMs: number, signal?: AbortSignal): Promise<Response> {
    const onDeadline = (): never => {
      throw new ConnectionLostError(`no answer from ${this.url} within ${Math.round(timeoutMs)} ms`);
    };
    return waitFor<Response>({ clock: this.clock, deadline: this.clock.now() + timeoutMs, signal, onDeadline }, (resolve, reject) => {
      if (!this.isOpen) return reject(new ConnectionLostError(`connection to ${this.url} is closed`));
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject, sentAt: this.clock.now() });
      try {
        this.ws.send(encodeFrame({ id, ...body } as Request)); // id first: see RaftNode.send
      } catch (e) {
        reject(new ConnectionLostError(`cannot send to ${this.url}: ${(e as Error).message}`));
      }
      return () => this.pending.delete(id);
    });
  }

  close(): void {
    if (this.closed) return;
    closeSocket(this.ws, this.clock, 1000, 'client closing');
    // Do not wait for the close handshake: the owner treats the connection as gone now.
    this.handleClosed();
    for (const p of this.pending.values()) p.reject(new ConnectionLostError(`connection to ${this.url} closed`));
    this.pending.clear();
  }

  /** `byNode`: the socket closed without this side having closed it. */
  private handleClosed(byNode = false): void {
    if (this.closed) return;
    this.closed = true;
    if (byNode) this.lostToNode = true;
    this.onClose();
  }
}

/**
 * The hello exchange: the node's hello, once it is one this client may use. To a learned
 * URL, with a token: first a challenge hello (no token) whose proof must check for the
 * pinned cluster and the URL dialled, then the hello with the token. The proof costs one
 * round trip per connection to a learned member, and only there: seeds are the
 * application's own choice and get the token in the first hello, as before.
 */
async function greet(url: string, options: ConnectionOptions, ask: (body: RequestBody) => Promise<Response>): Promise<HelloResult> {
  const { authToken: token, learned = false } = options;
  const untrusted = (kind: TrustViolation['kind'], message: string): UntrustedNodeError => new UntrustedNodeError({ kind, url, message });
  const sameCluster = (hello: HelloResult): HelloResult => {
    const pinned = options.clusterId?.() ?? null;
    if (pinned === null || hello.clusterId === pinned) return hello;
    throw untrusted('CLUSTER_MISMATCH', `${url} answered for cluster ${JSON.stringify(hello.clusterId)}, not ${JSON.stringify(pinned)}, the cluster this client is pinned to: not used`);
  };
  const read = (response: Response, what: string): HelloResult => {
    if (!response.ok) {
      const refusal = errorFromWire(helloRefusal(response.error, url, what === 'hello' && token !== undefined));
      if (!learned) throw refusal;
      throw untrusted('UNPROVEN_NODE', `${url}, a learned member, refused the ${what} (${refusal.code}: ${refusal.message}): not used`);
    }
    const hello = readAnswer('hello', response);
    if (!hello.ok) throw new ConnectionLostError(`${what} answer from ${url}: ${hello.error.message}`);
    return sameCluster(hello.result);
  };
  if (learned && token !== undefined) {
    const digest = tokenDigest(token);
    const nonce = randomBytes(NONCE_BYTES);
    const challenged = read(await ask({ op: 'hello', version: PROTOCOL_VERSION, challenge: { tokenId: tokenIdOf(digest), nonce } }), 'challenge hello');
    if (!proofMatches(challenged.proof, digest, challenged.clusterId, url, nonce)) {
      throw untrusted(
        'UNPROVEN_NODE',
        `${url}, a learned member, did not prove it holds this client's token (${challenged.proof === undefined ? 'no proof: a node without auth, an older version, or not a member' : 'a wrong proof: not a member, or its client URL is not the one it is listed with'}): the token was not sent and it is not used`,
      );
    }
  }
  return read(await ask({ op: 'hello', version: PROTOCOL_VERSION, ...(token === undefined ? {} : { token }) }), 'hello');
}

/** A refused hello, in words that say what to fix (the code is kept for callers that branch). */
function helloRefusal(error: WireError, url: string, sentToken: boolean): WireError {
  if (error.code !== 'UNAUTHENTICATED') return error;
  const what = sentToken ? 'refused the token' : 'requires a token and none was given';
  return { ...error, message: `the cluster (${url}) ${what}: ${error.message} — check the authToken option` };
}

/** Decodes and validates one message; never throws. */
function readFrame(data: unknown): ParsedServerFrame {
  const bytes = toBytes(data);
  if (bytes === null) return { invalid: 'not a binary message' };
  try {
    return parseServerFrame(decodeFrame(bytes));
  } catch (e) {
    return { invalid: (e as Error).message };
  }
}

function toBytes(data: unknown): Uint8Array | null {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (Array.isArray(data) && data.every((d) => d instanceof Uint8Array)) return Buffer.concat(data as Uint8Array[]);
  return null;
}




