// A TCP fault proxy for one directed peer link (dialer -> target), and the mesh of them a
// chaos cluster puts between its nodes.
//
// A real network cut is silent: packets vanish, nobody sends a reset, and TCP keeps the
// connection open while it retransmits. So a black-holed direction here stops READING from
// its source socket and forwards nothing; the kernel's buffers fill and TCP flow control
// stalls the sender, exactly as if its segments were being dropped and retransmitted. No
// byte is discarded: when the direction heals, what the sender managed to queue is delivered
// in order, as TCP delivers its retransmissions once the path is back. (Dropping the queued
// bytes instead would cut a WebSocket frame in half, which no network does to a TCP stream.)
// A cut that outlasts the peers' liveness timeout (ws ping, ~5 s) ends with the nodes
// dropping the link themselves and re-dialing, the way it ends on a real network.
//
// A close travels with the bytes: a FIN or reset from one side reaches the other only once
// the direction it travels in is open, so a node that gives up on a cut link is not
// noticed by its peer until the cut heals (or the peer's own liveness check fires).
import { createServer, connect, type Server, type Socket } from 'node:net';

export type Direction = 'forward' | 'backward';

/** One byte stream of a proxied connection: source -> sink, which can be held. */
class Pipe {
  private held = false;
  /** The source ended (FIN) or failed (reset) while held: deliver that on release. */
  private pendingEnd: 'end' | 'reset' | null = null;
  private ended = false;
  private delivered = false;

  constructor(
    private readonly source: Socket,
    private readonly sink: Socket,
  ) {
    source.on('data', (chunk: Buffer) => {
      // A paused socket can still emit what it had already read; keep it for later.
      if (this.held) {
        source.pause();
        source.unshift(chunk);
        return;
      }
      if (!sink.write(chunk)) {
        source.pause();
        sink.once('drain', () => {
          if (!this.held) source.resume();
        });
      }
    });
    source.on('end', () => {
      this.ended = true;
      this.finish('end');
    });
    source.on('error', () => this.finish('reset'));
    // A close without a FIN first is a reset; after a FIN, the end already travels.
    source.on('close', () => {
      if (!this.ended) this.finish('reset');
    });
  }

  hold(): void {
    this.held = true;
    this.source.pause();
  }

  release(): void {
    if (!this.held) return;
    this.held = false;
    if (this.pendingEnd !== null) {
      const how = this.pendingEnd;
      this.pendingEnd = null;
      this.deliverEnd(how);
      return;
    }
    this.source.resume();
  }

  private finish(how: 'end' | 'reset'): void {
    if (this.held) {
      // An 'end' waits in the paused stream anyway; a reset has to be remembered.
      if (this.pendingEnd === null || how === 'reset') this.pendingEnd = how;
      return;
    }
    this.deliverEnd(how);
  }

  private deliverEnd(how: 'end' | 'reset'): void {
    if (this.delivered || this.sink.destroyed) return;
    this.delivered = true;
    if (how === 'end') this.sink.end();
    else this.sink.destroy();
  }
}

interface ProxiedConnection {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly forward: Pipe;
  readonly backward: Pipe;
}

/**
 * Listens on a port of its own and forwards each connection to `targetPort`. "forward" is
 * the dialer -> target byte stream, "backward" the answers. Each direction can be held
 * (black-holed) independently; the state applies to live and future connections alike.
 */
export class LinkProxy {
  readonly targetPort: number;
  private server: Server | null = null;
  private listenPort = 0;
  private readonly connections = new Set<ProxiedConnection>();
  private readonly blocked: Record<Direction, boolean> = { forward: false, backward: false };

  constructor(targetPort: number) {
    this.targetPort = targetPort;
  }

  get port(): number {
    if (this.server === null) throw new Error('proxy is not listening');
    return this.listenPort;
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  /** Listens on `port` (0: any free port). */
  async listen(port = 0): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy has no address');
    this.listenPort = address.port;
    this.server = server;
  }

  isBlocked(direction: Direction): boolean {
    return this.blocked[direction];
  }

  setBlocked(direction: Direction, blocked: boolean): void {
    this.blocked[direction] = blocked;
    for (const c of this.connections) {
      const pipe = direction === 'forward' ? c.forward : c.backward;
      if (blocked) pipe.hold();
      else pipe.release();
    }
  }

  /** Number of connections open through the proxy right now. */
  get openConnections(): number {
    return this.connections.size;
  }

  async close(): Promise<void> {
    for (const c of this.connections) {
      c.client.destroy();
      c.upstream.destroy();
    }
    this.connections.clear();
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    client.setNoDelay(true);
    // Nothing is read from the dialer until the upstream connection exists.
    client.pause();
    const upstream = connect({ host: '127.0.0.1', port: this.targetPort });
    upstream.setNoDelay(true);
    upstream.pause();
    const refuse = (): void => {
      // The target is down: the dialer sees its connection reset, as it would from the
      // target's kernel.
      client.destroy();
      upstream.destroy();
    };
    upstream.once('error', refuse);
    upstream.once('connect', () => {
      upstream.off('error', refuse);
      const conn: ProxiedConnection = {
        client,
        upstream,
        forward: new Pipe(client, upstream),
        backward: new Pipe(upstream, client),
      };
      this.connections.add(conn);
      const forget = (): void => {
        if (client.destroyed && upstream.destroyed) this.connections.delete(conn);
      };
      client.on('close', forget);
      upstream.on('close', forget);
      if (this.blocked.forward) conn.forward.hold();
      else client.resume();
      if (this.blocked.backward) conn.backward.hold();
      else upstream.resume();
    });
    client.on('error', () => {
      // Reported through the pipe's close handling once the connection is up.
    });
  }
}

/** "a>b": the messages a sends to b. */
export type Edge = `${string}>${string}`;

export function edge(from: string, to: string): Edge {
  return `${from}>${to}`;
}

/**
 * One LinkProxy per ordered pair of nodes: proxy (a, b) carries the connection a dials to b.
 * Only the lower id dials today, but proxying both orders keeps cuts right whichever side
 * dials. Cutting a -> b holds a's bytes to b on both proxies of the pair.
 */
export class ProxyMesh {
  private readonly proxies = new Map<string, LinkProxy>();
  private readonly cuts = new Set<Edge>();

  private constructor(readonly ids: readonly string[]) {}

  /**
   * Proxies for every ordered pair; `peerPorts` are the nodes' real peer ports, and
   * `listenPort` hands out the port each proxy listens on (default: any free one).
   */
  static async create(peerPorts: ReadonlyMap<string, number>, listenPort: () => number = () => 0): Promise<ProxyMesh> {
    const mesh = new ProxyMesh([...peerPorts.keys()]);
    for (const dialer of mesh.ids) {
      for (const target of mesh.ids) {
        if (dialer === target) continue;
        const proxy = new LinkProxy(peerPorts.get(target)!);
        await proxy.listen(listenPort());
        mesh.proxies.set(`${dialer}>${target}`, proxy);
      }
    }
    return mesh;
  }

  /** The URL `dialer` should use to reach `target`. */
  urlFor(dialer: string, target: string): string {
    return this.proxy(dialer, target).url;
  }

  /** Directed edges cut right now. */
  get cutEdges(): readonly Edge[] {
    return [...this.cuts].sort();
  }

  /** Makes exactly `edges` cut (healing the others). */
  setCuts(edges: Iterable<Edge>): void {
    const wanted = new Set(edges);
    for (const a of this.ids) {
      for (const b of this.ids) {
        if (a === b) continue;
        const e = edge(a, b);
        const cut = wanted.has(e);
        if (cut) this.cuts.add(e);
        else this.cuts.delete(e);
        // a's bytes to b: the forward stream of a's dial to b, the backward stream of b's dial to a.
        this.proxy(a, b).setBlocked('forward', cut);
        this.proxy(b, a).setBlocked('backward', cut);
      }
    }
  }

  healAll(): void {
    this.setCuts([]);
  }

  async close(): Promise<void> {
    await Promise.all([...this.proxies.values()].map((p) => p.close()));
  }

  private proxy(dialer: string, target: string): LinkProxy {
    const p = this.proxies.get(`${dialer}>${target}`);
    if (!p) throw new Error(`no proxy ${dialer}>${target}`);
    return p;
  }
}
