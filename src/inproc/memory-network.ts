// Peer links in memory (the PeerNetwork contract, src/transport/contracts.ts), for in-process
// clusters and the whole-node simulator. Frames go through the same msgpack codec and the
// same Raft message validation as the ws transport, so a node gets copies it can keep and
// refuses what production refuses. How and when a frame arrives is the Wire's business: the
// in-process cluster delivers on the next turn; the simulator delays, drops, duplicates and
// cuts links by its seed.
import { EventEmitter } from 'node:events';
import type { Message, NodeId } from '../raft/types.js';
import { decodeFrame, encodeFrame } from '../protocol/codec.js';
import { parseRaftMessage } from '../transport/raft-message.js';
import type { PeerNetwork, PeerNetworkEvents } from '../transport/contracts.js';
import { newPeerStats, type PeerTransportStats } from '../transport/peer-options.js';

/** What carries frames between endpoints. */
export interface Wire {
  /** Whether `from` can reach `to` now (a partition cuts links). */
  connected(from: NodeId, to: NodeId): boolean;
  /** Deliver `frame` from `from` to `to` later, or never (a dropped frame). */
  carry(from: NodeId, to: NodeId, deliver: () => void): void;
  /** Run `fn` on a later turn (link up and down notices). */
  soon(fn: () => void): void;
}

type Frame = { kind: 'raft'; bytes: Uint8Array } | { kind: 'app'; bytes: Uint8Array };

/** The hub every endpoint of one cluster registers with. */
export class MemoryNetwork {
  private readonly endpoints = new Map<NodeId, MemoryPeerEndpoint>();

  constructor(readonly wire: Wire) {}

  /** The endpoint of node `id` (a new one each time the node starts). */
  endpoint(id: NodeId, initialPeers: ReadonlyMap<NodeId, string>): MemoryPeerEndpoint {
    return new MemoryPeerEndpoint(id, this, initialPeers);
  }

  /** @internal */
  register(e: MemoryPeerEndpoint): void {
    const old = this.endpoints.get(e.id);
    this.endpoints.set(e.id, e);
    if (old && old !== e) old.forceDown();
    this.reconcile();
  }

  /** @internal */
  unregister(e: MemoryPeerEndpoint): void {
    if (this.endpoints.get(e.id) === e) this.endpoints.delete(e.id);
    this.reconcile();
  }

  /** @internal */
  running(id: NodeId): MemoryPeerEndpoint | undefined {
    return this.endpoints.get(id);
  }

  /** Links come up or go down as peers start, stop, change their peer sets, or the wire
   *  cuts or heals them: call after any of those. */
  reconcile(): void {
    for (const a of this.endpoints.values()) {
      for (const b of this.endpoints.values()) {
        if (a === b) continue;
        // Either side dials the members it knows; the other accepts (as the ws transport).
        const wanted = (a.wants(b.id) || b.wants(a.id)) && this.wire.connected(a.id, b.id) && this.wire.connected(b.id, a.id);
        a.setLink(b.id, wanted);
      }
      for (const peer of a.linkedPeers()) if (!this.endpoints.has(peer)) a.setLink(peer, false);
    }
  }
}

export class MemoryPeerEndpoint extends EventEmitter<PeerNetworkEvents> implements PeerNetwork {
  private peers: Map<NodeId, string>;
  private readonly up = new Set<NodeId>();
  private started = false;
  private readonly counters: PeerTransportStats = newPeerStats();

  constructor(
    readonly id: NodeId,
    private readonly net: MemoryNetwork,
    initialPeers: ReadonlyMap<NodeId, string>,
  ) {
    super();
    this.peers = new Map(initialPeers);
  }

  async start(): Promise<void> {
    this.started = true;
    this.net.register(this);
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.net.unregister(this);
    for (const p of [...this.up]) this.setLink(p, false);
  }

  /** The node crashed: links drop without a word, frames in flight to it are lost. */
  forceDown(): void {
    void this.stop();
  }

  setPeers(peers: ReadonlyMap<NodeId, string>): void {
    this.peers = new Map(peers);
    this.net.reconcile();
  }

  sendNow(batches: ReadonlyMap<NodeId, readonly Message[]>): void {
    for (const [to, msgs] of batches) if (msgs.length > 0) this.send(to, { kind: 'raft', bytes: encodeFrame(msgs) });
  }

  sendApp(to: NodeId, payload: unknown): boolean {
    return this.send(to, { kind: 'app', bytes: encodeFrame(payload) });
  }

  stats(): PeerTransportStats {
    return { ...this.counters };
  }

  /** @internal */
  wants(peer: NodeId): boolean {
    return this.started && this.peers.has(peer);
  }

  /** @internal */
  linkedPeers(): NodeId[] {
    return [...this.up];
  }

  /** @internal */
  setLink(peer: NodeId, up: boolean): void {
    if (up === this.up.has(peer)) return;
    if (up) this.up.add(peer);
    else this.up.delete(peer);
    this.net.wire.soon(() => {
      if (this.up.has(peer) !== up) return; // changed again meanwhile
      if (up) this.emit('peerUp', peer);
      else this.emit('peerDown', peer);
    });
  }

  private send(to: NodeId, frame: Frame): boolean {
    if (!this.started || !this.up.has(to)) return false;
    this.net.wire.carry(this.id, to, () => {
      const target = this.net.running(to);
      // Delivered only on a link that is still up at both ends.
      if (!target || !target.up.has(this.id) || !this.up.has(to)) return;
      target.receive(this.id, frame);
    });
    return true;
  }

  private receive(from: NodeId, frame: Frame): void {
    const value = decodeFrame(frame.bytes);
    if (frame.kind === 'app') return void this.emit('app', from, value);
    if (!Array.isArray(value)) return;
    const msgs: Message[] = [];
    for (const v of value) {
      const m = parseRaftMessage(v, from, this.id);
      if ('error' in m) return; // production drops the whole frame too
      msgs.push(m);
    }
    this.emit('raft', from, msgs);
  }
}
