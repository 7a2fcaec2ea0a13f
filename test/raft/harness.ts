// A small synchronous network of RaftNodes for the scenario tests. The driver follows the
// Ready contract (persist, send, apply, advance) with an in-memory store per node; messages
// are delivered in FIFO order unless a link is cut, a filter drops them, or they are held.
import { RaftNode } from '../../src/raft/index.js';
import type { ConfState, Entry, HardState, Message, NodeId, RaftConfig, RaftInitialState, ReadState, Snapshot } from '../../src/raft/index.js';

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

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
export const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

/** Entries with the given terms, starting at `from` (data: "t<term>-<index>" unless given). */
export function entries(from: number, terms: readonly number[], tag = ''): Entry[] {
  return terms.map((term, i) => ({ term, index: from + i, type: 'normal', data: enc(`${tag}t${term}-${from + i}`) }));
}

export interface NodeOptions {
  /** What the node starts from (defaults: empty log, term 0, the cluster's conf). */
  initial?: Partial<RaftInitialState>;
  cfg?: Partial<RaftConfig>;
}

export interface MiniOptions {
  seed?: number;
  cfg?: Partial<RaftConfig>;
  conf?: ConfState;
  nodes?: Record<NodeId, NodeOptions>;
}

export class MiniCluster {
  readonly nodes = new Map<NodeId, RaftNode>();
  readonly applied = new Map<NodeId, Entry[]>();
  readonly readStates = new Map<NodeId, ReadState[]>();
  readonly dropped = new Map<NodeId, Uint8Array[]>();
  readonly snapshots = new Map<NodeId, Snapshot[]>();
  readonly hard = new Map<NodeId, HardState>();
  readonly cut = new Set<string>(); // "a->b"
  /** Nodes that are down: they neither tick nor receive. */
  readonly down = new Set<NodeId>();
  /** Every message sent (before any cut or filter). */
  readonly sent: Message[] = [];
  /** Return false to drop a message, or another message to deliver instead. */
  filter: ((m: Message) => boolean | Message) | null = null;
  /** Messages held back instead of queued (e.g. to reorder or delay them). */
  hold: ((m: Message) => boolean) | null = null;
  readonly held: Message[] = [];
  queue: Message[] = [];
  readonly conf: ConfState;
  /** What each node made durable (its Readys), for crash and restart. */
  readonly stores = new Map<NodeId, { hardState: HardState; snapshot?: Snapshot; entries: Entry[] }>();
  private readonly opts = new Map<NodeId, NodeOptions>();
  private readonly rnd: (n: number) => number;
  private readonly baseCfg: Partial<RaftConfig>;

  constructor(ids: NodeId[], seedOrOpts: number | MiniOptions = 1, extra: Partial<RaftConfig> = {}) {
    const o: MiniOptions = typeof seedOrOpts === 'number' ? { seed: seedOrOpts, cfg: extra } : seedOrOpts;
    this.rnd = seededRandom(o.seed ?? 1);
    this.baseCfg = o.cfg ?? {};
    this.conf = o.conf ?? { voters: ids, learners: [] };
    for (const id of ids) this.add(id, o.nodes?.[id]);
  }

  /** Start a node (a fresh one, or from the given initial state). */
  add(id: NodeId, opts: NodeOptions = {}): RaftNode {
    const cfg: RaftConfig = { id, heartbeatTicks: 1, electionTicks: 10, random: this.rnd, ...this.baseCfg, ...opts.cfg };
    const init: RaftInitialState = {
      hardState: { term: 0, vote: null, commit: 0 },
      conf: this.conf,
      entries: [],
      ...opts.initial,
    };
    const n = new RaftNode(cfg, init);
    this.opts.set(id, opts);
    this.stores.set(id, { hardState: init.hardState, ...(init.snapshot ? { snapshot: init.snapshot } : {}), entries: [...init.entries] });
    this.nodes.set(id, n);
    this.applied.set(id, []);
    this.readStates.set(id, []);
    this.dropped.set(id, []);
    this.snapshots.set(id, []);
    this.down.delete(id);
    return n;
  }

  node(id: NodeId): RaftNode {
    return this.nodes.get(id)!;
  }

  isolate(id: NodeId): void {
    for (const o of this.nodes.keys()) {
      if (o !== id) {
        this.cut.add(`${id}->${o}`);
        this.cut.add(`${o}->${id}`);
      }
    }
  }

  /** Cut every link between the groups. */
  partition(...groups: NodeId[][]): void {
    for (const a of groups) for (const b of groups) if (a !== b) for (const x of a) for (const y of b) this.cut.add(`${x}->${y}`);
  }

  heal(): void {
    this.cut.clear();
  }

  /** Data of the normal, non-empty entries a node applied. */
  appliedData(id: NodeId): string[] {
    return this.applied.get(id)!.filter((e) => e.type === 'normal' && e.data.length > 0).map((e) => dec(e.data));
  }

  /** Collect every node's Ready, "persist" it, queue its messages, apply committed entries. */
  flushReady(): void {
    for (const [id, n] of this.nodes) {
      if (this.down.has(id)) continue;
      while (n.hasReady()) {
        const rd = n.ready();
        const st = this.stores.get(id)!;
        if (rd.snapshot) {
          this.snapshots.get(id)!.push(rd.snapshot);
          st.snapshot = rd.snapshot;
          st.entries = [];
        }
        if (rd.entries.length) {
          const first = rd.entries[0]!.index;
          st.entries = [...st.entries.filter((e) => e.index < first), ...rd.entries];
        }
        if (rd.hardState) {
          this.hard.set(id, rd.hardState);
          st.hardState = rd.hardState;
        }
        for (const m of rd.messages) {
          this.sent.push(m);
          if (this.hold?.(m)) this.held.push(m);
          else this.queue.push(m);
        }
        for (const e of rd.committedEntries) {
          this.applied.get(id)!.push(e);
          if (e.type === 'conf') n.applyConfChange(e.data);
        }
        this.readStates.get(id)!.push(...rd.readStates);
        this.dropped.get(id)!.push(...rd.droppedReads);
        n.advance(rd);
      }
    }
  }

  /** The node snapshots its state machine (here: `data`) at its applied index and compacts. */
  compact(id: NodeId, data: Uint8Array, keepTail = 0): Snapshot {
    const n = this.node(id);
    const snap = n.compact(n.log.applied, data, keepTail);
    const st = this.stores.get(id)!;
    st.snapshot = snap;
    st.entries = st.entries.filter((e) => e.index > snap.meta.index);
    return snap;
  }

  /** The node loses everything it did not persist; it is down until restarted. */
  crash(id: NodeId): void {
    this.flushReady();
    this.down.add(id);
  }

  /** Rebuild the node from its store alone (log re-applied from its snapshot on). */
  restart(id: NodeId): RaftNode {
    const st = this.stores.get(id)!;
    const o = this.opts.get(id) ?? {};
    const snap = st.snapshot;
    const entries = snap ? st.entries.filter((e) => e.index > snap.meta.index) : st.entries;
    const n = this.add(id, {
      ...o,
      initial: { hardState: st.hardState, conf: this.conf, ...(snap ? { snapshot: snap } : {}), entries, applied: snap?.meta.index ?? 0 },
    });
    this.flushReady();
    return n;
  }

  /** Deliver one queued message (after the cut and the filter). Returns false when none. */
  deliverOne(): boolean {
    const m = this.queue.shift();
    if (!m) return false;
    if (this.cut.has(`${m.from}->${m.to}`) || this.down.has(m.to)) return true;
    const f = this.filter ? this.filter(m) : true;
    if (f === false) return true;
    this.nodes.get(m.to)?.step(f === true ? m : f);
    this.flushReady();
    return true;
  }

  /** Deliver until quiet. */
  deliverAll(limit = 100000): void {
    this.flushReady();
    let steps = 0;
    while (this.queue.length && steps++ < limit) this.deliverOne();
  }

  /** Deliver until quiet, then one tick: followers learn a new commit index from the next
   *  append or, when none follows, at the leader's next tick. */
  settle(): void {
    this.deliverAll();
    this.tick(1);
  }

  /** Put the held messages back in the queue. */
  release(): void {
    this.queue.push(...this.held.splice(0));
  }

  tick(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const [id, node] of this.nodes) if (!this.down.has(id)) node.tick();
      this.deliverAll();
    }
  }

  leader(): RaftNode | undefined {
    const ls = [...this.nodes.entries()].filter(([id, n]) => !this.down.has(id) && n.role === 'leader').map(([, n]) => n);
    if (ls.length === 0) return undefined;
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

  /** Tick until `pred` holds; returns the ticks it took. */
  tickUntil(pred: () => boolean, max = 500): number {
    for (let i = 0; i <= max; i++) {
      if (pred()) return i;
      this.tick();
    }
    throw new Error(`condition not reached within ${max} ticks`);
  }

  /** Elect `id` now (campaign and deliver). */
  elect(id: NodeId): RaftNode {
    this.node(id).campaign();
    this.deliverAll();
    const n = this.node(id);
    if (n.role !== 'leader') throw new Error(`${id} did not win (role ${n.role}, term ${n.term})`);
    return n;
  }
}
