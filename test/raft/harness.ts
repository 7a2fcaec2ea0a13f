// A minimal synchronous network of RaftNodes for unit tests: messages are delivered in
// order unless a link is cut; persistence is the in-memory Ready contents.
import { RaftNode } from '../../src/raft/index.js';
import type { Entry, Message, NodeId, RaftConfig } from '../../src/raft/index.js';

export function seededRandom(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n: number) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

export class MiniCluster {
  readonly nodes = new Map<NodeId, RaftNode>();
  readonly applied = new Map<NodeId, Entry[]>();
  readonly cut = new Set<string>(); // "a->b"
  readonly sent: Message[] = [];
  private queue: Message[] = [];

  constructor(ids: NodeId[], seed = 1, extra: Partial<RaftConfig> = {}) {
    const rnd = seededRandom(seed);
    for (const id of ids) {
      const cfg: RaftConfig = { id, heartbeatTicks: 1, electionTicks: 10, random: rnd, ...extra };
      this.nodes.set(id, new RaftNode(cfg, { hardState: { term: 0, vote: null, commit: 0 }, conf: { voters: ids, learners: [] }, entries: [] }));
      this.applied.set(id, []);
    }
  }

  node(id: NodeId): RaftNode {
    return this.nodes.get(id)!;
  }

  isolate(id: NodeId): void {
    for (const o of this.nodes.keys()) if (o !== id) { this.cut.add(`${id}->${o}`); this.cut.add(`${o}->${id}`); }
  }

  heal(): void {
    this.cut.clear();
  }

  /** Collect every node's Ready, "persist" it, queue its messages, apply committed entries. */
  flushReady(): void {
    for (const [id, n] of this.nodes) {
      while (n.hasReady()) {
        const rd = n.ready();
        for (const m of rd.messages) { this.sent.push(m); this.queue.push(m); }
        this.applied.get(id)!.push(...rd.committedEntries);
        n.advance(rd);
      }
    }
  }

  /** Deliver until quiet. */
  deliverAll(limit = 100000): void {
    this.flushReady();
    let steps = 0;
    while (this.queue.length && steps++ < limit) {
      const m = this.queue.shift()!;
      if (this.cut.has(`${m.from}->${m.to}`)) continue;
      this.nodes.get(m.to)?.step(m);
      this.flushReady();
    }
  }

  tick(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) node.tick();
      this.deliverAll();
    }
  }

  leader(): RaftNode | undefined {
    const ls = [...this.nodes.values()].filter((n) => n.role === 'leader');
    const maxTerm = Math.max(...ls.map((n) => n.term));
    return ls.find((n) => n.term === maxTerm);
  }

  tickUntilLeader(max = 200): RaftNode {
    for (let i = 0; i < max; i++) {
      const l = this.leader();
      if (l) return l;
      this.tick();
    }
    throw new Error('no leader elected');
  }
}
