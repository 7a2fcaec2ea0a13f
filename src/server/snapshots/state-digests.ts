// Replicas that applied the same entries must hold the same state: nodes check it.
//
// Now and then the leader proposes a `checkpoint` entry. Every node that applies it copies
// its machine's state as of that entry (SnapshotEncoder: the canonical snapshot bytes,
// encoded over several event-loop turns so a large state does not stall the node), hashes
// the bytes with SHA-256 and sends {index, digest} to its peers; each node compares what its
// peers report with its own digest of the same index. A difference means the replicas
// diverged: a bug, or a node applying entries under rules of its own (the probe that
// motivated this gave two nodes different `sessions.*` files, and one lock two holders). It
// is an alarm, not a repair: the node logs it at error level, fails /readyz (a replica that
// may answer reads wrongly should leave the load balancer), says it on `palisade status` and
// counts it in a metric. Which side is wrong is for the operator to judge (the majority's
// digest is the likely truth); removing the odd node and letting it join again rebuilds it
// from the leader's snapshot.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { SnapshotEncoder } from '../../lockfsm/index.js';
import type { NodeId } from '../../raft/index.js';
import { nextTurn, type NodeClock } from '../clock.js';

export type DigestApp = { t: 'digest'; index: number; digest: string };

/** Digests kept per node (ours and each peer's): enough to meet across a lagging peer. */
const KEPT = 32;
/** Snapshot rows encoded per event-loop turn, and bytes hashed per turn. */
const ROWS_PER_TURN = 5_000;
const HASH_BYTES_PER_TURN = 4 << 20;

export function isDigestApp(p: unknown): p is DigestApp {
  if (typeof p !== 'object' || p === null) return false;
  const o = p as Record<string, unknown>;
  return o.t === 'digest' && Number.isSafeInteger(o.index) && (o.index as number) > 0 && typeof o.digest === 'string' && /^[0-9a-f]{64}$/.test(o.digest);
}

export interface DigestMismatch {
  readonly peer: NodeId;
  readonly index: number;
  readonly ours: string;
  readonly theirs: string;
}

export interface DigestView {
  /** Our latest digest and the index it is of; null before the first checkpoint. */
  readonly latest: { readonly index: number; readonly digest: string; readonly agreeing: readonly NodeId[] } | null;
  readonly mismatches: readonly DigestMismatch[];
}

export interface StateDigestsOptions {
  readonly send: (to: NodeId, app: DigestApp) => boolean;
  readonly peers: () => readonly NodeId[];
  readonly logger: Logger;
  /** Where the encoding and hashing yield between slices. */
  readonly clock: NodeClock;
  /** As leader: propose a checkpoint entry. */
  readonly propose: () => { readonly ok: true; readonly index: number } | { readonly ok: false };
  /** A checkpoint every this many entries (the config's snapshot.entries). */
  readonly everyEntries: number;
}

export class StateDigests {
  private readonly ours = new Map<number, string>();
  private readonly theirs = new Map<NodeId, Map<number, string>>();
  private readonly found: DigestMismatch[] = [];
  private lastIndex = 0;
  /** The index of the last checkpoint this node proposed as leader. */
  private proposedAt = 0;
  private stopped = false;

  constructor(private readonly o: StateDigestsOptions) {}

  private yieldTurn(): Promise<void> {
    return nextTurn(this.o.clock);
  }

  /** The index of the latest checkpoint this node applied (0: none). */
  get latestIndex(): number {
    return this.lastIndex;
  }

  /** Mismatches found so far (the metric and /readyz read it). */
  get mismatches(): readonly DigestMismatch[] {
    return this.found;
  }

  stop(): void {
    this.stopped = true;
  }

  /** As leader, after applying up to `applied`: a checkpoint entry every `everyEntries`. */
  maybeCheckpoint(applied: number): void {
    if (applied - Math.max(this.lastIndex, this.proposedAt) < this.o.everyEntries) return;
    const r = this.o.propose();
    if (r.ok) this.proposedAt = r.index;
  }

  /** Why this node's state cannot be trusted (readiness), or null. */
  diverged(): string | null {
    const m = this.found[0];
    return m === undefined ? null : `state differs from ${m.peer}'s at checkpoint ${m.index}: the replicas diverged`;
  }

  /** One line per mismatch, for status and /readyz warnings. */
  notes(): string[] {
    return this.found.map((m) => `state differs from ${m.peer}'s at checkpoint ${m.index} (ours ${m.ours.slice(0, 12)}, theirs ${m.theirs.slice(0, 12)})`);
  }

  /** A checkpoint entry at `index` was applied; `copy` is the machine's state as of it,
   *  taken at once. Its digest is computed over the next turns and sent to the peers. */
  checkpoint(index: number, copy: SnapshotEncoder): void {
    void this.digest(index, copy).catch((err: unknown) => this.o.logger.error({ err, index }, 'cannot digest a checkpoint'));
  }

  /** Resolves with our digest of the state at `index` (null if the node stopped meanwhile). */
  private async digest(index: number, copy: SnapshotEncoder): Promise<string | null> {
    this.lastIndex = Math.max(this.lastIndex, index);
    while (!copy.step(ROWS_PER_TURN)) {
      await this.yieldTurn();
      if (this.stopped) return null;
    }
    const bytes = copy.bytes();
    const hash = createHash('sha256');
    for (let at = 0; at < bytes.length; at += HASH_BYTES_PER_TURN) {
      hash.update(bytes.subarray(at, at + HASH_BYTES_PER_TURN));
      if (at + HASH_BYTES_PER_TURN < bytes.length) await this.yieldTurn();
      if (this.stopped) return null;
    }
    const digest = hash.digest('hex');
    keep(this.ours, index, digest);
    for (const peer of this.o.peers()) this.o.send(peer, { t: 'digest', index, digest });
    for (const [peer, map] of this.theirs) this.compare(peer, index, map.get(index));
    return digest;
  }

  /** A peer's digest of its state at `index`. */
  onPeerDigest(peer: NodeId, app: DigestApp): void {
    let map = this.theirs.get(peer);
    if (map === undefined) this.theirs.set(peer, (map = new Map()));
    keep(map, app.index, app.digest);
    this.compare(peer, app.index, app.digest);
  }

  /** A member left: its digests no longer count. */
  forget(peer: NodeId): void {
    this.theirs.delete(peer);
  }

  view(): DigestView {
    const index = this.ours.size === 0 ? 0 : Math.max(...this.ours.keys());
    const digest = this.ours.get(index);
    const agreeing = [...this.theirs].filter(([, m]) => m.get(index) === digest).map(([peer]) => peer);
    return { latest: digest === undefined ? null : { index, digest, agreeing }, mismatches: this.found };
  }

  private compare(peer: NodeId, index: number, theirs: string | undefined): void {
    const ours = this.ours.get(index);
    if (ours === undefined || theirs === undefined || ours === theirs) return;
    if (this.found.some((m) => m.peer === peer && m.index === index)) return;
    const m: DigestMismatch = { peer, index, ours, theirs };
    if (this.found.length < KEPT) this.found.push(m);
    this.o.logger.error(
      { peer, index, ours, theirs },
      `state differs from ${peer}'s at entry ${index}: the replicas diverged (compare the other members' digests on palisade status; the odd one out should be removed and join again)`,
    );
  }
}

/** Sets index -> digest, keeping the KEPT highest indexes. */
function keep(map: Map<number, string>, index: number, digest: string): void {
  map.set(index, digest);
  if (map.size <= KEPT) return;
  map.delete(Math.min(...map.keys()));
}
