// The dialing side of a peer link (the node whose id sorts first dials): one PeerDial per
// peer dials, runs the dialer's half of the handshake (peer-handshake.ts), hands the
// authenticated socket to the transport, and redials with backoff whenever the socket closes,
// until it is stopped. The accepting side is peer-accept.ts.
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import type { NodeId } from '../raft/types.js';
import { decodeFrame, encodeFrame } from '../protocol/codec.js';
import type { LinkNonces } from './peer-frames.js';
import { PEER_PROTOCOL_VERSION, acceptorMac, dialerMac, macsEqual, newNonce, parseHello, parseWelcome } from './peer-handshake.js';
import type { PeerSecrets } from './peer-secrets.js';
import { CLOSE, type ResolvedPeerOptions } from './peer-options.js';
import { dialerTlsOptions, isTlsFailure, type TlsMaterial } from './tls.js';
import { closeWithin, guarded, rawBytes } from './ws-util.js';

export interface DialContext {
  readonly opts: ResolvedPeerOptions;
  /** Read at each dial: a reload replaces the secrets and the certificates. */
  readonly secrets: () => PeerSecrets;
  readonly tls: () => TlsMaterial | undefined;
  readonly log: Logger;
  /** Counters shared with the transport's stats. */
  readonly stats: { handshakeFailures: number };
  /** False once the transport stops: nothing is dialed any more. */
  readonly running: () => boolean;
  /** The handshake succeeded; from now on the socket is the transport's link to `peer`,
   *  keyed by `secret` (the one this node proved). */
  readonly onAuthenticated: (peer: NodeId, ws: WebSocket, nonces: LinkNonces, secret: string) => void;
}

export class PeerDial {
  private attempt = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The socket being dialed or serving the link, until it closes. */
  private ws: WebSocket | null = null;
  /** Last problem logged at warn, so that a peer that stays down does not flood the log. */
  private lastProblem: string | null = null;
  /** Why the last attempt was refused (a secret or a certificate the other side does not
   *  accept), until an attempt succeeds or fails otherwise: what status shows an operator. */
  private refusedFor: string | null = null;
  private stopped = false;

  constructor(
    readonly peer: NodeId,
    readonly url: string,
    private readonly c: DialContext,
  ) {}

  /** The socket this dial holds right now, if any. */
  socket(): WebSocket | null {
    return this.ws;
  }

  /** Why the peer refuses this node's link right now, if it does. */
  get refusal(): string | null {
    return this.refusedFor;
  }

  /** Stop redialing (the current socket, if any, is left to the caller). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private scheduleRedial(): void {
    const o = this.c.opts;
    if (this.stopped || !this.c.running() || this.timer) return;
    const ceiling = Math.min(o.backoffMaxMs, o.backoffMinMs * 2 ** Math.min(this.attempt, 20));
    const delay = ceiling / 2 + (Math.random() * ceiling) / 2; // jitter: peers do not redial in lockstep
    this.attempt += 1;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dial();
    }, delay);
    this.timer.unref();
  }

  private problem(problem: string, refused = false): void {
    if (refused) this.c.stats.handshakeFailures += 1;
    this.refusedFor = refused ? problem : null;
    const fields = { peer: this.peer, url: this.url, reason: problem };
    // Refusals are configuration errors worth seeing each time they change; an unreachable
    // peer is routine while it restarts.
    if (problem !== this.lastProblem && refused) this.c.log.warn(fields, 'peer refused the link');
    else if (problem !== this.lastProblem) this.c.log.info(fields, 'cannot reach peer; retrying');
    else this.c.log.debug(fields, 'cannot reach peer; retrying');
    this.lastProblem = problem;
  }

  dial(): void {
    if (this.stopped || !this.c.running()) return;
    const { opts: o, log } = this.c;
    const { selfId, clusterId } = o;
    const secret = this.c.secrets().sending;
    const peer = this.peer;
    const ws = new WebSocket(this.url, {
      maxPayload: o.maxFrameBytes,
      perMessageDeflate: false,
      handshakeTimeout: o.handshakeTimeoutMs,
      ...dialerTlsOptions(this.c.tls()),
    });
    this.ws = ws;
    let state: 'hello' | 'welcome' | 'ready' = 'hello';
    let ourNonce: Uint8Array | null = null;
    let acceptorNonce: Uint8Array | null = null;
    let refusedByUs = false;
    const timer = setTimeout(() => {
      this.problem('handshake timed out');
      ws.terminate();
    }, o.handshakeTimeoutMs);
    timer.unref();

    const refuse = (problem: string): void => {
      if (refusedByUs) return; // frames that were already in flight
      refusedByUs = true;
      this.problem(problem, true);
      closeWithin(ws, CLOSE.REFUSED, problem, o.closeGraceMs);
    };

    const onHandshake = guarded(ws, log, 'peer handshake', (data: RawData, isBinary: boolean) => {
      if (refusedByUs || state === 'ready') return;
      const frame = decodeHandshake(data, isBinary, o.maxHandshakeBytes);
      if (state === 'hello') {
        const hello = parseHello(frame);
        if (!hello) return refuse('acceptor sent no valid hello');
        if (hello.v !== PEER_PROTOCOL_VERSION) return refuse(`acceptor speaks peer protocol ${hello.v}, not ${PEER_PROTOCOL_VERSION}`);
        ourNonce = newNonce();
        acceptorNonce = hello.nonce;
        const mac = dialerMac(secret, hello.nonce, clusterId, selfId, peer);
        ws.send(encodeFrame({ k: 'auth', v: PEER_PROTOCOL_VERSION, clusterId, from: selfId, to: peer, nonce: ourNonce, mac }));
        state = 'welcome';
        return;
      }
      const welcome = parseWelcome(frame);
      if (!welcome) return refuse('acceptor sent no valid welcome');
      if (!macsEqual(acceptorMac(secret, ourNonce!, clusterId, peer, selfId), welcome.mac)) {
        return refuse('acceptor failed to prove the cluster secret (wrong secret or an impostor)');
      }
      clearTimeout(timer);
      state = 'ready';
      this.attempt = 0;
      this.lastProblem = null;
      this.refusedFor = null;
      ws.off('message', onHandshake);
      this.c.onAuthenticated(peer, ws, { acceptor: acceptorNonce!, dialer: ourNonce! }, secret);
    });
    ws.on('message', onHandshake);
    ws.on('error', (err) => {
      if (state !== 'ready') this.problem(isTlsFailure(err) ? `TLS: ${err.message}` : err.message, isTlsFailure(err));
      else log.warn({ peer, err: err.message }, 'peer link error');
    });
    ws.on('close', (code, reason) => {
      clearTimeout(timer);
      if (this.ws === ws) this.ws = null;
      if (state !== 'ready' && code === CLOSE.REFUSED && !refusedByUs) this.problem(`refused by ${peer}: ${reason.toString()}`, true);
      this.scheduleRedial();
    });
  }
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
