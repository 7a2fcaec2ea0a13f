// A cluster of real PalisadeNodes in this process: the production node (Raft core, lock
// machine, driver, forwarding, leases, dispatch, membership) over the in-memory store,
// peer network and client port of src/inproc, on the system's clock. For suites that test
// the server's logic rather than processes, sockets, signals, TLS or LevelDB (those keep
// test/support/cluster.ts): it starts in milliseconds and needs no ports. The SDK reaches
// it through `MemorySockets.WebSocket`, frame for frame as over ws.
//
// A node can be crashed (its in-flight writes lost, its links dropped without a word) and
// restarted from what its disk held, its disk can be made slow or full, and links can be
// cut both ways or one way.
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

  private constructor(
    private readonly configs: ReadonlyMap<string, ClusterConfig>,
    logLevel: string,
  ) {
    this.ids = [...configs.keys()];
    for (const id of this.ids) this.disks.set(id, new MemoryDisk(id));
    this.logger = pino({ level: logLevel }, pino.destination(2));
  }

  static async start(opts: InProcessOptions = {}): Promise<InProcessCluster> {
    const n = opts.nodes ?? 3;
    const nodes = Array.from({ length: n }, (_, i) => ({
      id: `n${i + 1}`,
      peerUrl: `ws://127.0.0.1:${17100 + i + 1}`,
      clientUrl: `ws://127.0.0.1:${17000 + i + 1}`,
      dataDir: `inproc/n${i + 1}`,
    }));
    const base: Record<string, unknown> = {
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
    const c = new InProcessCluster(configs, opts.logLevel ?? 'silent');
    await Promise.all(c.ids.map((id) => c.startNode(id)));
    await c.waitForLeader();
    return c;
  }

  /** Starts (or restarts, from its disk) node `id`. */
  async startNode(id: string): Promise<PalisadeNode> {
    const config = this.configs.get(id)!;
    const node = await PalisadeNode.open({ config, id, onFatal: () => this.nodes_.delete(id), onRemoved: () => void this.stopNode(id) }, this.deps(id, config));
    await node.start();
    this.nodes_.set(id, node);
    return node;
  }

  private deps(id: string, config: ClusterConfig): NodeDeps {
    const self = config.nodes.find((n) => n.id === id)!;
    const clock: NodeClock = systemClock;
    return {
      clock,
      logger: this.logger.child({ node: id }),
      random: (n) => Math.floor(Math.random() * n),
      openStore: async () => new MemoryStore(this.disks.get(id)!, clock),
      peerNetwork: (peers) => this.net.endpoint(id, peers),
      clientPort: (handlers) => this.sockets.port(self.clientUrl, (conn) => handlers.onConnection(conn)),
      opsPort: () => null,
      join: async () => {
        throw new Error('an in-process node does not join with --join (add it with addMember and start it)');
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

  async start(id: string): Promise<PalisadeNode> {
    return this.startNode(id);
  }

  /** A raw protocol connection to the node at `url`, frame by frame (test/support/raw-client.ts). */
  async rawClient(url: string, timeoutMs = 10_000): Promise<RawClient> {
    const ws = new this.sockets.WebSocket(url);
    const socket: RawSocket = {
      send: (bytes) => ws.send(bytes),
      close: () => ws.close(),
      onMessage: (listener) => ws.addEventListener('message', (ev) => listener(ev.data as Uint8Array)),
      onClose: (listener) => ws.addEventListener('close', listener),
    };
    const client = RawClient.over(socket);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no open from ${url}`)), timeoutMs);
      ws.addEventListener('open', () => (clearTimeout(timer), resolve()));
      ws.addEventListener('close', () => (clearTimeout(timer), reject(new Error(`${url} refused the connection`))));
    });
    return client;
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

