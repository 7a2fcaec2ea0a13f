// Links between the nodes of a cluster over ws: one authenticated socket per pair of nodes,
// used in both directions. The node whose id sorts first dials; the other accepts. Raft
// messages queued during one event-loop turn leave as ONE frame per peer; Raft tolerates
// loss, so messages to an unreachable or congested peer are dropped (and counted) rather
// than buffered without bound. A second channel on the same socket carries application
// payloads (client requests a follower forwards to the leader).
//
// Frames (msgpack maps): {k:'r', m: Message[]} Raft, {k:'a', p: payload} application, and
// the handshake frames of peer-handshake.ts before a link is trusted.
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import type { Message, NodeId } from '../raft/types.js';
import { decodeFrame, encodeFrame } from './codec.js';
import { PeerAcceptor } from './peer-accept.js';
import { FRAME_TAG_BYTES, FrameAuth, type LinkNonces } from './peer-frames.js';
import { PEER_PROTOCOL_VERSION, acceptorMac, dialerMac, macsEqual, newNonce, parseHello, parseWelcome } from './peer-handshake.js';
import { parseRaftMessage } from './raft-message.js';
import { dialerTlsOptions, isTlsFailure, listenWs, type TlsMaterial, type WsListener } from './tls.js';
import { closeWithin, guarded, rawBytes } from './ws-util.js';

export interface PeerTransportOptions {
  readonly clusterId: string;
  readonly selfId: NodeId;
  /** The cluster secret; it never leaves this process. */
  readonly secret: string;
  readonly listenHost: string;
  /** 0 picks a free port; address() tells which. */
  readonly listenPort: number;
  /** Every other member and its peer URL (ws://host:port). */
  readonly peers: ReadonlyMap<NodeId, string>;
  readonly logger: Logger;
  /** Largest frame sent or accepted; bigger incoming frames close the link. Default 16 MiB. */
  readonly maxFrameBytes?: number;
  /** Raft messages are dropped while a socket has more than this unsent. Default 8 MiB. */
  readonly maxBufferedBytes?: number;
  /** A dial or accept that is not authenticated within this is abandoned. Default 5 s. */
  readonly handshakeTimeoutMs?: number;
  /** ws ping interval; a link silent for 5 intervals is dropped. Default 1 s. */
  readonly pingIntervalMs?: number;
  /** Reconnect backoff: doubles from min to max, with jitter. Defaults 50 ms and 2 s. */
  readonly backoffMinMs?: number;
  readonly backoffMaxMs?: number;
  /** wss:// for peer links: listen with these certificates and dial trusting `ca`,
   *  presenting `cert` (mutual TLS when the other side requires client certificates). */
  readonly tls?: TlsMaterial;
  /** Inbound sockets still in the handshake at once; more are cut. Default 64. */
  readonly maxPendingHandshakes?: number;
  /** Of those, at most this many from one remote address. Default 8. */
  readonly maxPendingPerAddress?: number;
  /** Bytes a socket may send before its handshake completes; more cut it. Default 16 KiB. */
  readonly maxHandshakeBytes?: number;
  /** A refused or stopping socket that does not finish its close handshake within this is
   *  cut. Default 1 s. */
  readonly closeGraceMs?: number;
}

export interface PeerTransportEvents {
  raft: [from: NodeId, msgs: Message[]];
  app: [from: NodeId, payload: unknown];
  peerUp: [id: NodeId];
  peerDown: [id: NodeId];
}

export interface PeerTransportStats {
  framesSent: number;
  framesReceived: number;
  messagesSent: number;
  messagesReceived: number;
  appSent: number;
  appReceived: number;
  bytesSent: number;
  bytesReceived: number;
  /** Raft messages dropped because the peer was not connected. */
  dropsUnconnected: number;
  /** Raft messages dropped because the peer's socket had too much unsent data. */
  dropsBackpressure: number;
  /** Raft messages dropped because one alone exceeds maxFrameBytes. */
  dropsOversize: number;
  /** Frames that could not be decoded or were not a known frame. */
  invalidFrames: number;
  /** Raft messages refused by validation. */
  invalidMessages: number;
  handshakeFailures: number;
  /** Inbound sockets cut because too many were already in the handshake. */
  handshakeOverflows: number;
  /** Links authenticated so far. */
  connects: number;
}

/** Close codes on peer links. */
const CLOSE = {
  STOPPING: 1001,
  PROTOCOL: 4000,
  SUPERSEDED: 4001,
  REMOVED: 4002,
  UNRESPONSIVE: 4003,
  REFUSED: 4401,
} as const;

const DEFAULTS = {
  maxFrameBytes: 16 * 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  handshakeTimeoutMs: 5000,
  pingIntervalMs: 1000,
  backoffMinMs: 50,
  backoffMaxMs: 2000,
  maxPendingHandshakes: 64,
  maxPendingPerAddress: 8,
  maxHandshakeBytes: 16 * 1024,
  closeGraceMs: 1000,
};

const SILENT_INTERVALS = 5;
/** Authenticated links one address may hold on top of its pending handshakes (several
 *  nodes may share a host); with them, what bounds the peer port's TCP sockets per address. */
const LINKS_PER_ADDRESS = 32;

interface Link {
  readonly peer: NodeId;
  readonly ws: WebSocket;
  /** MACs of the frames in both directions (peer-frames.ts). */
  readonly auth: FrameAuth;
  /** Monotonic time of the last frame or pong from the peer. */
  lastHeard: number;
}

interface Dialer {
  readonly peer: NodeId;
  readonly url: string;
  attempt: number;
  timer: NodeJS.Timeout | null;
  ws: WebSocket | null;
  /** Last problem logged at warn, so that a peer that stays down does not flood the log. */
  lastProblem: string | null;
  stopped: boolean;
}

export class PeerTransport extends EventEmitter<PeerTransportEvents> {
  private readonly opts: Required<Omit<PeerTransportOptions, 'peers' | 'logger' | 'tls'>>;
  private readonly tls: TlsMaterial | undefined;
  private readonly log: Logger;
  private peers = new Map<NodeId, string>();
  private server: WsListener | null = null;
  private readonly links = new Map<NodeId, Link>();
  private readonly dialers = new Map<NodeId, Dialer>();
  /** Inbound sockets until they have proven the secret (peer-accept.ts). */
  private readonly acceptor: PeerAcceptor;
  private readonly outbox = new Map<NodeId, Message[]>();
  private flushScheduled = false;
  private pingTimer: NodeJS.Timeout | null = null;
  private running = false;
  private readonly counters: PeerTransportStats = {
    framesSent: 0,
    framesReceived: 0,
    messagesSent: 0,
    messagesReceived: 0,
    appSent: 0,
    appReceived: 0,
    bytesSent: 0,
    bytesReceived: 0,
    dropsUnconnected: 0,
    dropsBackpressure: 0,
    dropsOversize: 0,
    invalidFrames: 0,
    invalidMessages: 0,
    handshakeFailures: 0,
    handshakeOverflows: 0,
    connects: 0,
  };

  constructor(options: PeerTransportOptions) {
    super();
    this.opts = {
      clusterId: options.clusterId,
      selfId: options.selfId,
      secret: options.secret,
      listenHost: options.listenHost,
      listenPort: options.listenPort,
      maxFrameBytes: options.maxFrameBytes ?? DEFAULTS.maxFrameBytes,
      maxBufferedBytes: options.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs,
      pingIntervalMs: options.pingIntervalMs ?? DEFAULTS.pingIntervalMs,
      backoffMinMs: options.backoffMinMs ?? DEFAULTS.backoffMinMs,
      backoffMaxMs: options.backoffMaxMs ?? DEFAULTS.backoffMaxMs,
      maxPendingHandshakes: options.maxPendingHandshakes ?? DEFAULTS.maxPendingHandshakes,
      maxPendingPerAddress: options.maxPendingPerAddress ?? DEFAULTS.maxPendingPerAddress,
      maxHandshakeBytes: options.maxHandshakeBytes ?? DEFAULTS.maxHandshakeBytes,
      closeGraceMs: options.closeGraceMs ?? DEFAULTS.closeGraceMs,
    };
    this.tls = options.tls;
    this.log = options.logger.child({ component: 'peer-transport', node: options.selfId });
    this.peers = withoutSelf(options.peers, options.selfId);
    const o = this.opts;
    this.acceptor = new PeerAcceptor({
      clusterId: o.clusterId,
      selfId: o.selfId,
      secret: o.secret,
      handshakeTimeoutMs: o.handshakeTimeoutMs,
      maxPendingHandshakes: o.maxPendingHandshakes,
      maxPendingPerAddress: o.maxPendingPerAddress,
      maxHandshakeBytes: o.maxHandshakeBytes,
      refusalGraceMs: o.closeGraceMs,
      refusedCode: CLOSE.REFUSED,
      log: this.log,
      stats: this.counters,
      expects: (from) => this.peers.has(from),
      onAuthenticated: (peer, ws, nonces) => this.linkUp(peer, ws, 'accepted', nonces),
    });
  }

  /** Listen for peers and start dialing the ones this node dials. */
  async start(): Promise<{ host: string; port: number }> {
    if (this.running) throw new Error('PeerTransport already started');
    this.server = await listenWs(
      {
        host: this.opts.listenHost,
        port: this.opts.listenPort,
        ...(this.tls ? { tls: this.tls } : {}),
        maxPayload: this.opts.maxFrameBytes,
        logger: this.log,
        what: 'peer',
        maxSocketsPerAddress: this.opts.maxPendingPerAddress + LINKS_PER_ADDRESS,
      },
      (ws, req) => {
        if (this.running) this.acceptor.admit(ws, req.socket, req.socket.remoteAddress ?? 'unknown');
        else ws.terminate();
      },
    );
    this.running = true;
    this.pingTimer = setInterval(() => this.checkLiveness(), this.opts.pingIntervalMs);
    this.pingTimer.unref();
    this.reconcileDialers();
    return this.address();
  }

  address(): { host: string; port: number } {
    if (!this.server) throw new Error('PeerTransport is not listening');
    return this.server.address();
  }

  /** Close every link, stop dialing and stop listening. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    this.outbox.clear();
    const sockets: WebSocket[] = this.acceptor.pendingSockets();
    for (const d of this.dialers.values()) {
      this.stopDialer(d);
      if (d.ws) sockets.push(d.ws);
    }
    this.dialers.clear();
    for (const link of this.links.values()) sockets.push(link.ws);
    const ups = [...this.links.keys()];
    this.links.clear();
    for (const peer of ups) this.emitSafely('peerDown', peer);
    await closeAll(sockets, CLOSE.STOPPING, 'node stopping');
    const server = this.server;
    this.server = null;
    await server?.close();
  }

  /** Membership changed: drop links to removed members, dial new ones, follow URL changes. */
  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    const previous = this.peers;
    this.peers = withoutSelf(peers, this.opts.selfId);
    for (const [peer, link] of this.links) {
      const url = this.peers.get(peer);
      if (url === undefined) {
        this.log.info({ peer }, 'peer removed from membership; closing its link');
        link.ws.close(CLOSE.REMOVED, 'removed from membership');
      } else if (this.dials(peer) && url !== previous.get(peer)) {
        this.log.info({ peer, url }, 'peer URL changed; reconnecting');
        link.ws.close(CLOSE.REMOVED, 'peer URL changed');
      }
    }
    this.reconcileDialers();
  }

  /** Queue Raft messages for `to`; everything queued in one turn leaves as one frame. */
  send(to: NodeId, msgs: readonly Message[]): void {
    if (msgs.length === 0) return;
    if (!this.links.has(to)) {
      this.counters.dropsUnconnected += msgs.length;
      return;
    }
    let queue = this.outbox.get(to);
    if (!queue) this.outbox.set(to, (queue = []));
    for (const m of msgs) queue.push(m);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Send an application payload now. False when it could not be handed to the socket
   *  (not connected, congested, or too large); true does not mean it arrived. */
  sendApp(to: NodeId, payload: unknown): boolean {
    const link = this.links.get(to);
    if (!link || link.ws.readyState !== WebSocket.OPEN) return false;
    if (link.ws.bufferedAmount > this.opts.maxBufferedBytes) return false;
    let frame: Uint8Array;
    try {
      frame = encodeFrame({ k: 'a', p: payload });
    } catch (err) {
      this.log.error({ err, peer: to }, 'cannot encode application payload');
      return false;
    }
    if (frame.length + FRAME_TAG_BYTES > this.opts.maxFrameBytes) {
      this.log.warn({ peer: to, bytes: frame.length }, 'application payload exceeds maxFrameBytes; not sent');
      return false;
    }
    link.ws.send(link.auth.seal(frame), { binary: true });
    this.counters.appSent += 1;
    this.counters.framesSent += 1;
    this.counters.bytesSent += frame.length;
    return true;
  }

  /** Peers with an authenticated link right now. */
  connectedPeers(): NodeId[] {
    return [...this.links.keys()];
  }

  stats(): PeerTransportStats {
    return { ...this.counters };
  }

  // ---- sending -----------------------------------------------------------------------------

  private flush(): void {
    this.flushScheduled = false;
    for (const [peer, msgs] of this.outbox) {
      const link = this.links.get(peer);
      if (!link || link.ws.readyState !== WebSocket.OPEN) this.counters.dropsUnconnected += msgs.length;
      else this.sendRaft(link, msgs);
    }
    this.outbox.clear();
  }

  private sendRaft(link: Link, msgs: Message[]): void {
    if (link.ws.bufferedAmount > this.opts.maxBufferedBytes) {
      this.counters.dropsBackpressure += msgs.length;
      return;
    }
    const frame = encodeFrame({ k: 'r', m: msgs });
    if (frame.length + FRAME_TAG_BYTES > this.opts.maxFrameBytes) {
      if (msgs.length === 1) {
        this.counters.dropsOversize += 1;
        this.log.error({ peer: link.peer, type: msgs[0]!.type, bytes: frame.length }, 'a Raft message exceeds maxFrameBytes; dropped');
        return;
      }
      // Many messages in one turn: split the batch rather than lose it.
      const half = Math.ceil(msgs.length / 2);
      this.sendRaft(link, msgs.slice(0, half));
      this.sendRaft(link, msgs.slice(half));
      return;
    }
    link.ws.send(link.auth.seal(frame), { binary: true });
    this.counters.framesSent += 1;
    this.counters.messagesSent += msgs.length;
    this.counters.bytesSent += frame.length;
  }

  // ---- dialing -----------------------------------------------------------------------------

  /** The node whose id sorts first dials; both ends agree without talking. */
  private dials(peer: NodeId): boolean {
    return this.opts.selfId < peer;
  }

  private reconcileDialers(): void {
    if (!this.running) return;
    for (const d of [...this.dialers.values()]) {
      if (this.peers.get(d.peer) !== d.url) {
        this.stopDialer(d);
        d.ws?.close(CLOSE.REMOVED, 'peer removed or moved');
        this.dialers.delete(d.peer);
      }
    }
    for (const [peer, url] of this.peers) {
      if (!this.dials(peer) || this.dialers.has(peer)) continue;
      const d: Dialer = { peer, url, attempt: 0, timer: null, ws: null, lastProblem: null, stopped: false };
      this.dialers.set(peer, d);
      this.dial(d);
    }
  }

  private stopDialer(d: Dialer): void {
    d.stopped = true;
    if (d.timer) clearTimeout(d.timer);
    d.timer = null;
  }

  private scheduleRedial(d: Dialer): void {
    if (d.stopped || !this.running || d.timer) return;
    const ceiling = Math.min(this.opts.backoffMaxMs, this.opts.backoffMinMs * 2 ** Math.min(d.attempt, 20));
    const delay = ceiling / 2 + (Math.random() * ceiling) / 2; // jitter: peers do not redial in lockstep
    d.attempt += 1;
    d.timer = setTimeout(() => {
      d.timer = null;
      this.dial(d);
    }, delay);
    d.timer.unref();
  }

  private dialProblem(d: Dialer, problem: string, refused = false): void {
    if (refused) this.counters.handshakeFailures += 1;
    const fields = { peer: d.peer, url: d.url, reason: problem };
    // Refusals are configuration errors worth seeing each time they change; an unreachable
    // peer is routine while it restarts.
    if (problem !== d.lastProblem && refused) this.log.warn(fields, 'peer refused the link');
    else if (problem !== d.lastProblem) this.log.info(fields, 'cannot reach peer; retrying');
    else this.log.debug(fields, 'cannot reach peer; retrying');
    d.lastProblem = problem;
  }

  private dial(d: Dialer): void {
    if (d.stopped || !this.running) return;
    const { selfId, clusterId, secret } = this.opts;
    const ws = new WebSocket(d.url, {
      maxPayload: this.opts.maxFrameBytes,
      perMessageDeflate: false,
      handshakeTimeout: this.opts.handshakeTimeoutMs,
      ...dialerTlsOptions(this.tls),
    });
    d.ws = ws;
    let state: 'hello' | 'welcome' | 'ready' = 'hello';
    let ourNonce: Uint8Array | null = null;
    let acceptorNonce: Uint8Array | null = null;
    let refusedByUs = false;
    const timer = setTimeout(() => {
      this.dialProblem(d, 'handshake timed out');
      ws.terminate();
    }, this.opts.handshakeTimeoutMs);
    timer.unref();

    const refuse = (problem: string): void => {
      if (refusedByUs) return; // frames that were already in flight
      refusedByUs = true;
      this.dialProblem(d, problem, true);
      closeWithin(ws, CLOSE.REFUSED, problem, this.opts.closeGraceMs);
    };

    const onHandshake = guarded(ws, this.log, 'peer handshake', (data: RawData, isBinary: boolean) => {
      if (refusedByUs || state === 'ready') return;
      const frame = decodeHandshake(data, isBinary, this.opts.maxHandshakeBytes);
      if (state === 'hello') {
        const hello = parseHello(frame);
        if (!hello) return refuse('acceptor sent no valid hello');
        if (hello.v !== PEER_PROTOCOL_VERSION) return refuse(`acceptor speaks peer protocol ${hello.v}, not ${PEER_PROTOCOL_VERSION}`);
        ourNonce = newNonce();
        acceptorNonce = hello.nonce;
        const mac = dialerMac(secret, hello.nonce, clusterId, selfId, d.peer);
        ws.send(encodeFrame({ k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId, from: selfId, to: d.peer, nonce: ourNonce, mac }));
        state = 'welcome';
        return;
      }
      const welcome = parseWelcome(frame);
      if (!welcome) return refuse('acceptor sent no valid welcome');
      if (!macsEqual(acceptorMac(secret, ourNonce!, clusterId, d.peer, selfId), welcome.mac)) {
        return refuse('acceptor failed to prove the cluster secret (wrong secret or an impostor)');
      }
      clearTimeout(timer);
      state = 'ready';
      d.attempt = 0;
      d.lastProblem = null;
      ws.off('message', onHandshake);
      this.linkUp(d.peer, ws, 'dialed', { acceptor: acceptorNonce!, dialer: ourNonce! });
    });
    ws.on('message', onHandshake);
    ws.on('error', (err) => {
      if (state !== 'ready') this.dialProblem(d, isTlsFailure(err) ? `TLS: ${err.message}` : err.message, isTlsFailure(err));
      else this.log.warn({ peer: d.peer, err: err.message }, 'peer link error');
    });
    ws.on('close', (code, reason) => {
      clearTimeout(timer);
      if (d.ws === ws) d.ws = null;
      if (state !== 'ready' && code === CLOSE.REFUSED && !refusedByUs) this.dialProblem(d, `refused by ${d.peer}: ${reason.toString()}`, true);
      this.scheduleRedial(d);
    });
  }

  // ---- links -------------------------------------------------------------------------------

  private linkUp(peer: NodeId, ws: WebSocket, how: 'dialed' | 'accepted', nonces: LinkNonces): Link {
    const { secret, clusterId, selfId } = this.opts;
    const [dialer, acceptor] = how === 'dialed' ? [selfId, peer] : [peer, selfId];
    const auth = new FrameAuth(secret, how === 'dialed' ? 'dialer' : 'acceptor', nonces, clusterId, dialer, acceptor);
    const link: Link = { peer, ws, auth, lastHeard: performance.now() };
    ws.on('pong', () => {
      link.lastHeard = performance.now();
    });
    ws.on('message', guarded(ws, this.log, 'peer link', (data: RawData, isBinary: boolean) => this.onFrame(link, data, isBinary)));
    ws.on('close', (code, reason) => this.linkDown(peer, ws, code, reason.toString()));
    if (how === 'accepted') ws.on('error', (err) => this.log.warn({ peer, err: err.message }, 'peer link error'));
    const old = this.links.get(peer);
    this.links.set(peer, link);
    this.counters.connects += 1;
    if (old) {
      // The peer reconnected while we still held its old socket (e.g. it restarted).
      closeWithin(old.ws, CLOSE.SUPERSEDED, 'superseded by a new link', this.opts.closeGraceMs);
      this.emitSafely('peerDown', peer);
    }
    this.log.info({ peer, how }, 'peer link up');
    this.emitSafely('peerUp', peer);
    return link;
  }

  private linkDown(peer: NodeId, ws: WebSocket, code: number, reason: string): void {
    if (this.links.get(peer)?.ws !== ws) return; // superseded or already gone
    this.links.delete(peer);
    this.outbox.delete(peer);
    this.log.info({ peer, code, reason }, 'peer link down');
    this.emitSafely('peerDown', peer);
  }

  private checkLiveness(): void {
    const now = performance.now();
    const silentMs = this.opts.pingIntervalMs * SILENT_INTERVALS;
    for (const link of this.links.values()) {
      if (now - link.lastHeard > silentMs) {
        this.log.warn({ peer: link.peer, silentMs: now - link.lastHeard }, 'peer unresponsive; dropping link');
        link.ws.terminate();
      } else if (link.ws.readyState === WebSocket.OPEN) {
        link.ws.ping();
      }
    }
  }

  // ---- receiving ---------------------------------------------------------------------------

  private onFrame(link: Link, data: RawData, isBinary: boolean): void {
    const sealed = rawBytes(data);
    this.counters.framesReceived += 1;
    this.counters.bytesReceived += sealed.length;
    // Checked before anything else, so that only a holder of the secret gets a frame decoded.
    const bytes = isBinary ? link.auth.open(sealed) : null;
    if (!bytes) {
      this.counters.invalidFrames += 1;
      this.log.warn({ peer: link.peer, binary: isBinary }, 'peer frame failed its MAC (injected, replayed or reordered); closing link');
      closeWithin(link.ws, CLOSE.PROTOCOL, 'frame MAC', this.opts.closeGraceMs);
      return;
    }
    link.lastHeard = performance.now();
    let frame: unknown;
    try {
      frame = decodeFrame(bytes);
    } catch (err) {
      this.counters.invalidFrames += 1;
      this.log.warn({ peer: link.peer, reason: (err as Error).message }, 'malformed frame from peer; closing link');
      link.ws.close(CLOSE.PROTOCOL, 'malformed frame');
      return;
    }
    const kind = isRecord(frame) ? frame.k : undefined;
    if (kind === 'r' && isRecord(frame) && Array.isArray(frame.m)) {
      this.onRaftFrame(link, frame.m);
    } else if (kind === 'a' && isRecord(frame)) {
      this.counters.appReceived += 1;
      this.emitSafely('app', link.peer, frame.p);
    } else {
      // Unknown kinds are ignored, so a newer peer can add some.
      this.counters.invalidFrames += 1;
      this.log.debug({ peer: link.peer, kind: typeof kind === 'string' ? kind : typeof kind }, 'ignored unknown frame from peer');
    }
  }

  private onRaftFrame(link: Link, raw: unknown[]): void {
    const msgs: Message[] = [];
    for (const item of raw) {
      const parsed = parseRaftMessage(item, link.peer, this.opts.selfId);
      if ('error' in parsed) {
        this.counters.invalidMessages += 1;
        this.log.warn({ peer: link.peer, reason: parsed.error }, 'invalid Raft message from peer; dropped');
      } else {
        msgs.push(parsed);
      }
    }
    this.counters.messagesReceived += msgs.length;
    if (msgs.length > 0) this.emitSafely('raft', link.peer, msgs);
  }

  /** A listener's exception is the listener's bug; it must not kill the link or the node. */
  private emitSafely<K extends keyof PeerTransportEvents>(event: K, ...args: PeerTransportEvents[K]): void {
    try {
      // TypeScript cannot match a generic K against EventEmitter's conditional parameter type.
      (this.emit as (e: K, ...a: PeerTransportEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.log.error({ err, event }, 'peer transport listener threw');
    }
  }
}

function withoutSelf(peers: ReadonlyMap<NodeId, string>, self: NodeId): Map<NodeId, string> {
  const out = new Map(peers);
  out.delete(self);
  return out;
}

function isRecord(x: unknown): x is Readonly<Record<string, unknown>> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array);
}

/** A handshake frame, or undefined for anything else (text, too large, not msgpack): the
 *  frame is not decoded at all when it is larger than a handshake can be. */
function decodeHandshake(data: RawData, isBinary: boolean, maxBytes: number): unknown {
  const bytes = rawBytes(data);
  if (!isBinary || bytes.length > maxBytes) return undefined;
  try {
    return decodeFrame(bytes);
  } catch {
    return undefined;
  }
}

/** Close sockets politely, then cut those that do not finish closing promptly. */
async function closeAll(sockets: readonly WebSocket[], code: number, reason: string, graceMs = 250): Promise<void> {
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === WebSocket.CLOSED) return resolve();
          ws.once('close', () => resolve());
          closeWithin(ws, code, reason, graceMs);
        }),
    ),
  );
}
