// The client port: a ws server whose connections hand the server layer VALIDATED requests
// and carry its responses and events back. Everything a client can get wrong is handled
// here, so the node behind it only ever sees well-formed Requests:
//   - a frame that decodes and carries a readable id but is not a valid request is answered
//     with an error (BAD_FRAME, UNKNOWN_OP, INVALID_ARGUMENT) and the connection stays up;
//   - a frame with no readable id (garbage, not a map) closes the connection (1007), as does
//     a text frame (1003);
//   - a frame over the size limit is answered FRAME_TOO_LARGE when its id is readable, then
//     the connection is closed (1009);
//   - a client that does not read what it is sent is disconnected once too much is queued;
//   - a connection that sends faster than its token bucket allows is answered RATE_LIMITED;
//   - an address with too many connections open has the next one closed (1013);
//   - until the server layer says a connection has authenticated (preAuth), its frames are
//     at most a few KiB, it may send at most so many bytes in all, and it must authenticate
//     within a deadline (1008 HELLO_TIMEOUT). Anyone can open a connection; this bounds what
//     that costs before they have proven anything.
// A frame refused for its size or rate is never decoded: its id is read by walking the
// top-level map (peekRequestId), so the refusal can still name the request.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import { CLOSE_CODES, DEFAULT_MAX_FRAME_BYTES, type ErrorCode, type Request, type ServerFrame } from '../protocol/client-protocol.js';
import { FrameError, decodeFrame, encodeFrame, encodeFrameParts } from '../protocol/codec.js';
import { peekRequestId } from '../protocol/msgpack-scan.js';
import { AddressCoolOff } from './address-cooloff.js';
import { zeroClientServerStats, type ClientConn, type ClientListener, type ClientServerStats } from './contracts.js';
export type { ClientServerStats } from './contracts.js';
import { KeyedBuckets, TokenBucket } from './rate-limit.js';
import { addressKey } from './address-key.js';
import { listenWs, sameTlsMaterial, type TlsMaterial, type WsListener } from './tls.js';
import { isRequestError, parseRequest } from '../protocol/validate.js';
import { closeWithin, guarded, rawBytes } from './ws-util.js';
import { RefusalLog } from './refusal-log.js';
import { browserPolicy, type BrowserPolicy } from './browser-guard.js';

export interface ClientServerOptions {
  readonly host: string;
  /** 0 picks a free port; address() tells which. */
  readonly port: number;
  readonly logger: Logger;
  /** Called once per accepted connection, before any of its requests arrive. */
  readonly onConnection: (conn: ClientConnection) => void;
  /** Largest frame accepted from a client. Default DEFAULT_MAX_FRAME_BYTES (1 MiB). */
  readonly maxFrameBytes?: number;
  /** A client with more than this queued and unread is disconnected. Default 16 MiB. */
  readonly maxBufferedBytes?: number;
  /** Serve wss:// with these certificates; plain ws when absent. */
  readonly tls?: TlsMaterial;
  /** Per-connection token bucket; 0 or absent = unlimited. */
  readonly requestsPerSecond?: number;
  /** Bucket size; default max(requestsPerSecond, 1). */
  readonly requestBurst?: number;
  /** A token bucket per client address (addressKey), shared by its connections and kept
   *  across reconnects, and by the HTTP API's requests (takeAddressToken); 0 or absent = none. */
  readonly requestsPerSecondPerAddress?: number;
  readonly requestBurstPerAddress?: number;
  /** Connections open at once from one remote address; more are closed with 1013. Default unlimited. */
  readonly maxConnectionsPerAddress?: number;
  /** Limits of a connection until ClientConnection.authenticated() is called. Absent: every
   *  connection counts as authenticated from the start. */
  readonly preAuth?: PreAuthLimits;
  /** Plain HTTP requests on the same port (the HTTP/JSON API); without it they get 426. */
  readonly onHttpRequest?: (req: IncomingMessage, res: ServerResponse) => void;
  /** What web browsers may do here (browser-guard.ts). Default: no page of any origin, and
   *  requests must name `host` (or an IP address, or localhost on a loopback bind). */
  readonly browsers?: BrowserPolicy;
}

/** What a connection may do before it has authenticated. */
export interface PreAuthLimits {
  /** Largest frame: FRAME_TOO_LARGE, then close 1009. */
  readonly maxFrameBytes: number;
  /** Bytes read from the socket in all; more cut it. */
  readonly maxBytes: number;
  /** Time to authenticate; then close 1008 HELLO_TIMEOUT. */
  readonly deadlineMs: number;
}

export const DEFAULT_PRE_AUTH: PreAuthLimits = { maxFrameBytes: 4 * 1024, maxBytes: 64 * 1024, deadlineMs: 10_000 };

export interface ClientConnectionEvents {
  request: [req: Request];
  close: [code: number, reason: string];
}


const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** ws is allowed somewhat more than our limit, so that an oversize frame can still be read
 *  for its id and answered; beyond this ws itself closes the connection with 1009. */
const HARD_LIMIT_FACTOR = 2;
/** TCP connections per address beyond maxConnectionsPerAddress that are still accepted
 *  (and told 1013 once upgraded); more are destroyed on arrival. */
const SOCKET_SLACK_PER_ADDRESS = 16;
/** How long a close handshake may take before the socket is cut. */
const CLOSE_GRACE_MS = 2000;
/** A streamed answer (sendStreamed) leaves in websocket fragments of about this size, the
 *  next once less than STREAM_LOW_WATER_BYTES is queued for the client... */
const STREAM_PIECE_BYTES = 64 << 10;
const STREAM_LOW_WATER_BYTES = 256 << 10;
/** ...and a client that takes longer than this to make room is cut. */
export const STREAM_STALL_MS = 10_000;

/** The bytes of an event, encoded once however many connections it goes to (the same event
 *  object is pushed to every subscriber). */
const encodedEvents = new WeakMap<object, Uint8Array>();

function encodeServerFrame(frame: ServerFrame): Uint8Array {
  if (!('event' in frame)) return encodeFrame(frame);
  let bytes = encodedEvents.get(frame);
  if (!bytes) encodedEvents.set(frame, (bytes = encodeFrame(frame)));
  return bytes;
}

/** One client's connection. Listen to 'request' and 'close'; answer with send(). */
export class ClientConnection extends EventEmitter<ClientConnectionEvents> implements ClientConn {
  private closed = false;
  private corked = false;
  /** While a streamed answer is being sent: the frames sent meanwhile, which must not fall
   *  between its fragments, and their bytes. Null when nothing is being streamed. */
  private held: { frames: Uint8Array[]; bytes: number } | null = null;
  /** The streamed answers still to send, in order. */
  private streams: Promise<void> = Promise.resolve();
  private readonly bucket: TokenBucket | null;
  /** Until authenticated(): the limits in force, the bytes read so far, the deadline. */
  private preAuth: { readonly limits: PreAuthLimits; received: number; readonly timer: NodeJS.Timeout; readonly onData: (chunk: Buffer) => void } | null = null;

  /** @internal constructed by ClientServer */
  constructor(
    readonly id: number,
    readonly remoteAddress: string,
    private readonly ws: WebSocket,
    private readonly server: ClientServerInternals,
    private readonly socket: Duplex,
  ) {
    super();
    const { requestsPerSecond, requestBurst } = server;
    this.bucket = requestsPerSecond > 0 ? new TokenBucket(requestsPerSecond, requestBurst, () => performance.now()) : null;
    if (server.preAuth) this.startPreAuth(server.preAuth);
  }

  /** The connection has authenticated: the pre-authentication limits no longer apply. */
  authenticated(): void {
    const p = this.preAuth;
    if (!p) return;
    this.preAuth = null;
    clearTimeout(p.timer);
    this.socket.off('data', p.onData);
  }

  private startPreAuth(limits: PreAuthLimits): void {
    // Counted on the stream, not per message: ws would otherwise buffer a whole large frame
    // (up to twice maxFrameBytes) before anything here could refuse it.
    const onData = (chunk: Buffer): void => {
      const p = this.preAuth;
      if (!p) return;
      p.received += chunk.length;
      if (p.received > limits.maxBytes) this.cutBeforeAuth(`sent over ${limits.maxBytes} bytes before authenticating`);
    };
    const timer = setTimeout(() => {
      this.server.stats.preAuthCuts += 1;
      this.server.refusals.helloTimeout.refuse(this.remoteAddress, { conn: this.id, deadlineMs: limits.deadlineMs });
      closeGracefully(this.ws, CLOSE_CODES.POLICY_VIOLATION, `HELLO_TIMEOUT: say hello with a valid token within ${limits.deadlineMs} ms`);
    }, limits.deadlineMs);
    timer.unref();
    this.preAuth = { limits, received: 0, timer, onData };
    this.socket.on('data', onData);
  }

  private cutBeforeAuth(why: string): void {
    if (this.closed) return;
    this.server.stats.preAuthCuts += 1;
    this.server.refusals.preAuthCut.refuse(this.remoteAddress, { conn: this.id, why });
    this.authenticated(); // stop counting; the socket is going
    this.ws.terminate();
  }

  get isOpen(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  /** Bytes queued for this client and not yet written to the network. */
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  /**
   * Send a response or event. False when the connection is gone, or when the client had
   * fallen so far behind that it was disconnected.
   */
  send(frame: ServerFrame): boolean {
    if (!this.isOpen) return false;
    let bytes: Uint8Array;
    try {
      bytes = encodeServerFrame(frame);
    } catch (err) {
      this.server.log.error({ err, conn: this.id }, 'cannot encode a server frame');
      return false;
    }
    const held = this.held;
    if (held) {
      held.frames.push(bytes);
      held.bytes += bytes.length;
      return this.withinBound(held.bytes);
    }
    this.coalesce();
    this.ws.send(bytes, { binary: true });
    return this.withinBound(0);
  }

  /**
   * Send one response whose encoding may be large (a watch's first read: up to 1000 values
   * of 64 KiB) without building it: it is encoded a piece at a time and sent as the
   * fragments of one websocket message, each once the previous have (nearly) left, so the
   * node holds about one piece of it. Frames sent meanwhile wait behind it (within
   * maxBufferedBytes); a client that does not make room within STREAM_STALL_MS is cut.
   */
  sendStreamed(frame: ServerFrame): void {
    // Started at once when nothing streams, so that what is sent after it waits behind it.
    this.streams = this.held === null ? this.stream(frame) : this.streams.then(() => this.stream(frame));
  }

  private async stream(frame: ServerFrame): Promise<void> {
    if (!this.isOpen) return;
    this.held = { frames: [], bytes: 0 };
    try {
      const parts = encodeFrameParts(frame, STREAM_PIECE_BYTES);
      let next = parts.next();
      while (!next.done) {
        const piece = next.value;
        next = parts.next();
        // A turn per piece: a client that keeps up takes each at once, and the answer
        // must not be encoded in one turn either.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (!(await this.roomFor(STREAM_LOW_WATER_BYTES))) return;
        this.ws.send(piece, { binary: true, fin: next.done === true });
      }
    } catch (err) {
      this.server.log.error({ err, conn: this.id }, 'cannot encode a server frame');
      this.ws.terminate();
    } finally {
      const held = this.held;
      this.held = null;
      for (const bytes of held?.frames ?? []) if (this.isOpen) this.ws.send(bytes, { binary: true });
    }
  }

  /** Resolves true once less than `bytes` is queued for the client; false when it closed
   *  or was cut for not making room within STREAM_STALL_MS. */
  private roomFor(bytes: number): Promise<boolean> {
    if (!this.isOpen) return Promise.resolve(false);
    if (this.ws.bufferedAmount < bytes) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.socket.off('drain', onDrain);
        this.ws.off('close', onClose);
        if (!ok && this.isOpen) this.cutSlowConsumer();
        resolve(ok && this.isOpen);
      };
      const onDrain = (): void => done(true);
      const onClose = (): void => done(false);
      const timer = setTimeout(() => done(false), STREAM_STALL_MS);
      this.socket.on('drain', onDrain);
      this.ws.on('close', onClose);
    });
  }

  /** False (and the socket cut) when more than maxBufferedBytes would wait for the client. */
  private withinBound(heldBytes: number): boolean {
    if (this.ws.bufferedAmount + heldBytes <= this.server.maxBufferedBytes) return true;
    // A client that does not read would make the node hold its responses forever. A close
    // frame would sit behind the unread data, so the socket is cut.
    this.cutSlowConsumer();
    return false;
  }

  private cutSlowConsumer(): void {
    this.server.refusals.slowConsumer.refuse(this.remoteAddress, { conn: this.id, buffered: this.ws.bufferedAmount });
    this.server.stats.slowConsumerDisconnects += 1;
    this.ws.terminate();
  }

  /** Frames sent during one turn of the event loop leave in one write: a connection that
   *  carries many sessions (a pool, a proxy) gets the answers of a turn in one syscall
   *  rather than one each, and the write happens when the turn's work is done anyway. */
  private coalesce(): void {
    if (this.corked) return;
    this.corked = true;
    this.socket.cork();
    setImmediate(() => {
      this.corked = false;
      this.socket.uncork();
    });
  }

  close(code: number = CLOSE_CODES.GOING_AWAY, reason = ''): void {
    if (this.closed) return;
    closeGracefully(this.ws, code, reason);
  }

  /** @internal */
  handleMessage(data: RawData, isBinary: boolean): void {
    if (!this.isOpen) return; // closing: what the client still sends is not served
    const s = this.server;
    if (!isBinary) {
      s.stats.badFrameCloses += 1;
      this.closeForBadFrame(CLOSE_CODES.UNSUPPORTED_DATA, 'BAD_FRAME: binary frames only');
      return;
    }
    const bytes = rawBytes(data);
    const limit = this.preAuth ? Math.min(this.preAuth.limits.maxFrameBytes, s.maxFrameBytes) : s.maxFrameBytes;
    if (bytes.length > limit) {
      s.stats.oversizeFrames += 1;
      const id = peekRequestId(bytes);
      s.refusals.oversize.refuse(this.remoteAddress, { conn: this.id, bytes: bytes.length, limit, authenticated: !this.preAuth });
      const before = this.preAuth ? ' before hello' : '';
      if (id !== undefined) this.sendError(id, 'FRAME_TOO_LARGE', `frame of ${bytes.length} bytes exceeds the limit of ${limit}${before}`);
      this.closeForBadFrame(CLOSE_CODES.FRAME_TOO_LARGE, 'FRAME_TOO_LARGE');
      return;
    }
    // Every frame costs a token, valid or not: decoding and validating are work too. The
    // address's bucket too: a client that reconnects gets a new connection's bucket, not a
    // new address's.
    const connectionOk = !this.bucket || this.bucket.take();
    if (!connectionOk || !s.takeAddressToken(this.remoteAddress)) {
      s.stats.rateLimited += 1;
      const id = peekRequestId(bytes);
      const where = connectionOk ? 'from this address (limits.requestsPerSecondPerAddress)' : `than ${s.requestsPerSecond} on this connection`;
      if (id !== undefined) this.sendError(id, 'RATE_LIMITED', `more requests per second ${where}; back off and retry`);
      else this.closeForBadFrame(CLOSE_CODES.BAD_FRAME, 'BAD_FRAME: no usable request id');
      return;
    }
    let frame: unknown;
    try {
      frame = decodeFrame(bytes);
    } catch (err) {
      s.stats.badFrameCloses += 1;
      const reason = err instanceof FrameError ? err.message : 'undecodable frame';
      this.closeForBadFrame(CLOSE_CODES.BAD_FRAME, `BAD_FRAME: ${reason}`);
      return;
    }
    const parsed = parseRequest(frame);
    if (isRequestError(parsed)) {
      if (parsed.id === undefined) {
        s.stats.badFrameCloses += 1;
        this.closeForBadFrame(CLOSE_CODES.BAD_FRAME, `BAD_FRAME: ${parsed.error.message}`);
      } else {
        s.stats.invalidRequests += 1;
        this.send({ id: parsed.id, ok: false, error: parsed.error });
      }
      return;
    }
    s.stats.requests += 1;
    try {
      this.emit('request', parsed);
    } catch (err) {
      // The request handler's bug; answer so the client does not wait forever.
      s.log.error({ err, conn: this.id, op: parsed.op }, 'client request handler threw');
      this.sendError(parsed.id, 'INTERNAL', 'internal error');
    }
  }

  /** @internal */
  handleClose(code: number, reason: string): void {
    if (this.closed) return;
    this.authenticated(); // clears the deadline timer
    this.closed = true;
    try {
      this.emit('close', code, reason);
    } catch (err) {
      this.server.log.error({ err, conn: this.id }, 'client close handler threw');
    }
  }

  private sendError(id: number, code: ErrorCode, message: string): void {
    this.send({ id, ok: false, error: { code, message } });
  }

  private closeForBadFrame(code: number, reason: string): void {
    this.server.refusals.badFrame.refuse(this.remoteAddress, { conn: this.id, code, reason });
    closeGracefully(this.ws, code, reason);
  }
}

/** Refusals of what clients send, each kind logged at a bounded rate (refusal-log.ts). */
interface ClientRefusals {
  readonly helloTimeout: RefusalLog;
  readonly preAuthCut: RefusalLog;
  readonly oversize: RefusalLog;
  readonly badFrame: RefusalLog;
  readonly socketError: RefusalLog;
  readonly slowConsumer: RefusalLog;
  readonly tooMany: RefusalLog;
}

function clientRefusals(log: Logger): ClientRefusals {
  const info = { level: 'info' } as const;
  return {
    helloTimeout: new RefusalLog(log, 'client did not authenticate in time; closing', 'client connections that did not authenticate in time', info),
    preAuthCut: new RefusalLog(log, 'cutting an unauthenticated client connection', 'unauthenticated client connections cut', info),
    oversize: new RefusalLog(log, 'client frame too large', 'client frames too large', info),
    badFrame: new RefusalLog(log, 'closing client connection', 'client connections closed for bad frames', info),
    socketError: new RefusalLog(log, 'client socket error', 'client socket errors', info),
    slowConsumer: new RefusalLog(log, 'client does not read its responses; disconnecting', 'client connections cut for not reading their responses'),
    tooMany: new RefusalLog(log, 'too many client connections from one address; refusing', 'client connections refused (too many from one address)'),
  };
}

/** What a connection needs from its server. */
interface ClientServerInternals {
  readonly log: Logger;
  readonly refusals: ClientRefusals;
  readonly maxFrameBytes: number;
  readonly maxBufferedBytes: number;
  readonly requestsPerSecond: number;
  readonly requestBurst: number;
  readonly preAuth: PreAuthLimits | null;
  readonly stats: ClientServerStats;
  /** Takes a token of `remote`'s address bucket; true when there is none. */
  takeAddressToken(remote: string): boolean;
}

export class ClientServer implements ClientListener {
  private listener: WsListener | null = null;
  private readonly connections = new Map<number, { conn: ClientConnection; ws: WebSocket }>();
  /** Open connections per remote address. */
  private readonly perAddress = new Map<string, number>();
  private nextId = 1;
  private readonly internals: ClientServerInternals;
  private readonly maxConnectionsPerAddress: number;
  private readonly coolOff = new AddressCoolOff();

  constructor(private options: ClientServerOptions) {
    const requestsPerSecond = options.requestsPerSecond ?? 0;
    const log = options.logger.child({ component: 'client-server' });
    const perAddress = options.requestsPerSecondPerAddress ?? 0;
    const addressBuckets = perAddress > 0 ? new KeyedBuckets(perAddress, options.requestBurstPerAddress ?? perAddress, () => performance.now()) : null;
    this.internals = {
      takeAddressToken: (remote) => addressBuckets === null || addressBuckets.take(addressKey(remote)),
      log,
      refusals: clientRefusals(log),
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
      requestsPerSecond,
      requestBurst: options.requestBurst ?? Math.max(1, requestsPerSecond),
      preAuth: options.preAuth ?? null,
      stats: zeroClientServerStats(),
    };
    this.maxConnectionsPerAddress = options.maxConnectionsPerAddress ?? Infinity;
  }

  async start(): Promise<{ host: string; port: number }> {
    if (this.listener) throw new Error('ClientServer already started');
    this.listener = await listenWs(
      {
        host: this.options.host,
        port: this.options.port,
        ...(this.options.tls ? { tls: this.options.tls } : {}),
        maxPayload: this.internals.maxFrameBytes * HARD_LIMIT_FACTOR,
        logger: this.internals.log,
        what: 'client',
        ...(this.options.onHttpRequest ? { onHttpRequest: this.options.onHttpRequest } : {}),
        // Raw TCP connections count too (they are cut after HTTP_HEADERS_TIMEOUT_MS if they
        // never upgrade); the slack lets an upgrade over the websocket cap be told 1013.
        maxSocketsPerAddress: this.maxConnectionsPerAddress + SOCKET_SLACK_PER_ADDRESS,
        coolOff: this.coolOff,
        browsers: this.options.browsers ?? browserPolicy({ ownHost: this.options.host }),
      },
      (ws, req) => this.accept(ws, req.socket),
    );
    return this.address();
  }

  address(): { host: string; port: number } {
    if (!this.listener) throw new Error('ClientServer is not listening');
    return this.listener.address();
  }

  /** New certificates (a config reload) for the connections accepted from now on. */
  setTls(tls: TlsMaterial): boolean {
    if (!this.listener) throw new Error('ClientServer is not listening');
    if (this.options.tls && sameTlsMaterial(tls, this.options.tls)) return false;
    this.listener.setTls(tls);
    this.options = { ...this.options, tls };
    return true;
  }

  connectionCount(): number {
    return this.connections.size;
  }

  stats(): ClientServerStats {
    return { ...this.internals.stats };
  }

  /** Close every connection (1001) and stop listening. */
  async stop(): Promise<void> {
    const listener = this.listener;
    if (!listener) return;
    this.listener = null;
    const closing = [...this.connections.values()].map(
      ({ ws }) => new Promise<void>((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once('close', () => resolve());
        closeGracefully(ws, CLOSE_CODES.GOING_AWAY, 'node stopping');
      }),
    );
    await Promise.all(closing);
    await listener.close();
    for (const r of Object.values(this.internals.refusals)) r.close();
  }

  private accept(ws: WebSocket, socket: Duplex & { readonly remoteAddress?: string | undefined }): void {
    const remote = socket.remoteAddress ?? 'unknown';
    if (!this.listener) {
      ws.terminate();
      return;
    }
    const open = this.perAddress.get(remote) ?? 0;
    if (open >= this.maxConnectionsPerAddress) {
      this.refuseConnection(ws, remote);
      return;
    }
    this.perAddress.set(remote, open + 1);
    const conn = new ClientConnection(this.nextId++, remote, ws, this.internals, socket);
    this.connections.set(conn.id, { conn, ws });
    this.internals.stats.connections += 1;
    ws.on('message', guarded(ws, this.internals.log, 'client connection', (data: RawData, isBinary: boolean) => conn.handleMessage(data, isBinary)));
    ws.on('error', (err) => this.internals.refusals.socketError.refuse(remote, { conn: conn.id, err: err.message }));
    ws.on('close', (code, reason) => {
      this.connections.delete(conn.id);
      this.releaseAddress(remote);
      conn.handleClose(code, reason.toString());
    });
    try {
      this.options.onConnection(conn);
    } catch (err) {
      this.internals.log.error({ err, conn: conn.id }, 'onConnection handler threw; closing the connection');
      closeGracefully(ws, 1011, 'internal error');
    }
  }

  /** Takes one token of `remote`'s address bucket (the HTTP API's requests count with the
   *  address's websocket frames); false when it is empty. */
  takeAddressToken(remote: string): boolean {
    return this.internals.takeAddressToken(remote);
  }

  /** New connections from `remote` are destroyed on arrival for the next `ms` (the HTTP
   *  API's answer to a client pipelining past its bound; see AddressCoolOff). */
  coolOffAddress(remote: string, ms: number): void {
    this.coolOff.coolOff(remote, ms);
  }

  /**
   * Count one long-lived HTTP request from `remote` (an event stream, a long poll) as a
   * connection of its address, with its websockets, against maxConnectionsPerAddress: HTTP
   * keep-alive and pipelining let one socket hold many, so sockets alone do not bound them.
   * Returns its release (idempotent), or null when the address has no room.
   */
  holdAddressSlot(remote: string): (() => void) | null {
    const open = this.perAddress.get(remote) ?? 0;
    if (open >= this.maxConnectionsPerAddress) {
      this.internals.stats.refusedConnections += 1;
      return null;
    }
    this.perAddress.set(remote, open + 1);
    let held = true;
    return () => {
      if (held) this.releaseAddress(remote);
      held = false;
    };
  }

  private releaseAddress(remote: string): void {
    const left = (this.perAddress.get(remote) ?? 1) - 1;
    if (left > 0) this.perAddress.set(remote, left);
    else this.perAddress.delete(remote);
  }

  private refuseConnection(ws: WebSocket, remote: string): void {
    this.internals.stats.refusedConnections += 1;
    this.internals.refusals.tooMany.refuse(remote, { limit: this.maxConnectionsPerAddress, refusedSoFar: this.internals.stats.refusedConnections });
    ws.on('error', () => {}); // the client may vanish before the close handshake ends
    closeGracefully(ws, CLOSE_CODES.TRY_AGAIN_LATER, `TOO_MANY_CONNECTIONS: at most ${this.maxConnectionsPerAddress} from one address`);
  }
}

/** Close with a code the client can read; cut the socket if the close handshake stalls
 *  (a client that stopped reading never answers it). */
function closeGracefully(ws: WebSocket, code: number, reason: string): void {
  if (ws.readyState === WebSocket.CLOSED || ws.readyState === WebSocket.CLOSING) return;
  closeWithin(ws, code, reason, CLOSE_GRACE_MS);
}
