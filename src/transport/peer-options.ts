// The peer transport's options, its counters and the close codes of peer links: what the
// transport (peer.ts), its dialer (peer-dial.ts) and its link frames (peer-link.ts) share.
import type { Logger } from 'pino';
import type { NodeId } from '../raft/types.js';
import type { TlsMaterial } from './tls.js';

export interface PeerTransportOptions {
  readonly clusterId: string;
  readonly selfId: NodeId;
  /** The cluster secrets: this node proves the first and accepts any (peer-secrets.ts); they
   *  never leave this process. setCredentials replaces them. */
  readonly secrets: readonly string[];
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
   *  presenting `cert` (mutual TLS when the other side requires client certificates).
   *  setCredentials replaces them. */
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
export const CLOSE = {
  STOPPING: 1001,
  PROTOCOL: 4000,
  SUPERSEDED: 4001,
  REMOVED: 4002,
  UNRESPONSIVE: 4003,
  /** This node's secrets or certificates changed (a config reload): the link is made again
   *  with the new ones, or ends if the other side does not accept them. */
  RELOADED: 4004,
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

/** The options with every default filled in (the peer list, logger, and the secrets and TLS,
 *  which a reload replaces, travel apart). */
export type ResolvedPeerOptions = Required<Omit<PeerTransportOptions, 'peers' | 'logger' | 'tls' | 'secrets'>>;

export function resolvePeerOptions(options: PeerTransportOptions): ResolvedPeerOptions {
  return {
    clusterId: options.clusterId,
    selfId: options.selfId,
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
}

export function newPeerStats(): PeerTransportStats {
  return {
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
}
