// Peers know each other's storage identity, so a member that lost its data directory cannot
// vote or count towards a commit as if it remembered its votes and log.
//
// Every data directory draws a storage id once, when it is created (RaftStorage.storageId).
// When a link comes up each side sends its id ({t:'storage'}); a node records the id it
// first sees for each peer, durably, and from then on drops every Raft message from that
// peer until the peer has presented the same id on the current link. A peer that presents
// another id was wiped or had its directory replaced: its messages stay dropped (no vote, no
// acknowledgement, no election), it is told why ({t:'storageRefused'}) and stops, and the
// operator removes it and lets it join again (the record is forgotten when the removal is
// applied). etcd does the same with member ids: a member that lost its data directory must
// be removed and added back as a new member.
//
// A peer we hold no record for (a new cluster, a node that joined, a cluster upgraded from a
// version without storage ids) is admitted at once and recorded when its id arrives.
//
// Ids travel once per link, on peerUp. If that frame never arrives while the link stays up
// (it was not sent because the link was backed up, say), the peer's Raft messages would be
// dropped for as long as the link lasts, and a cluster can lose its quorum to it. So a node
// that drops a message from a peer it has not yet verified on this link asks again
// ({t:'storageAsk'}, at most once a second per peer), and resends its own id.
import type { Logger } from 'pino';
import type { NodeId } from '../../raft/types.js';

export type IdentityApp = { t: 'storage'; id: string } | { t: 'storageRefused'; reason: string } | { t: 'storageAsk' };

/** Where the records live (the node's own LevelDB, see RaftStorage). */
export interface PeerIdentityStore {
  peerStorageIds(): Promise<Map<NodeId, string>>;
  recordPeerStorageId(peer: NodeId, storageId: string): Promise<void>;
  forgetPeerStorageId(peer: NodeId): Promise<void>;
}

export interface PeerIdentityOptions {
  readonly selfId: NodeId;
  readonly storageId: string;
  readonly store: PeerIdentityStore;
  readonly send: (peer: NodeId, payload: IdentityApp) => boolean;
  readonly logger: Logger;
  /** A peer refused this node's storage: stop, saying why. */
  readonly refused: (reason: string) => void;
  /** Monotonic ms (the asks' spacing). */
  readonly now: () => number;
}

/** How often a node asks an unverified peer for its id again. */
const ASK_EVERY_MS = 1_000;

export function isIdentityApp(p: unknown): p is IdentityApp {
  if (typeof p !== 'object' || p === null) return false;
  const o = p as Record<string, unknown>;
  return (o.t === 'storage' && typeof o.id === 'string' && o.id.length > 0 && o.id.length <= 128) || (o.t === 'storageRefused' && typeof o.reason === 'string') || o.t === 'storageAsk';
}

export class PeerIdentityGate {
  private known = new Map<NodeId, string>();
  /** Peers whose id matched (or was recorded) on their current link. */
  private readonly verified = new Set<NodeId>();
  /** Peers refused for presenting another storage id, with the id they presented. */
  readonly mismatched = new Map<NodeId, string>();
  private readonly askedAt = new Map<NodeId, number>();

  constructor(private readonly o: PeerIdentityOptions) {}

  /** A Raft message from `peer` was dropped because it is not verified on this link: ask
   *  for its id again (spaced), and present ours. */
  dropped(peer: NodeId): void {
    if (this.mismatched.has(peer)) return; // refused for good until removed
    const now = this.o.now();
    if (now - (this.askedAt.get(peer) ?? -Infinity) < ASK_EVERY_MS) return;
    this.askedAt.set(peer, now);
    this.o.send(peer, { t: 'storage', id: this.o.storageId });
    this.o.send(peer, { t: 'storageAsk' });
  }

  async load(): Promise<void> {
    this.known = await this.o.store.peerStorageIds();
  }

  /** Whether Raft messages from `peer` may be stepped. */
  admits(peer: NodeId): boolean {
    return this.verified.has(peer) || (!this.known.has(peer) && !this.mismatched.has(peer));
  }

  onPeerUp(peer: NodeId): void {
    this.verified.delete(peer);
    this.o.send(peer, { t: 'storage', id: this.o.storageId });
  }

  onPeerDown(peer: NodeId): void {
    this.verified.delete(peer);
  }

  /** The member was removed: a node joining later under its id brings a new directory. */
  forget(peer: NodeId): void {
    this.verified.delete(peer);
    this.mismatched.delete(peer);
    if (!this.known.delete(peer)) return;
    this.o.store.forgetPeerStorageId(peer).catch((err: unknown) => this.o.logger.error({ err, peer }, 'cannot forget the storage id of a removed member'));
  }

  onApp(from: NodeId, p: IdentityApp): void {
    if (p.t === 'storageAsk') {
      this.o.send(from, { t: 'storage', id: this.o.storageId });
      return;
    }
    if (p.t === 'storageRefused') {
      this.o.logger.error({ peer: from, reason: p.reason }, 'a peer refuses this node: its data directory is not the one the cluster knows');
      this.o.refused(`${from} refuses this node: ${p.reason}`);
      return;
    }
    const recorded = this.known.get(from);
    if (recorded === undefined) {
      this.known.set(from, p.id);
      this.verified.add(from);
      this.mismatched.delete(from);
      this.o.store.recordPeerStorageId(from, p.id).catch((err: unknown) => this.o.logger.error({ err, peer: from }, 'cannot record a peer storage id'));
      return;
    }
    if (recorded === p.id) {
      this.verified.add(from);
      this.mismatched.delete(from);
      return;
    }
    this.mismatched.set(from, p.id);
    const reason =
      `${this.o.selfId} knew ${from} with storage id ${recorded}, and ${from} now presents ${p.id}: its data directory ` +
      `was wiped or replaced, so it no longer holds the votes and log entries it acknowledged. Remove it ` +
      `(\`palisade member remove ${from}\` on a healthy member), then start it with an empty data directory and ` +
      `\`serve --join\` (docs/operations.md, "A node lost its disk")`;
    this.o.logger.error({ peer: from, recorded, presented: p.id }, `refusing ${from}: ${reason}`);
    this.o.send(from, { t: 'storageRefused', reason });
  }
}
