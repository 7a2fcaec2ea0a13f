// The membership in effect comes from the log, not from cluster.config.json (which only
// seeds a new cluster). The Raft core tracks who votes; this directory tracks where each
// member listens, carried in the context of every addLearner entry and in snapshots.
import { Packr } from 'msgpackr';
import { encodeConfChange } from '../raft/index.js';
import type { ConfChange, Entry, NodeId } from '../raft/index.js';

export interface MemberUrls {
  readonly peerUrl: string;
  readonly clientUrl: string;
}

const packr = new Packr({ useRecords: false });

export function encodeMemberContext(urls: MemberUrls): Uint8Array {
  return packr.pack({ peerUrl: urls.peerUrl, clientUrl: urls.clientUrl });
}

export function decodeMemberContext(ctx: Uint8Array | undefined): MemberUrls | null {
  if (!ctx || ctx.length === 0) return null;
  try {
    const v = packr.unpack(ctx) as Partial<MemberUrls>;
    return typeof v.peerUrl === 'string' && typeof v.clientUrl === 'string' ? { peerUrl: v.peerUrl, clientUrl: v.clientUrl } : null;
  } catch {
    return null;
  }
}

/** Removed members remembered for idempotent retries; older ones are forgotten. */
const MAX_REMEMBERED_REMOVALS = 256;

export class MemberDirectory {
  private readonly urls = new Map<NodeId, MemberUrls>();
  /** Members whose removal this node applied (kept in snapshots), most recent last: a
   *  retried removal of one of them is answered as done, not refused. */
  private readonly removed: NodeId[] = [];

  constructor(entries: Iterable<readonly [NodeId, MemberUrls]> = [], removed: readonly NodeId[] = []) {
    for (const [id, u] of entries) this.urls.set(id, u);
    this.removed.push(...removed);
  }

  /** Whether a removal of `id` was applied and `id` was not added back since. */
  wasRemoved(id: NodeId): boolean {
    return this.removed.includes(id) && !this.urls.has(id);
  }

  removedIds(): NodeId[] {
    return [...this.removed];
  }

  get(id: NodeId): MemberUrls | undefined {
    return this.urls.get(id);
  }

  set(id: NodeId, u: MemberUrls): void {
    this.urls.set(id, u);
  }

  /** Follow a committed change (the core applies the vote side). */
  apply(cc: ConfChange): void {
    if (cc.type === 'remove') {
      this.urls.delete(cc.node);
      const at = this.removed.indexOf(cc.node);
      if (at >= 0) this.removed.splice(at, 1);
      this.removed.push(cc.node);
      if (this.removed.length > MAX_REMEMBERED_REMOVALS) this.removed.shift();
    } else if (cc.type === 'addLearner') {
      const u = decodeMemberContext(cc.context);
      if (u) this.urls.set(cc.node, u);
    }
  }

  entries(): [NodeId, MemberUrls][] {
    return [...this.urls.entries()];
  }

  peerMap(self: NodeId, members: Iterable<NodeId>): Map<NodeId, string> {
    const m = new Map<NodeId, string>();
    for (const id of members) {
      const u = this.urls.get(id);
      if (u && id !== self) m.set(id, u.peerUrl);
    }
    return m;
  }
}

/**
 * The first entries of a new cluster's log: each founding member added as a learner and
 * promoted, at term 1, identical on every founding node (Log Matching holds), committed
 * from the start. Every later node learns the founding membership from these entries (or
 * from a snapshot), so the log alone says who the members are.
 */
export function bootstrapEntries(nodes: readonly ({ id: NodeId } & MemberUrls)[]): Entry[] {
  const out: Entry[] = [];
  for (const n of nodes) {
    for (const cc of [
      { type: 'addLearner', node: n.id, context: encodeMemberContext(n) },
      { type: 'promote', node: n.id },
    ] as ConfChange[]) {
      out.push({ term: 1, index: out.length + 1, type: 'conf', data: encodeConfChange(cc) });
    }
  }
  return out;
}

/** What a node's snapshot holds: the lock machine and the member directory. */
export function wrapSnapshot(machine: Uint8Array, members: MemberDirectory): Uint8Array {
  return packr.pack({ v: 1, machine, members: members.entries(), removed: members.removedIds() });
}

export function unwrapSnapshot(data: Uint8Array): { machine: Uint8Array; members: [NodeId, MemberUrls][]; removed: NodeId[] } {
  let v: { v?: unknown; machine?: unknown; members?: unknown; removed?: unknown };
  try {
    v = packr.unpack(data) as typeof v;
  } catch (e) {
    throw new Error(`snapshot is not readable: ${(e as Error).message}`);
  }
  if (v.v !== 1) throw new Error(`snapshot layout version ${JSON.stringify(v.v)}; this build reads version 1`);
  if (!(v.machine instanceof Uint8Array) || !Array.isArray(v.members)) throw new Error('snapshot has an unknown layout');
  // `removed` came later: a snapshot without it remembers no removals.
  const removed = Array.isArray(v.removed) ? v.removed.filter((x): x is NodeId => typeof x === 'string') : [];
  return { machine: v.machine, members: v.members as [NodeId, MemberUrls][], removed };
}
