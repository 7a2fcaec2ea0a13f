// TLS for both ports: certificate material read from files, and ws listeners over plain
// HTTP or HTTPS. A URL with wss:// means TLS on; the transport modules take a TlsMaterial
// (or none) and never read files themselves, so a missing file is one start-up error here.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { createSecureContext } from 'node:tls';
import type { AddressCoolOff } from './address-cooloff.js';
import type { Logger } from 'pino';
import { browserRefusal, type BrowserPolicy } from './browser-guard.js';
import { RefusalLog } from './refusal-log.js';
import { WebSocketServer, type ClientOptions, type WebSocket } from 'ws';

/** The files of one port's TLS, as configured. */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
  readonly ca?: string;
  readonly requireClientCert: boolean;
}

/** Certificates in memory, ready for a listener or a dialer. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Trusted CA; without it the system's roots are used. */
  readonly ca?: Buffer;
  /** Accepting side: refuse a TLS client without a certificate signed by `ca`. */
  readonly requireClientCert: boolean;
}

export class TlsFileError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'TlsFileError';
  }
}

/** Read one port's certificate files. `field` names the config section in errors. */
export function loadTlsMaterial(files: TlsFiles, field: string): TlsMaterial {
  const read = (path: string, name: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new TlsFileError(`${field}.${name}`, `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  const cert = read(files.cert, 'cert');
  const key = read(files.key, 'key');
  const ca = files.ca === undefined ? undefined : read(files.ca, 'ca');
  return { cert, key, ...(ca ? { ca } : {}), requireClientCert: files.requireClientCert };
}

/** Whether two materials hold the same certificates, key and CA, byte for byte. */
export function sameTlsMaterial(a: TlsMaterial, b: TlsMaterial): boolean {
  const same = (x: Buffer | undefined, y: Buffer | undefined): boolean => (x === undefined ? y === undefined : y !== undefined && x.equals(y));
  return same(a.cert, b.cert) && same(a.key, b.key) && same(a.ca, b.ca) && a.requireClientCert === b.requireClientCert;
}

/**
 * Why `m` would not work, or null: a certificate, key and CA that cannot make a TLS context,
 * or what checkOwnCertificate refuses (outside its validity at `now`, not the key's, or, with
 * `issuedByCa`, not signed by a CA of the `ca` file, which the peers trust). A reload checks
 * the new files with this before it replaces anything, so a renewal gone wrong leaves the node
 * on the certificates it had.
 */
export function tlsMaterialProblem(m: TlsMaterial, opts: { issuedByCa: boolean; now?: Date }): string | null {
  try {
    createSecureContext({ cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}) });
  } catch (err) {
    return `the certificate, key or CA cannot be used together (${(err as Error).message})`;
  }
  try {
    checkOwnCertificate(m, 'the certificate', { signedByCa: opts.issuedByCa, ...(opts.now ? { nowMs: opts.now.getTime() } : {}) });
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Refuses (TlsFileError) a certificate of this node's own that its peers or clients would
 * refuse: not yet valid, expired, not made for its key, or (`signedByCa`: the peer port,
 * where the other nodes check it against the same `ca`) not issued by `ca`. A node that
 * started with one said nothing; only the other side logged why it refused the link.
 */
export function checkOwnCertificate(m: TlsMaterial, field: string, o: { signedByCa: boolean; nowMs?: number }): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(m.cert);
  } catch (err) {
    throw new TlsFileError(`${field}.cert`, `is not a PEM certificate (${(err as Error).message})`);
  }
  const now = o.nowMs ?? Date.now();
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (now < from) throw new TlsFileError(`${field}.cert`, `is not valid yet: valid from ${cert.validFrom} (this machine's clock says ${new Date(now).toISOString()})`);
  if (now > to) throw new TlsFileError(`${field}.cert`, `expired on ${cert.validTo}: renew it (peers and clients refuse it)`);
  let keyMatches: boolean;
  try {
    keyMatches = cert.checkPrivateKey(createPrivateKey(m.key));
  } catch (err) {
    throw new TlsFileError(`${field}.key`, `is not a PEM private key (${(err as Error).message})`);
  }
  if (!keyMatches) throw new TlsFileError(`${field}.key`, 'is not the key of the certificate in cert');
  if (!o.signedByCa || m.ca === undefined) return;
  const cas = splitPem(m.ca).map((pem) => new X509Certificate(pem));
  if (!cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))) {
    throw new TlsFileError(`${field}.cert`, `is not signed by the CA in ${field}.ca (issuer ${cert.issuer.replace(/\n/g, ', ')}): the other nodes would refuse it`);
  }
}

/** The certificates of a PEM bundle, each as its own PEM text. */
function splitPem(pem: Buffer): string[] {
  return pem.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** ws client options that make a dialer trust `ca` and present its own certificate. */
export function dialerTlsOptions(tls: TlsMaterial | undefined): Pick<ClientOptions, 'ca' | 'cert' | 'key'> {
  if (!tls) return {};
  return { cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca } : {}) };
}

/** True for a TLS failure (an untrusted or mismatched certificate, a refused handshake):
 *  a configuration problem worth a warning, unlike a peer that is merely down. */
export function isTlsFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL|EPROTO/.test(code);
}

export interface WsListenOptions {
  readonly host: string;
  readonly port: number;
  readonly tls?: TlsMaterial;
  readonly maxPayload: number;
  readonly logger: Logger;
  /** Names the port in log lines ("client", "peer"). */
  readonly what: string;
  /** Plain HTTP requests (not upgrades) on this port; without it they are answered 426. */
  readonly onHttpRequest?: (req: IncomingMessage, res: ServerResponse) => void;
  /** TCP connections open at once from one address, upgraded or not; more are destroyed
   *  as they arrive. Default unlimited. */
  readonly maxSocketsPerAddress?: number;
  /** Addresses whose new connections are destroyed as they arrive, for a while. */
  readonly coolOff?: AddressCoolOff;
  /** What web browsers may do on this port (browser-guard.ts): requests and websocket
   *  upgrades it refuses are answered 403/421 before anything else reads them. */
  readonly browsers: BrowserPolicy;
}

/** A connection must have sent its whole HTTP request (the websocket upgrade) within these;
 *  the check runs every CHECK_INTERVAL_MS. A socket that never sends a request is cut too. */
export const HTTP_HEADERS_TIMEOUT_MS = 5_000;
export const HTTP_REQUEST_TIMEOUT_MS = 10_000;
/** An HTTP keep-alive connection idle this long after its last answer is closed (Node's
 *  default today, set here so that the bound does not move with Node). */
export const HTTP_KEEPALIVE_MS = 5_000;
const CHECK_INTERVAL_MS = 1_000;

/** Deadlines for the HTTP part of a connection (headers, request) on `server`. */
export function boundHttpTimes(server: HttpServer): void {
  server.headersTimeout = HTTP_HEADERS_TIMEOUT_MS;
  server.requestTimeout = HTTP_REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = HTTP_KEEPALIVE_MS;
}

/** Destroy connections from an address that already has `max` open. */
export function capSocketsPerAddress(server: HttpServer, max: number): void {
  if (!Number.isFinite(max)) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const remote = socket.remoteAddress ?? 'unknown';
    const n = open.get(remote) ?? 0;
    if (n >= max) {
      socket.destroy();
      return;
    }
    open.set(remote, n + 1);
    socket.once('close', () => {
      const left = (open.get(remote) ?? 1) - 1;
      if (left > 0) open.set(remote, left);
      else open.delete(remote);
    });
  });
}

/**
 * When a connection closes, Node aborts every request it parsed and has not answered with
 * an Error of its own, whose stack is captured and then formatted (stream destroy reads
 * err.stack): ~25 µs each. A client that pipelines thousands of requests and hangs up makes
 * that one long turn of the event loop (abortIncoming was 1.8 s of the leader's 7.6 s busy
 * under test/security/http-flood.test.ts). Those errors are never shown to anyone (a request
 * without a reader has nobody to tell), so they are made without a stack: the limit is 0
 * only while Node's own close handler runs (our listeners go on either side of it).
 */
export function stacklessAborts(server: HttpServer): void {
  // Hooked on a connection's first request ('connection' is the raw socket under TLS, not
  // the one Node's HTTP code listens on); upgrades have no unanswered requests to abort.
  const hooked = new WeakSet<Socket>();
  server.on('request', (req: IncomingMessage) => {
    const socket = req.socket;
    if (hooked.has(socket)) return;
    hooked.add(socket);
    let saved = Error.stackTraceLimit;
    const restore = (): void => {
      Error.stackTraceLimit = saved;
    };
    socket.prependListener('close', () => {
      saved = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      // Also after this emit, in case a listener between the two throws: stacks must not
      // stay off for the whole process.
      queueMicrotask(restore);
    });
    socket.on('close', restore);
  });
}

/** A ws server on its own HTTP(S) server; close() stops both. */
export interface WsListener {
  readonly wss: WebSocketServer;
  address(): { host: string; port: number };
  /** New certificates for the connections accepted from now on (open ones keep theirs).
   *  Throws on a listener without TLS, or when requireClientCert would change. */
  setTls(tls: TlsMaterial): void;
  close(): Promise<void>;
}

export async function listenWs(opts: WsListenOptions, onConnection: (ws: WebSocket, req: IncomingMessage) => void): Promise<WsListener> {
  const server: HttpServer = opts.tls
    ? createHttpsServer({
        cert: opts.tls.cert,
        key: opts.tls.key,
        ...(opts.tls.ca ? { ca: opts.tls.ca } : {}),
        requestCert: opts.tls.requireClientCert,
        rejectUnauthorized: opts.tls.requireClientCert,
        handshakeTimeout: HTTP_HEADERS_TIMEOUT_MS, // a TLS handshake that never finishes
        connectionsCheckingInterval: CHECK_INTERVAL_MS,
      })
    : createHttpServer({ connectionsCheckingInterval: CHECK_INTERVAL_MS });
  boundHttpTimes(server);
  capSocketsPerAddress(server, opts.maxSocketsPerAddress ?? Infinity);
  const coolOff = opts.coolOff;
  if (coolOff) server.on('connection', (socket: Socket) => void (coolOff.isCoolingOff(socket.remoteAddress ?? 'unknown') && socket.destroy()));
  stacklessAborts(server);
  const browserRefusals = new RefusalLog(opts.logger, `refused a browser's request on the ${opts.what} port`, `browser requests refused on the ${opts.what} port`);
  const tlsRefusals = new RefusalLog(opts.logger, `refused a TLS connection on the ${opts.what} port`, `TLS connections refused on the ${opts.what} port`);
  const refusedByBrowserPolicy = (req: IncomingMessage): { status: number; message: string } | null => {
    const r = browserRefusal(req, opts.browsers);
    if (r) browserRefusals.refuse(req.socket.remoteAddress ?? 'unknown', { why: r.message, upgrade: req.headers.upgrade !== undefined }, r.kind);
    return r;
  };
  const wss = new WebSocketServer({
    server,
    maxPayload: opts.maxPayload,
    perMessageDeflate: false,
    clientTracking: false,
    // A websocket from a web page (it has an Origin) or for another host is refused before
    // the upgrade: the page gets no socket to send a frame on.
    verifyClient: (info: { req: IncomingMessage }, done: (ok: boolean, status?: number, message?: string) => void) => {
      const r = refusedByBrowserPolicy(info.req);
      if (r) done(false, r.status, r.message);
      else done(true);
    },
  });
  // Without an HTTP handler only WebSocket upgrades are served; a plain request is told so.
  server.on('request', (req, res) => {
    const refused = refusedByBrowserPolicy(req);
    if (refused) {
      const body = JSON.stringify({ error: { code: 'PERMISSION_DENIED', message: refused.message } });
      res.writeHead(refused.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store', connection: 'close' });
      res.end(body);
      return;
    }
    if (!opts.onHttpRequest) {
      res.writeHead(426, { 'content-type': 'text/plain', connection: 'close' });
      res.end('this port speaks WebSocket only\n');
      return;
    }
    try {
      opts.onHttpRequest(req, res);
    } catch (err) {
      // The handler's bug: that request fails, never the process.
      opts.logger.error({ err }, `an HTTP request on the ${opts.what} port failed`);
      res.destroy();
    }
  });
  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    // Whatever goes wrong admitting one socket ends that socket, never the process.
    try {
      onConnection(ws, req);
    } catch (err) {
      opts.logger.error({ err }, `admitting a ${opts.what} connection failed; cut`);
      ws.terminate();
    }
  });
  wss.on('error', (err) => opts.logger.error({ err }, `${opts.what} listener failed`));
  server.on('tlsClientError', (err: Error, socket: Socket) => {
    // A client without an acceptable certificate, or one speaking plain ws to a wss port.
    // (A certificate from an unknown CA shows up here as a bare "socket hang up", just like a
    // client that gave up mid-handshake: the two cannot be told apart, so both are logged.)
    tlsRefusals.refuse(socket.remoteAddress ?? 'unknown', { reason: err.message });
  });
  server.on('clientError', (_err: Error, socket: Socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => opts.logger.error({ err }, `${opts.what} listener failed`));
  return {
    wss,
    setTls(tls: TlsMaterial) {
      if (!opts.tls) throw new Error(`the ${opts.what} port has no TLS to replace`);
      // Whether clients must present certificates is the server's, not the context's.
      if (tls.requireClientCert !== opts.tls.requireClientCert) throw new Error('requireClientCert cannot change while the node runs');
      (server as HttpsServer).setSecureContext({ cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca } : {}) });
    },
    address() {
      const a = server.address();
      if (!a || typeof a === 'string') throw new Error(`the ${opts.what} port is not listening`);
      return { host: a.address, port: a.port };
    },
    async close() {
      browserRefusals.close();
      tlsRefusals.close();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
