// The simulated world of one seed: 3 or 5 production PalisadeNodes, each on its own virtual
// clock (drift, wall-clock steps, pauses), its own in-memory disk (fsync latency, writes lost
// at a crash, a full disk) and the in-memory peer network and client ports of src/inproc, all
// driven by the Scheduler; the faults come from the seed. Nodes may be given different files,
// as during a rolling config change.
import pino from 'pino';
import { validateConfig, type ClusterConfig } from '../../../src/config/cluster-config.js';
import { MemorySockets } from '../../../src/inproc/memory-client-port.js';
import { MemoryNetwork, type Wire } from '../../../src/inproc/memory-network.js';
import { MemoryDisk, MemoryStore } from '../../../src/inproc/memory-store.js';
import type { NodeStatus } from '../../../src/protocol/client-protocol.js';
import { PalisadeNode } from '../../../src/server/node.js';
import type { NodeDeps } from '../../../src/server/node-deps.js';
import { Prng } from '../../support/prng.js';
import { Scheduler, type SimNodeClock } from './scheduler.js';

export interface WorldOptions {
  readonly seed: number;
  readonly nodes: 3 | 5;
  /** Give some nodes other `sessions.*` values in their files (a rolling change). */
  readonly rollingConfig: boolean;
  /** `sessions` values of n2's file, for a planted bug that recognises its node by them. */
  readonly plantedFile?: Record<string, number>;
  /** A one-node cluster of another clusterId, reachable at an endpoint the clients are
   *  given among the real ones (a wrong seed list, a planted node). */
  readonly foreign?: boolean;
  readonly trace?: (line: string) => void;
}

const SILENT = pino({ level: 'silent' });
/** Where every node's wall clock starts (an arbitrary date), give or take a minute. */
const WALL_START = 1_800_000_000_000;

interface SimNode {
  readonly id: string;
  readonly clock: SimNodeClock;
  readonly disk: MemoryDisk;
  readonly config: ClusterConfig;
  node: PalisadeNode | null;
  /** Set while a start is in progress (open + start are asynchronous). */
  starting: boolean;
  /** The node stopped itself (removed, storage failed): it stays down. */
  fatal: string | null;
}

/** Links: lost connections, delays, partitions (both ways or one way), and paused endpoints.
 *  A link is a TCP connection: what it carries arrives in order or the connection breaks
 *  (`broken`), never a gap on a live link. */
class SimWire implements Wire {
  readonly cut = new Set<string>();
  private readonly lastAt = new Map<string, number>();
  /** The chance that a frame's connection breaks instead of carrying it. */
  dropRate = 0;
  broken: (from: string, to: string) => void = () => {};

  constructor(
    private readonly s: Scheduler,
    private readonly rng: Prng,
    private readonly ownerOf: (end: string) => string,
  ) {}

  connected(from: string, to: string): boolean {
    return !this.cut.has(`${this.ownerOf(from)}>${this.ownerOf(to)}`);
  }

  carry(from: string, to: string, deliver: () => void): void {
    if (!this.connected(from, to)) return;
    if (this.rng.chance(this.dropRate)) return void this.s.schedule('world', 0, () => this.broken(from, to));
    // In order per direction: a frame never overtakes an earlier one on the same link.
    const key = `${from}>${to}`;
    const at = Math.max(this.s.time + 0.05 + this.rng.float() * 2, this.lastAt.get(key) ?? 0);
    this.lastAt.set(key, at);
    this.s.schedule(this.ownerOf(to), at - this.s.time, () => {
      if (this.connected(from, to)) deliver();
    });
  }

  soon(fn: () => void): void {
    this.s.schedule('world', 0, fn);
  }
}

export class World {
  readonly s = new Scheduler();
  readonly rng: Prng;
  readonly sim = new Map<string, SimNode>();
  readonly ids: string[];
  readonly wire: SimWire;
  readonly net: MemoryNetwork;
  readonly sockets: MemorySockets;
  readonly clusterId = 'palisade-sim';
  /** The foreign cluster's client URL, when there is one. */
  readonly foreignUrl: string | null;
  private readonly urlToNode = new Map<string, string>();

  constructor(readonly o: WorldOptions) {
    this.rng = new Prng(o.seed);
    this.ids = Array.from({ length: o.nodes }, (_, i) => `n${i + 1}`);
    this.wire = new SimWire(this.s, this.rng, (end) => this.ownerOf(end));
    this.wire.broken = (from, to) => this.connectionLost(from, to);
    this.net = new MemoryNetwork(this.wire);
    this.sockets = new MemorySockets(this.wire);
    const nodes = this.ids.map((id, i) => ({ id, peerUrl: `ws://127.0.0.1:${17100 + i + 1}`, clientUrl: `ws://127.0.0.1:${17000 + i + 1}`, dataDir: `sim/${id}` }));
    for (const n of nodes) this.urlToNode.set(n.clientUrl, n.id);
    const base = {
      clusterId: this.clusterId,
      secret: 'simulated-cluster-secret-0123456789',
      nodes,
      raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 },
      sessions: { defaultTtlMs: 3_000, minTtlMs: 600, maxTtlMs: 600_000, lockDelayMs: 200 },
      snapshot: { entries: 50, keepTail: 20 },
      // Every simulated client shares one address: the per-address cap a small
      // sessions.maxSessions implies (a file of a rolling change) would refuse them, and what
      // is checked here is the cluster's cap, which the replicated settings decide.
      limits: { maxSessionsPerAddress: 1_000 },
    };
    this.foreignUrl = o.foreign ? 'ws://127.0.0.1:17999' : null;
    if (this.foreignUrl) {
      this.urlToNode.set(this.foreignUrl, 'f1');
      const config = validateConfig({ ...base, clusterId: 'palisade-foreign', nodes: [{ id: 'f1', peerUrl: 'ws://127.0.0.1:17998', clientUrl: this.foreignUrl, dataDir: 'sim/f1' }] }, '/');
      this.foreignNode = { id: 'f1', clock: this.s.nodeClock('f1', 0, WALL_START), disk: new MemoryDisk('f1'), config, node: null, starting: false, fatal: null };
    }
    for (const id of this.ids) {
      const rolling = o.rollingConfig && this.rng.chance(0.5);
      const sessions = id === 'n2' && o.plantedFile ? { ...base.sessions, ...o.plantedFile } : rolling ? { ...base.sessions, lockDelayMs: this.rng.pick([0, 1_000]), maxSessions: this.rng.pick([4, 1_000]) } : base.sessions;
      const config = validateConfig({ ...base, sessions }, '/');
      const drift = (this.rng.float() - 0.5) * 0.008; // within ±0.4 %: the SDK allows 1 % between a client and a node
      this.sim.set(id, { id, clock: this.s.nodeClock(id, drift, WALL_START + this.rng.range(-60_000, 60_000)), disk: new MemoryDisk(id), config, node: null, starting: false, fatal: null });
    }
  }

  private foreignNode: SimNode | null = null;
  private readonly foreignNet = new MemoryNetwork({ connected: () => true, carry: (_f, _t, d) => void this.s.schedule('f1', 0.5, d), soon: (fn) => void this.s.schedule('f1', 0, fn) });

  /** Starts the foreign cluster's node (it elects itself). */
  startForeign(): void {
    const n = this.foreignNode;
    if (!n) return;
    const deps = { ...this.deps(n), peerNetwork: () => this.foreignNet.endpoint('f1', new Map()) };
    void PalisadeNode.open({ config: n.config, id: 'f1' }, deps).then(async (node) => {
      n.node = node;
      await node.start();
    });
  }

  trace(line: string): void {
    this.o.trace?.(`[${this.s.time.toFixed(1)}] ${line}`);
  }

  /** A connection broke (a frame it carried was lost): a peer link goes down and comes back
   *  a little later; a client's connection closes at both ends (the SDK reconnects). */
  private connectionLost(from: string, to: string): void {
    const a = this.ownerOf(from);
    const b = this.ownerOf(to);
    const isNode = (x: string): boolean => this.sim.has(x);
    if (isNode(a) && isNode(b) && !this.wire.cut.has(`${a}>${b}`)) {
      this.wire.cut.add(`${a}>${b}`).add(`${b}>${a}`);
      this.net.reconcile();
      this.s.schedule('world', this.rng.range(5, 100), () => {
        this.wire.cut.delete(`${a}>${b}`);
        this.wire.cut.delete(`${b}>${a}`);
        this.net.reconcile();
      });
    } else if (isNode(a) !== isNode(b)) {
      const [client, node] = isNode(a) ? [b, a] : [a, b];
      this.sockets.breakConnections(client, this.clientUrl(node));
    }
  }

  /** Who owns an end of a link: a node id, a node's client URL (or a connection of it), or a client. */
  private ownerOf(end: string): string {
    const url = end.split('#')[0]!;
    return this.urlToNode.get(url) ?? end;
  }

  clientUrl(id: string): string {
    if (id === 'f1' && this.foreignUrl) return this.foreignUrl;
    return this.sim.get(id)!.config.nodes.find((n) => n.id === id)!.clientUrl;
  }

  get endpoints(): string[] {
    return this.ids.map((id) => this.clientUrl(id));
  }

  running(): string[] {
    return this.ids.filter((id) => this.sim.get(id)!.node !== null);
  }

  private deps(n: SimNode): NodeDeps {
    const rng = new Prng(this.rng.u32());
    return {
      clock: n.clock,
      logger: SILENT,
      random: (k) => rng.int(k),
      openStore: async () => new MemoryStore(n.disk, n.clock, () => `sim-${n.id}-${rng.u32().toString(16)}`),
      peerNetwork: (peers) => this.net.endpoint(n.id, peers),
      clientPort: (h) => this.sockets.port(this.clientUrl(n.id), (conn) => h.onConnection(conn)),
      opsPort: () => null,
      join: async () => {
        throw new Error('the simulator does not join nodes');
      },
    };
  }

  /** Starts node `id` from what its disk holds (now, in virtual time). */
  start(id: string): void {
    const n = this.sim.get(id)!;
    if (n.node || n.starting || n.fatal) return;
    n.starting = true;
    this.trace(`start ${id}`);
    let self: PalisadeNode | null = null;
    // Only this incarnation's own end counts: a crashed one's late failures (its in-flight
    // writes refused) are the crash, not a reason to stay down.
    const current = (): boolean => self !== null && n.node === self;
    const opts = {
      config: n.config,
      id,
      onFatal: (err: Error) => {
        if (!current()) return;
        n.fatal = err.message;
        this.trace(`${id} stopped: ${err.message}`);
        this.kill(id);
      },
      onRemoved: (why: string) => {
        if (!current()) return;
        n.fatal = why;
        this.kill(id);
      },
    };
    void PalisadeNode.open(opts, this.deps(n)).then(
      async (node) => {
        self = node;
        n.node = node;
        await node.start();
        n.starting = false;
      },
      (err: unknown) => {
        n.starting = false;
        n.fatal = `could not start: ${err instanceof Error ? err.message : String(err)}`;
        this.trace(`${id} ${n.fatal}`);
      },
    );
  }

  /** Node `id` crashes: writes in flight are lost, its links drop, its timers stop. */
  kill(id: string): void {
    const n = this.sim.get(id)!;
    const node = n.node;
    if (!node) return;
    this.trace(`crash ${id}`);
    n.node = null;
    n.disk.crash();
    this.s.resume(id);
    void node.stop().catch(() => {});
  }

  pause(id: string): void {
    this.trace(`pause ${id}`);
    this.s.pause(id);
  }

  resume(id: string): void {
    this.trace(`resume ${id}`);
    this.s.resume(id);
  }

  partition(a: string, others: readonly string[], oneWay: boolean): void {
    this.trace(`partition ${a} | ${others.join(',')}${oneWay ? ' (one way)' : ''}`);
    for (const b of others) {
      this.wire.cut.add(`${a}>${b}`);
      if (!oneWay) this.wire.cut.add(`${b}>${a}`);
    }
    this.net.reconcile();
  }

  heal(): void {
    this.trace('heal');
    this.wire.cut.clear();
    this.net.reconcile();
  }

  status(id: string): NodeStatus | null {
    const node = this.sim.get(id)!.node;
    return node && !this.s.isPaused(id) ? (node.status() as NodeStatus) : null;
  }

  /** The leader the running, unpaused nodes agree on, or null. */
  leader(): string | null {
    const ss = this.ids.map((id) => this.status(id)).filter((s): s is NodeStatus => s !== null);
    const leaders = ss.filter((s) => s.role === 'leader');
    if (leaders.length !== 1) return null;
    const l = leaders[0]!.id;
    return ss.filter((s) => s.leader === l).length * 2 > this.ids.length ? l : null;
  }

  async stopAll(): Promise<void> {
    for (const id of this.ids) this.s.resume(id);
    const foreign = this.foreignNode?.node;
    if (foreign) await foreign.stop().catch(() => {});
    for (const n of this.sim.values()) {
      const node = n.node;
      n.node = null;
      if (node) await node.stop().catch(() => {});
    }
  }
}
