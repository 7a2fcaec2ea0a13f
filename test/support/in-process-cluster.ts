// A cluster of real PalisadeNodes in this process: the production node (Raft core, lock
// machine, driver, forwarding, leases, dispatch, membership) over the in-memory store,
// peer network and client port of src/inproc, on the system's clock. For suites that test
// the server's logic rather than processes, sockets, signals, TLS or LevelDB (those keep
// test/support/cluster.ts; docs/internals.md lists which suites are which): it starts in
// milliseconds and needs no ports. The SDK reaches it through `MemorySockets.WebSocket`,
// frame for frame as over ws.
//
// A node can be crashed (its in-flight writes lost, its links dropped without a word) and
// restarted from what its disk held, its disk can be made slow or full, and links can be
// cut both ways or one way. New members join as `serve --join` joins them, and each node's
// log can be kept for a test to read.
import pino, { type Logger } from 'pino';
import { LockClient, type LockClientOptions } from '../../src/client/index.js';
import { validateConfig, type ClusterConfig } from '../../src/config/cluster-config.js';
import { MemorySockets } from '../../src/inproc/memory-client-port.js';
import { MemoryNetwork, type Wire } from '../../src/inproc/memory-network.js';
import { MemoryDisk, MemoryStore } from '../../src/inproc/memory-store.js';
import type { NodeStatus, RequestBody, Response } from '../../src/protocol/client-protocol.js';
import type { Op, ResultOf } from '../../src/protocol/ops.js';
import { readAnswer } from '../../src/protocol/results.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import { systemClock, type NodeClock } from '../../src/server/clock.js';
import { RawClient, type RawSocket } from './raw-client.js';
import { WireClient } from './wire-client.js';
import { PalisadeNode } from '../../src/server/node.js';
import type { NodeDeps } from '../../src/server/node-deps.js';

export interface InProcessOptions {
  readonly nodes?: number;
  /** Sections merged into the config (sessions, raft, snapshot, auth, limits ...). */
  readonly config?: Record<string, unknown>;
  /** The same, named as TestCluster names it. */
  readonly extraConfig?: Record<string, unknown>;
  /** Per node: sections merged into that node's own config (a rolling change). */
  readonly perNode?: Record<string, Record<string, Record<string, unknown>>>;
  /** Log to stderr at this level (default: silent). */
  readonly logLevel?: string;
  /** Keep each node's log lines (info and above) for logOf. */
  readonly keepLogs?: boolean;
}

type NodeSpec = { readonly id: string; readonly peerUrl: string; readonly clientUrl: string; readonly dataDir: string };

/** Node number `k`'s addresses: never dialed, only names for the memory ports and peers. */
function nodeSpec(k: number): NodeSpec {
  return { id: `n${k}`, peerUrl: `ws://127.0.0.1:${17100 + k}`, clientUrl: `ws://127.0.0.1:${17000 + k}`, dataDir: `inproc/n${k}` };
}

/** Links cut both ways (a partition) or one way, by "from>to". */
class CuttableWire implements Wire {
  readonly cut = new Set<string>();
  connected(from: string, to: string): boolean {
    return !this.cut.has(`${from}>${to}`);
  }
  carry(from: string, to: string, deliver: () => void): void {
    if (this.connected(from, to)) setImmediate(deliver);
  }
  soon(fn: () => void): void {
    setImmediate(fn);
  }
}

export class InProcessCluster {
  readonly ids: string[];
  readonly disks = new Map<string, MemoryDisk>();
  private readonly nodes_ = new Map<string, PalisadeNode>();
  readonly sockets = new MemorySockets({ carry: (_from, _to, deliver) => setImmediate(deliver) });
  private readonly wire = new CuttableWire();
  readonly net = new MemoryNetwork(this.wire);
  private readonly clients: LockClient[] = [];
  private readonly logger: Logger;
  /** Each node's log lines, when the cluster keeps them (keepLogs). */
  private readonly logs = new Map<string, string[]>();

  private constructor(
    /** The config every founding node's own is made from; a joining node's lists itself too. */
    private readonly base: Record<string, unknown> & { readonly nodes: readonly NodeSpec[] },
    private readonly configs: Map<string, ClusterConfig>,
    private readonly opts: InProcessOptions,
  ) {
    this.ids = [...configs.keys()];
    for (const id of this.ids) this.disks.set(id, new MemoryDisk(id));
    this.logger = pino({ level: opts.logLevel ?? 'silent' }, pino.destination(2));
  }

  static async start(opts: InProcessOptions = {}): Promise<InProcessCluster> {
    const nodes = Array.from({ length: opts.nodes ?? 3 }, (_, i) => nodeSpec(i + 1));
    const base: Record<string, unknown> & { nodes: NodeSpec[] } = {
      clusterId: 'palisade-inproc',
      secret: 'in-process-cluster-secret-0123456789',
      nodes,
      raft: { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 },
      sessions: { defaultTtlMs: 10_000, minTtlMs: 600, maxTtlMs: 600_000, lockDelayMs: 0 },
    };
    for (const [section, values] of Object.entries({ ...opts.config, ...opts.extraConfig })) base[section] = { ...(base[section] as object | undefined), ...(values as object) };
    const configs = new Map<string, ClusterConfig>();
    for (const { id } of nodes) {
      const own: Record<string, unknown> = { ...base };
      for (const [section, values] of Object.entries(opts.perNode?.[id] ?? {})) own[section] = { ...(own[section] as object | undefined), ...values };
      configs.set(id, validateConfig(own, process.cwd()));
    }
    const c = new InProcessCluster(base, configs, opts);
    await c.startAll();
    await c.waitForLeader();
    return c;
  }

  /** Starts every node (again, from its disk, after a whole-cluster stop). */
  async startAll(): Promise<void> {
    await Promise.all(this.ids.map((id) => this.startNode(id)));
  }

  /** A new node, not a founding member (TestCluster.addNodeSpec): its config lists the
   *  founding members and itself; start it with `join`. */
  addNodeSpec(id: string): { id: string; clientUrl: string } {
    const spec = { ...nodeSpec(this.ids.length + 1), id };
    this.configs.set(id, validateConfig({ ...this.base, nodes: [...this.base.nodes, spec] }, process.cwd()));
    this.ids.push(id);
    this.disks.set(id, new MemoryDisk(id));
    return this.node(id);
  }

  /** Starts (or restarts, from its disk) node `id`; with `join`, as `serve --join` starts a
   *  new member: it asks the cluster at those client URLs to add it. */
  async startNode(id: string, opts: { join?: readonly string[] } = {}): Promise<PalisadeNode> {
    const config = this.configs.get(id)!;
    const node = await PalisadeNode.open(
      { config, id, ...(opts.join ? { join: opts.join } : {}), onFatal: () => this.nodes_.delete(id), onRemoved: () => void this.stopNode(id) },
      this.deps(id, config),
    );
    await node.start();
    this.nodes_.set(id, node);
    return node;
  }

  /** What node `id` logged (info and above), for a cluster started with keepLogs. */
  logOf(id: string): string {
    const lines = this.logs.get(id);
    if (!lines) throw new Error(`no log of ${id}: start the cluster with keepLogs`);
    return lines.join('');
  }

  private loggerOf(id: string): Logger {
    if (!this.opts.keepLogs) return this.logger.child({ node: id });
    const lines = this.logs.get(id) ?? [];
    this.logs.set(id, lines);
    const echo = (this.opts.logLevel ?? 'silent') !== 'silent';
    const level = echo && this.logger.levelVal < pino.levels.values['info']! ? this.logger.level : 'info';
    return pino({ level, base: { node: id } }, { write: (line: string) => (lines.push(line), echo && process.stderr.write(line)) });
  }

  private deps(id: string, config: ClusterConfig): NodeDeps {
    const self = config.nodes.find((n) => n.id === id)!;
    const clock: NodeClock = systemClock;
    return {
      clock,
      logger: this.loggerOf(id),
      random: (n) => Math.floor(Math.random() * n),
      openStore: async () => new MemoryStore(this.disks.get(id)!, clock),
      peerNetwork: (peers) => this.net.endpoint(id, peers),
      clientPort: (handlers) => this.sockets.port(self.clientUrl, (conn) => handlers.onConnection(conn)),
      opsPort: () => null,
      // What joinCluster (src/server/membership/join.ts) asks, over the memory port instead
      // of a ws rpc: the members, after adding this node as a learner if it is not one yet.
      join: async (urls) => {
        for (let attempt = 0; ; attempt++) {
          const url = urls[attempt % urls.length]!;
          try {
            const members = await this.rpc(url, { op: 'members' }, 3_000);
            if (members.some((m) => m.id === id)) return [...members];
            await this.rpc(url, { op: 'addMember', member: id, peerUrl: self.peerUrl, clientUrl: self.clientUrl }, 10_000);
          } catch (e) {
            if (attempt >= 100) throw e;
            await new Promise((r) => setTimeout(r, 100)); // an election or a member's restart
          }
        }
      },
    };
  }

  /** Stops node `id` cleanly (SIGTERM). */
  async stopNode(id: string): Promise<void> {
    const node = this.nodes_.get(id);
    this.nodes_.delete(id);
    await node?.stop();
  }

  /** Node `id` crashes (SIGKILL): writes in flight are lost, links drop without a word. */
  async crash(id: string): Promise<void> {
    const node = this.nodes_.get(id);
    if (!node) return;
    this.nodes_.delete(id);
    this.disks.get(id)!.crash();
    await node.stop().catch(() => {}); // its timers and ports; the disk refuses its late writes
  }

  /** Cuts the links between `a` and every node of `b` (both ways unless `oneWay`). */
  partition(a: string, b: readonly string[], oneWay = false): void {
    for (const x of b) {
      this.wire.cut.add(`${a}>${x}`);
      if (!oneWay) this.wire.cut.add(`${x}>${a}`);
    }
    this.net.reconcile();
  }

  heal(): void {
    this.wire.cut.clear();
    this.net.reconcile();
  }

  url(id: string): string {
    return this.configs.get(id)!.nodes.find((n) => n.id === id)!.clientUrl;
  }

  get endpoints(): string[] {
    return this.ids.map((id) => this.url(id));
  }

  // ---- the surface of TestCluster (test/support/cluster.ts), for suites that run on both ----

  get nodes(): { id: string; clientUrl: string }[] {
    return this.ids.map((id) => ({ id, clientUrl: this.url(id) }));
  }

  node(id: string): { id: string; clientUrl: string } {
    return { id, clientUrl: this.url(id) };
  }

  /** Running nodes (as TestCluster's processes). */
  get procs(): ReadonlyMap<string, PalisadeNode> {
    return this.nodes_;
  }

  /** SIGKILL crashes node `id`; SIGTERM stops it cleanly. */
  signal(id: string, sig: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    return sig === 'SIGKILL' ? this.crash(id) : this.stopNode(id);
  }

  async start(id: string, opts: { join?: readonly string[] } = {}): Promise<PalisadeNode> {
    return this.startNode(id, opts);
  }

  /** A raw protocol connection to the node at `url`, frame by frame (test/support/raw-client.ts). */
  async rawClient(url: string, timeoutMs = 10_000): Promise<RawClient> {
    return RawClient.over(await this.rawSocket(url, timeoutMs));
  }

  /** A gate-testing client of the node at `url` (test/support/wire-client.ts), said hello to
   *  with `token` when one is given. */
  async wireClient(url: string, token?: string): Promise<WireClient> {
    const client = WireClient.over(await this.rawSocket(url));
    return token === undefined ? client : client.hello(token);
  }

  /** An open socket to the node at `url`, for a client of raw frames (RawClient.over,
   *  WireClient.over). */
  async rawSocket(url: string, timeoutMs = 10_000): Promise<RawSocket> {
    const ws = new this.sockets.WebSocket(url);
    // A node sends nothing before a client's first frame, so a client built on the socket
    // once it is open (RawClient.over) misses nothing.
    const socket: RawSocket = {
      send: (bytes) => ws.send(bytes),
      close: () => ws.close(),
      onMessage: (listener) => ws.addEventListener('message', (ev) => listener(ev.data as Uint8Array)),
      onClose: (listener) => ws.addEventListener('close', listener),
    };
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no open from ${url}`)), timeoutMs);
      ws.addEventListener('open', () => (clearTimeout(timer), resolve()));
      ws.addEventListener('close', () => (clearTimeout(timer), reject(new Error(`${url} refused the connection`))));
    });
    return socket;
  }

  /** An SDK client of this cluster (closed by stop()). */
  async client(options: Partial<LockClientOptions> = {}): Promise<LockClient> {
    const client = await LockClient.connect({ endpoints: this.endpoints, WebSocket: this.sockets.WebSocket, ...options });
    this.clients.push(client);
    return client;
  }

  /** One request to node `id` (or to a client URL), as the CLI's rpc sends it, its answer
   *  read as the CLI reads it (src/protocol/results.ts). */
  async rpc<O extends Op>(idOrUrl: string, body: RequestBody & { readonly op: O }, timeoutMs = 5_000): Promise<ResultOf<O>> {
    const answer = readAnswer(body.op, await this.rawRpc(idOrUrl, body, timeoutMs));
    if (answer.ok) return answer.result;
    throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
  }

  /** The response frame to one request, as the node sent it (its result not read). */
  rawRpc(idOrUrl: string, body: RequestBody, timeoutMs = 5_000): Promise<Response> {
    const url = this.ids.includes(idOrUrl) ? this.url(idOrUrl) : idOrUrl;
    return new Promise<Response>((resolve, reject) => {
      const ws = new this.sockets.WebSocket(url);
      const timer = setTimeout(() => (ws.close(), reject(new Error(`${url} did not answer within ${timeoutMs} ms`))), timeoutMs);
      ws.addEventListener('open', () => ws.send(encodeFrame({ id: 1, ...body })));
      ws.addEventListener('close', () => (clearTimeout(timer), reject(Object.assign(new Error(`${url} closed the connection`), { code: 'UNAVAILABLE' }))));
      ws.addEventListener('message', (ev) => {
        const frame = decodeFrame(ev.data as Uint8Array) as Response;
        if (frame.id !== 1) return;
        clearTimeout(timer);
        resolve(frame);
        ws.close();
      });
    });
  }

  async status(id: string): Promise<NodeStatus | null> {
    return (this.nodes_.get(id)?.status() as NodeStatus | undefined) ?? null;
  }

  /** Every node's status in id order, null for a node that is not running. */
  async statuses(): Promise<(NodeStatus | null)[]> {
    return Promise.all(this.ids.map((id) => this.status(id)));
  }

  /** Waits until the running nodes agree on a leader (not in `exclude`); returns it. */
  async waitForLeader(timeoutMs = 10_000, exclude: readonly string[] = []): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const statuses = [...this.nodes_.values()].map((n) => n.status());
      const leaders = new Set(statuses.map((s) => s.leader));
      const [leader] = leaders;
      if (leaders.size === 1 && leader && !exclude.includes(leader) && statuses.some((s) => s.id === leader && s.role === 'leader')) return leader;
      if (Date.now() > deadline) throw new Error(`no agreed leader within ${timeoutMs} ms: ${JSON.stringify(statuses.map((s) => [s.id, s.role, s.leader, s.term]))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.clients.map((c) => c.close()));
    await Promise.allSettled([...this.nodes_.keys()].map((id) => this.stopNode(id)));
  }
}

