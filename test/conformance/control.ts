// What a conformance runner may ask of the cluster it runs against, over HTTP on
// 127.0.0.1 (PALISADE_CONTROL): kill the leader, restart what was killed, and put a
// pausable TCP relay in front of a node (a holder that talks only through it can be
// "paused": nothing it sends or is sent moves until it is resumed, as for a stopped
// process or a cut network). test/conformance/README.md describes the routes.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { TestCluster } from '../support/cluster.js';

/** A TCP relay to one address; pause() stops every byte both ways (new connections wait). */
class Relay {
  readonly server: Server;
  private paused = false;
  private readonly pairs = new Set<[Socket, Socket]>();
  private readonly waiting: Socket[] = [];

  constructor(private readonly host: string, private readonly port: number) {
    this.server = createServer((client) => {
      client.on('error', () => client.destroy());
      if (this.paused) {
        client.pause();
        this.waiting.push(client);
      } else this.pipe(client);
    });
  }

  listen(): Promise<string> {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve(`127.0.0.1:${(this.server.address() as AddressInfo).port}`)));
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.port, this.host);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const end = (): void => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.paused) this.pausePair(pair);
  }

  private pausePair([a, b]: [Socket, Socket]): void {
    a.unpipe();
    b.unpipe();
    a.pause();
    b.pause();
  }

  pause(): void {
    this.paused = true;
    for (const pair of this.pairs) this.pausePair(pair);
  }

  resume(): void {
    this.paused = false;
    for (const [a, b] of this.pairs) {
      a.pipe(b);
      b.pipe(a);
    }
    for (const client of this.waiting.splice(0)) {
      client.resume();
      if (!client.destroyed) this.pipe(client);
    }
  }

  close(): void {
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    for (const s of this.waiting) s.destroy();
    this.server.close();
  }
}

export class Control {
  private http: HttpServer | null = null;
  private readonly relays = new Map<string, Relay>();
  private readonly killed = new Set<string>();

  constructor(private readonly cluster: TestCluster) {}

  /** Starts the control server; resolves with its base URL. */
  async start(): Promise<string> {
    this.http = createHttpServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://control');
      this.route(req.method ?? 'GET', url)
        .then((body) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        })
        .catch((e: unknown) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: (e as Error).message }));
        });
    });
    await new Promise<void>((r) => this.http!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  private async route(method: string, url: URL): Promise<unknown> {
    if (method !== 'POST') throw new Error('POST only');
    switch (url.pathname) {
      case '/kill-leader': {
        const leader = await this.cluster.waitForLeader(15_000, [...this.killed]);
        await this.cluster.signal(leader, 'SIGKILL');
        this.killed.add(leader);
        return { killed: leader };
      }
      case '/restart':
        await this.restart();
        return {};
      case '/relay': {
        const node = new URL(this.cluster.nodes[0]!.clientUrl);
        const relay = new Relay(node.hostname, Number(node.port));
        const hostPort = await relay.listen();
        this.relays.set(hostPort, relay);
        return { hostPort };
      }
      case '/relay/pause':
      case '/relay/resume': {
        const relay = this.relays.get(url.searchParams.get('relay') ?? '');
        if (!relay) throw new Error(`no relay ${url.searchParams.get('relay')}`);
        if (url.pathname.endsWith('pause')) relay.pause();
        else relay.resume();
        return {};
      }
      default:
        throw new Error(`no route ${url.pathname}`);
    }
  }

  /** Starts every killed node again and waits for an agreed leader. */
  async restart(): Promise<void> {
    for (const id of [...this.killed]) {
      await this.cluster.start(id);
      this.killed.delete(id);
    }
    await this.cluster.waitForLeader(15_000);
  }

  async stop(): Promise<void> {
    for (const r of this.relays.values()) r.close();
    this.relays.clear();
    await new Promise<void>((r) => (this.http ? this.http.close(() => r()) : r()));
  }
}
