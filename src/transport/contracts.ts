// What a node needs of its sockets: the contracts the ws/TLS implementations (peer.ts,
// client-server.ts: production) and the in-memory ones (src/inproc: in-process clusters and
// the simulator) keep. test/transport/contract.test.ts runs one suite against both.
import type { Message, NodeId } from '../raft/types.js';
import type { Request, ServerFrame } from '../protocol/client-protocol.js';
import type { PeerTransportStats } from './peer-options.js';

export interface PeerNetworkEvents {
  /** Raft messages from an authenticated peer, in the order it sent them. */
  raft: [from: NodeId, msgs: Message[]];
  /** An application frame (forwarded requests, identities, digests) from a peer. */
  app: [from: NodeId, payload: unknown];
  peerUp: [id: NodeId];
  peerDown: [id: NodeId];
}

/** The links to the other members. Messages to a peer arrive in order or not at all; a peer
 *  is up between its peerUp and peerDown. */
export interface PeerNetwork {
  start(): Promise<unknown>;
  stop(): Promise<void>;
  /** The members to keep links to (id -> peer URL), replacing the previous set. */
  setPeers(peers: ReadonlyMap<NodeId, string>): void;
  /** Send each peer its messages now (one frame each); a peer without a link drops them. */
  sendNow(batches: ReadonlyMap<NodeId, readonly Message[]>): void;
  /** False when there is no link to `to`. */
  sendApp(to: NodeId, payload: unknown): boolean;
  stats(): PeerTransportStats;
  /** Peers that refuse this node's link (a secret or certificate they do not accept), with
   *  why. Absent: links that cannot be refused (in-memory). */
  refusedLinks?(): ReadonlyMap<NodeId, string>;
  on<K extends keyof PeerNetworkEvents>(event: K, listener: (...args: PeerNetworkEvents[K]) => void): unknown;
}

export interface ClientConnEvents {
  request: [req: Request];
  close: [code: number, reason: string];
}

/** One client's connection, as the node sees it: validated requests in, frames out. */
export interface ClientConn {
  readonly id: number;
  readonly remoteAddress: string;
  readonly isOpen: boolean;
  /** False when the connection is gone (or was cut for not reading). */
  send(frame: ServerFrame): boolean;
  /** Send an answer whose encoding may be large (a watch's first read) without building it
   *  whole; frames sent after it wait behind it. */
  sendStreamed(frame: ServerFrame): void;
  /** The pre-authentication limits no longer apply (the gate knows who this is). */
  authenticated(): void;
  /** Close the connection with a code and reason the client reads (its token was revoked). */
  close(code: number, reason: string): void;
  on<K extends keyof ClientConnEvents>(event: K, listener: (...args: ClientConnEvents[K]) => void): unknown;
}

/** The client port: connections come to `onConnection`, given when it is made. */
export interface ClientListener {
  start(): Promise<unknown>;
  stop(): Promise<void>;
  connectionCount(): number;
  stats(): ClientServerStats;
}

/** What the client port counts (metrics, status). */
export interface ClientServerStats {
  connections: number;
  requests: number;
  /** Requests answered with BAD_FRAME/UNKNOWN_OP/INVALID_ARGUMENT by validation. */
  invalidRequests: number;
  /** Connections closed for undecodable, id-less or text frames. */
  badFrameCloses: number;
  oversizeFrames: number;
  slowConsumerDisconnects: number;
  /** Requests refused with RATE_LIMITED. */
  rateLimited: number;
  /** Connections closed at once because their address had too many open. */
  refusedConnections: number;
  /** Connections cut before authenticating: too many bytes, or the deadline passed. */
  preAuthCuts: number;
}

/** Every count at zero: a new port's, and what a port without sockets never counts. */
export function zeroClientServerStats(): ClientServerStats {
  return { connections: 0, requests: 0, invalidRequests: 0, badFrameCloses: 0, oversizeFrames: 0, slowConsumerDisconnects: 0, rateLimited: 0, refusedConnections: 0, preAuthCuts: 0 };
}
