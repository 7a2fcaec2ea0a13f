// What an operator should see on `palisade status`, /readyz and the status page besides the
// plain numbers: followers that are not catching up, peers refused for presenting another
// storage identity, and this node listening at a peer address other than the one the cluster
// recorded for it (peers dial the recorded one, so such a node is isolated and says nothing
// otherwise). New notes are logged once, at error level for the last two.
import type { Logger } from 'pino';
import type { RaftNode } from '../../raft/index.js';
import { CatchUpWatch, type StalledPeer } from '../membership/catch-up.js';
import type { NodeClock, Timer } from '../clock.js';

export interface HealthNotesOptions {
  readonly id: string;
  readonly raft: RaftNode;
  /** This node's peer URL from its config, and the one the cluster's log recorded for it. */
  readonly configuredPeerUrl: string;
  readonly recordedPeerUrl: () => string | undefined;
  /** Peers refused for a different storage id (peer -> the id it presented). */
  readonly mismatchedPeers: () => ReadonlyMap<string, string>;
  /** Further notes of other parts (file settings the cluster overrides, diverged state):
   *  each is logged once at warn level when it first appears. */
  readonly more?: () => readonly string[];
  /** A member is "not catching up" once its match has stood still this long while behind. */
  readonly stallMs: number;
  readonly logger: Logger;
  readonly clock: NodeClock;
}

export class HealthNotes {
  private readonly watch = new CatchUpWatch();
  private readonly logged = new Set<string>();
  private stalledLogged = new Set<string>();
  private timer: Timer | null = null;

  constructor(private readonly o: HealthNotesOptions) {}

  start(everyMs = 1_000): void {
    this.timer = this.o.clock.setInterval(() => this.notes(), everyMs);
    this.timer.unref?.();
  }

  stop(): void {
    this.o.clock.clear(this.timer);
    this.timer = null;
  }

  /** Every member behind the leader, with how long its match has stood still. */
  behind(): StalledPeer[] {
    const r = this.o.raft;
    const peers = r.role === 'leader' ? r.progress().filter((p) => p.id !== this.o.id) : [];
    return this.watch.observe(peers, r.log.lastIndex(), this.o.clock.now());
  }

  /** Members behind the leader whose match has not moved for longer than stallMs. */
  stalled(): StalledPeer[] {
    return this.behind().filter((p) => p.stalledMs > this.o.stallMs);
  }

  notes(): string[] {
    const out: string[] = [];
    const recorded = this.o.recordedPeerUrl();
    if (recorded !== undefined && recorded !== this.o.configuredPeerUrl) {
      out.push(
        `this node listens for peers at ${this.o.configuredPeerUrl}, but the cluster recorded ${recorded} for ${this.o.id}: ` +
          'peers dial the recorded address, so this node is cut off; change it back, or remove the member and join it again at the new address',
      );
    }
    for (const [peer, id] of this.o.mismatchedPeers()) {
      out.push(`peer ${peer} is refused: it presents storage id ${id}, not the one it voted with (its data directory was wiped or replaced)`);
    }
    for (const n of out) {
      if (this.logged.has(n)) continue;
      this.logged.add(n);
      this.o.logger.error(n);
    }
    for (const n of this.o.more?.() ?? []) {
      out.push(n);
      if (this.logged.has(n)) continue;
      this.logged.add(n);
      this.o.logger.warn(n);
    }
    const stalled = this.stalled();
    for (const p of stalled) {
      const n = `member ${p.id} is not catching up: match ${p.match}, ${p.behind} entries behind, no progress for ${Math.round(p.stalledMs / 1000)} s`;
      if (!this.stalledLogged.has(p.id)) this.o.logger.warn(n);
      out.push(n);
    }
    this.stalledLogged = new Set(stalled.map((p) => p.id));
    if (this.logged.size > 1000) this.logged.clear();
    return out;
  }
}
