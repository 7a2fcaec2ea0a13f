// Everything a node does I/O through, handed to PalisadeNode.open in one piece (the seams
// hashicorp/raft gives its Transport, LogStore and StableStore; etcd-io/raft's Ready loop
// leaves the same to its caller). Production wires LevelDB, ws/TLS sockets and the system's
// timers (production-deps.ts); the in-process cluster (test/support/in-process-cluster.ts)
// and the whole-node simulator (test/sim/whole) wire the in-memory ones of src/inproc, which
// keep the same contracts (src/storage/node-store.ts, src/transport/contracts.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { NodeId } from '../raft/index.js';
import type { ClusterConfig } from '../config/cluster-config.js';
import type { MemberInfo } from '../protocol/client-protocol.js';
import type { NodeStore } from '../storage/node-store.js';
import type { ClientConn, ClientListener, PeerNetwork } from '../transport/contracts.js';
import type { NodeClock } from './clock.js';
import type { NodeInternals } from './ops/node-view.js';
import type { NodeOps } from './ops/index.js';
import type { Revoke } from './ops/revoke.js';

/** What the HTTP API needs of the client port it shares: per-address slots for long requests. */
export interface HttpPortControls {
  holdAddressSlot(remote: string): (() => void) | null;
  coolOffAddress(remote: string, ms: number): void;
  /** One request from the address's rate budget; false when it is empty. */
  takeAddressToken(remote: string): boolean;
}

export interface ClientPortHandlers {
  onConnection(conn: ClientConn): void;
  /** The HTTP API on the same port (production only): built once the port exists. */
  http?: (port: HttpPortControls) => (req: IncomingMessage, res: ServerResponse) => void;
}

export interface NodeDeps {
  readonly clock: NodeClock;
  readonly logger: Logger;
  /** A draw in [0, n) for election timeouts (production: Math.random). */
  random(n: number): number;
  /** This node's storage, opened (and checked) before anything else. */
  openStore(): Promise<NodeStore>;
  /** The links to the other members, dialing `peers` (id -> peer URL) once started. */
  peerNetwork(peers: ReadonlyMap<NodeId, string>): PeerNetwork;
  clientPort(handlers: ClientPortHandlers): ClientListener;
  /** Metrics, health checks and the status page (whose revoke is `revoke`); null: none. */
  opsPort(node: NodeInternals, revoke: Revoke): NodeOps | null;
  /** `serve --join`: asks the cluster at `urls` to add this node; the members to dial. */
  join(urls: readonly string[]): Promise<MemberInfo[]>;
  /** A config reload: reads and checks what `next` gives the sockets (the peer secrets, both
   *  ports' certificates), throwing, with nothing changed, when something cannot be used;
   *  returns the change to make, which says what it changed. Absent: sockets without
   *  credentials (in-memory). */
  reloadTransport?(next: ClusterConfig): () => string[];
}

export interface NodeOptions {
  readonly config: ClusterConfig;
  readonly id: NodeId;
  /** Join the cluster at these client URLs instead of founding one from the config. */
  readonly join?: readonly string[];
  /** Called when the node stops for good (it was removed from the cluster). */
  readonly onRemoved?: (why: string) => void;
  /** Called once when the node cannot go on: its storage failed ('storage': a write or a
   *  snapshot could not be stored, so it can no longer promise what its disk holds), or the
   *  cluster refused it ('refused': peers hold another storage identity for it). The node
   *  has stopped serving clients by then; the caller ends the process (serve.ts). */
  readonly onFatal?: (err: Error, kind: FatalKind) => void;
}

export type FatalKind = 'storage' | 'refused';
