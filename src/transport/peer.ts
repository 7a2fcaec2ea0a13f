// Links between the nodes of a cluster over ws: one authenticated socket per pair of nodes,
// used in both directions. The node whose id sorts first dials (peer-dial.ts); the other
// accepts (peer-accept.ts). Raft messages queued during one synchronous pass (until the
// sender yields) leave as ONE frame per peer; Raft tolerates loss, so messages to an unreachable or congested peer are
// dropped (and counted) rather than buffered without bound. A second channel on the same
// socket carries application payloads (client requests a follower forwards to the leader).
// What a frame is, and how it is sealed and checked, is peer-link.ts.
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import type { Message, NodeId } from '../raft/types.js';
import { PeerAcceptor } from './peer-accept.js';
import { PeerDial } from './peer-dial.js';
import type { LinkNonces } from './peer-frames.js';
import { PeerSecrets } from './peer-secrets.js';
import { openLink, receiveFrame, sendApp, sendRaft, type Link, type LinkContext } from './peer-link.js';
import type { PeerNetwork } from './contracts.js';
import { CLOSE, newPeerStats, resolvePeerOptions, type PeerTransportOptions, type PeerTransportStats, type ResolvedPeerOptions } from './peer-options.js';
import { listenWs, sameTlsMaterial, type TlsMaterial, type WsListener } from './tls.js';
import { PEER_PORT_POLICY } from './browser-guard.js';
import { closeWithin, guarded } from './ws-util.js';

export type { PeerTransportOptions, PeerTransportStats } from './peer-options.js';

/** What a config reload may change of the peer links: the secrets, and the certificates (on
 *  a node with TLS; TLS itself cannot be turned on or off while it runs). */
export interface PeerCredentials {
  readonly secrets: readonly string[];
  readonly tls?: TlsMaterial;
}

export interface PeerTransportEvents {
  raft: [from: NodeId, msgs: Message[]];
  app: [from: NodeId, payload: unknown];
  peerUp: [id: NodeId];
  peerDown: [id: NodeId];
}

const SILENT_INTERVALS = 5;
/** Authenticated links one address may hold on top of its pending handshakes (several
 *  nodes may share a host); with them, what bounds the peer port's TCP sockets per address. */
const LINKS_PER_ADDRESS = 32;

export class PeerTransport extends EventEmitter<PeerTransportEvents> implements PeerNetwork {
  private readonly opts: ResolvedPeerOptions;
  /** Replaced by setCredentials; dials and handshakes read the current ones. */
  private tls: TlsMaterial | undefined;
  private secrets: PeerSecrets;
  private readonly log: Logger;
  private peers = new Map<NodeId, string>();
  private server: WsListener | null = null;
  private readonly links = new Map<NodeId, Link>();
  private readonly dialers = new Map<NodeId, PeerDial>();
  /** Inbound sockets until they have proven the secret (peer-accept.ts). */
  private readonly acceptor: PeerAcceptor;
  private readonly outbox = new Map<NodeId, Message[]>();
  private flushScheduled = false;
  private pingTimer: NodeJS.Timeout | null = null;
  private running = false;
  private readonly counters: PeerTransportStats = newPeerStats();
  /** What the link frames need: options, logger, counters. */
  private readonly frames: LinkContext;

  constructor(options: PeerTransportOptions) {
    super();
    this.opts = resolvePeerOptions(options);
    this.tls = options.tls;
    this.secrets = new PeerSecrets(options.secrets);
    this.log = options.logger.child({ component: 'peer-transport', node: options.selfId });
    this.peers = withoutSelf(options.peers, options.selfId);
    this.frames = { opts: this.opts, log: this.log, stats: this.counters };
    const o = this.opts;
    this.acceptor = new PeerAcceptor({
      clusterId: o.clusterId,
      selfId: o.selfId,
      secrets: () => this.secrets,
      handshakeTimeoutMs: o.handshakeTimeoutMs,
      maxPendingHandshakes: o.maxPendingHandshakes,
      maxPendingPerAddress: o.maxPendingPerAddress,
      maxHandshakeBytes: o.maxHandshakeBytes,
      refusalGraceMs: o.closeGraceMs,
      refusedCode: CLOSE.REFUSED,
      log: this.log,
      stats: this.counters,
      expects: (from) => this.peers.has(from),
      onAuthenticated: (peer, ws, nonces, secret) => this.linkUp(peer, ws, 'accepted', nonces, secret),
    });
  }

  /**
   * New secrets or certificates (a config reload). Links keyed by a secret no longer held end
   * at once (that is what removing a secret is for). Links this node dialed are made again
   * when it proves itself with a new first secret, and every link when the certificates
   * changed, so that what the reload put in place is used, and a peer that does not accept
   * it says so now (`peer refused the link`, on status) rather than at some later reconnect.
   * Returns what changed.
   */
  setCredentials(c: PeerCredentials): string[] {
    const next = new PeerSecrets(c.secrets);
    if ((c.tls === undefined) !== (this.tls === undefined)) throw new Error('peer TLS cannot be turned on or off while the node runs');
    const changed: string[] = [];
    const secretsChanged = next.list.join('\0') !== this.secrets.list.join('\0');
    const sendingChanged = next.sending !== this.secrets.sending;
    const tlsChanged = c.tls !== undefined && !sameTlsMaterial(c.tls, this.tls!);
    if (secretsChanged) changed.push(`secrets (${next.list.length}${sendingChanged ? ', a new first' : ''})`);
    if (tlsChanged) {
      this.server?.setTls(c.tls!);
      this.tls = c.tls;
      changed.push('peer certificates');
    }
    this.secrets = next;
    for (const link of this.links.values()) {
      const why = !next.accepts(link.secret)
        ? 'the secret of this link was removed'
        : tlsChanged
          ? 'certificates reloaded'
          : sendingChanged && link.how === 'dialed'
            ? 'this node proves a new secret'
            : null;
      if (why === null) continue;
      this.log.info({ peer: link.peer, why }, 'credentials changed; making the peer link again');
      closeWithin(link.ws, CLOSE.RELOADED, why, this.opts.closeGraceMs);
    }
    return changed;
  }

  /** Peers that refuse this node's link (its secret or certificate), with why: the dials of
   *  this node's whose last attempt was refused, and that have no link. */
  refusedLinks(): Map<NodeId, string> {
    const out = new Map<NodeId, string>();
    for (const d of this.dialers.values()) if (d.refusal !== null && !this.links.has(d.peer)) out.set(d.peer, d.refusal);
    return out;
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
        browsers: PEER_PORT_POLICY,
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
      d.stop();
      const ws = d.socket();
      if (ws) sockets.push(ws);
    }
    this.dialers.clear();
    for (const link of this.links.values()) sockets.push(link.ws);
    const ups = [...this.links.keys()];
    this.links.clear();
    for (const peer of ups) this.emitSafely('peerDown', peer);
    await closeAll(sockets, CLOSE.STOPPING, 'node stopping');
    this.acceptor.close();
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

  /**
   * Queue Raft messages for `to`; everything queued before the caller yields leaves as one
   * frame. The flush is a microtask, not a setImmediate: the driver sends a Ready's messages
   * from inside its own setImmediate callback, where a setImmediate would wait for the next
   * loop iteration (after that iteration's I/O callbacks), which put 0.08 ms at p50 (0.13 ms
   * mean) between a Ready and its frames on every hop of a commit. Frames per commit do not
   * change: a driver pass sends once per Ready and awaits its write in between. (The node
   * itself sends each pass's messages with sendNow.)
   */
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
      queueMicrotask(() => this.flush());
    }
  }

  /**
   * Send a driver pass's messages, one frame per peer, now (with anything still queued for
   * those peers ahead of them). A follower's acknowledgement is sent from the same pass that
   * then applies committed entries; left to the microtask it waited for that apply (p50
   * 0.1 ms under load, on every commit's path), sent here it leaves at once (0.01 ms).
   */
  sendNow(batches: ReadonlyMap<NodeId, readonly Message[]>): void {
    for (const [to, msgs] of batches) this.send(to, msgs);
    this.flush();
  }

  /** Send an application payload now. False when it could not be handed to the socket
   *  (not connected, congested, or too large); true does not mean it arrived. */
  sendApp(to: NodeId, payload: unknown): boolean {
    const link = this.links.get(to);
    return link !== undefined && sendApp(this.frames, link, payload);
  }

  /** Peers with an authenticated link right now. */
  connectedPeers(): NodeId[] {
    return [...this.links.keys()];
  }

  stats(): PeerTransportStats {
    return { ...this.counters };
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const [peer, msgs] of this.outbox) {
      const link = this.links.get(peer);
      if (!link || link.ws.readyState !== WebSocket.OPEN) this.counters.dropsUnconnected += msgs.length;
      else sendRaft(this.frames, link, msgs);
    }
    this.outbox.clear();
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
        d.stop();
        d.socket()?.close(CLOSE.REMOVED, 'peer removed or moved');
        this.dialers.delete(d.peer);
      }
    }
    for (const [peer, url] of this.peers) {
      if (!this.dials(peer) || this.dialers.has(peer)) continue;
      const d = new PeerDial(peer, url, {
        opts: this.opts,
        secrets: () => this.secrets,
        tls: () => this.tls,
        log: this.log,
        stats: this.counters,
        running: () => this.running,
        onAuthenticated: (p, ws, nonces, secret) => this.linkUp(p, ws, 'dialed', nonces, secret),
      });
      this.dialers.set(peer, d);
      d.dial();
    }
  }

  // ---- links -------------------------------------------------------------------------------

  private linkUp(peer: NodeId, ws: WebSocket, how: 'dialed' | 'accepted', nonces: LinkNonces, secret: string): Link {
    const link = openLink(this.opts, peer, ws, how, nonces, secret);
    // A dial that began before a reload removed its secret: what the reload cut, it must not
    // let back in.
    if (!this.secrets.accepts(secret)) closeWithin(ws, CLOSE.RELOADED, 'the secret of this link was removed', this.opts.closeGraceMs);
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

  private onFrame(link: Link, data: RawData, isBinary: boolean): void {
    const got = receiveFrame(this.frames, link, data, isBinary);
    if (got?.kind === 'raft') this.emitSafely('raft', link.peer, got.msgs);
    else if (got?.kind === 'app') this.emitSafely('app', link.peer, got.payload);
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
