// The client port in memory (the ClientListener contract, src/transport/contracts.ts), and
// the client side of its sockets as the SDK's WebSocketLike, for in-process clusters and the
// simulator: an SDK built with `MemorySockets.WebSocket` talks to a node as it would over
// ws, frame for frame (the same codec and the same request validation), with no socket. The
// transport's own limits (frame sizes, rates, pre-authentication bounds) are the ws port's
// and are tested on real sockets.
import { EventEmitter } from 'node:events';
import type { ServerFrame } from '../protocol/client-protocol.js';
import { CLOSE_CODES } from '../protocol/client-protocol.js';
import { decodeFrame, encodeFrame } from '../protocol/codec.js';
import { isRequestError, parseRequest } from '../protocol/validate.js';
import type { WebSocketConstructor, WebSocketLike } from '../client/connection.js';
import type { ClientServerStats } from '../transport/client-server.js';
import { zeroClientServerStats, type ClientConn, type ClientConnEvents, type ClientListener } from '../transport/contracts.js';

/** How frames travel between the SDK and a node: `carry` delivers later (or never, when the
 *  simulator drops the connection), in order per direction. `from` and `to` name the client
 *  (its name) and the node's end (the node's client URL, then `URL#connection`). */
export interface SocketWire {
  carry(from: string, to: string, deliver: () => void): void;
}

const OPEN = 1;
const CLOSED = 3;

/** Every memory client port of one cluster, by URL: what `new WebSocket(url)` reaches. */
export class MemorySockets {
  private readonly ports = new Map<string, MemoryClientPort>();
  private readonly open = new Set<MemoryClientSocket>();
  private nextClient = 0;

  constructor(private readonly wire: SocketWire) {}

  /** The port a node at `url` listens on (a new one each time the node starts). */
  port(url: string, onConnection: (conn: ClientConn) => void): MemoryClientPort {
    return new MemoryClientPort(url, this, onConnection);
  }

  /** @internal */
  listen(url: string, port: MemoryClientPort | null): void {
    if (port) this.ports.set(url, port);
    else this.ports.delete(url);
  }

  /** The WebSocket constructor an SDK client uses to reach these ports. */
  get WebSocket(): WebSocketConstructor {
    return this.webSocketFor(`client-${++this.nextClient}`);
  }

  /** The same, for a client with a name the wire knows it by (the simulator's clients). */
  webSocketFor(client: string): WebSocketConstructor {
    const sockets = this;
    return class extends MemoryClientSocket {
      constructor(url: string) {
        super(url, sockets, client);
      }
    };
  }

  /** Breaks every connection between `client` and the node at `url` (a connection lost:
   *  both ends see it close, as when a TCP connection is reset). */
  breakConnections(client: string, url: string): void {
    for (const socket of [...this.open]) if (socket.client === client && socket.url === url) socket.reset();
  }

  /** @internal */
  track(socket: MemoryClientSocket, open: boolean): void {
    if (open) this.open.add(socket);
    else this.open.delete(socket);
  }

  /** @internal */
  dial(url: string, client: MemoryClientSocket): MemoryServerConn | null {
    const port = this.ports.get(url);
    return port ? port.accept(client, client.client) : null;
  }

  /** @internal */
  carry(from: string, to: string, deliver: () => void): void {
    this.wire.carry(from, to, deliver);
  }
}

/** The SDK's end of one connection. */
export class MemoryClientSocket implements WebSocketLike {
  binaryType = 'nodebuffer';
  readyState = 0;
  private server: MemoryServerConn | null = null;
  private readonly listeners = new Map<string, ((event?: { readonly data: unknown }) => void)[]>();

  constructor(
    readonly url: string,
    private readonly sockets: MemorySockets,
    /** Who dials: the wire carries this socket's frames from it. */
    readonly client: string,
  ) {
    sockets.carry(client, url, () => {
      if (this.readyState !== 0) return;
      this.server = sockets.dial(url, this);
      if (!this.server) {
        this.fire('error');
        this.closed();
        return;
      }
      this.readyState = OPEN;
      sockets.track(this, true);
      this.fire('open');
    });
  }

  addEventListener(type: 'message', listener: (event: { readonly data: unknown }) => void): void;
  addEventListener(type: 'open' | 'close' | 'error', listener: () => void): void;
  addEventListener(type: string, listener: (event: { readonly data: unknown }) => void): void {
    const list = this.listeners.get(type) ?? [];
    list.push(listener as (event?: { readonly data: unknown }) => void);
    this.listeners.set(type, list);
  }

  send(data: Uint8Array): void {
    if (this.readyState !== OPEN || !this.server) return;
    const copy = new Uint8Array(data);
    const server = this.server;
    this.sockets.carry(this.client, server.name, () => server.receive(copy));
  }

  close(): void {
    if (this.readyState === CLOSED) return;
    const server = this.server;
    this.closed();
    if (server) this.sockets.carry(this.client, server.name, () => server.peerClosed());
  }

  terminate(): void {
    this.close();
  }

  /** @internal the node's side sent a frame. */
  deliver(bytes: Uint8Array): void {
    if (this.readyState === OPEN) this.fire('message', { data: Buffer.from(bytes) });
  }

  /** @internal */
  closed(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.sockets.track(this, false);
    this.fire('close');
  }

  /** @internal the connection is lost: both ends close at once, nothing in flight arrives. */
  reset(): void {
    const server = this.server;
    this.closed();
    server?.peerClosed();
  }

  private fire(type: string, event?: { readonly data: unknown }): void {
    for (const l of this.listeners.get(type) ?? []) l(event);
  }
}

/** The node's end of one connection. */
export class MemoryServerConn extends EventEmitter<ClientConnEvents> implements ClientConn {
  private open = true;

  constructor(
    readonly id: number,
    readonly remoteAddress: string,
    private readonly client: MemoryClientSocket,
    private readonly port: MemoryClientPort,
  ) {
    super();
  }

  /** Where this connection's frames come from, for the wire. */
  get name(): string {
    return `${this.port.url}#${this.id}`;
  }

  get isOpen(): boolean {
    return this.open;
  }

  authenticated(): void {}

  send(frame: ServerFrame): boolean {
    if (!this.open) return false;
    const bytes = encodeFrame(frame);
    this.port.carry(this.name, this.client.client, () => this.client.deliver(bytes));
    return true;
  }

  /** In memory a frame is one buffer however it is sent. */
  sendStreamed(frame: ServerFrame): void {
    this.send(frame);
  }

  /** Closes from the node's side (the node stops). */
  close(): void {
    if (!this.open) return;
    this.peerClosed();
    this.port.carry(this.name, this.client.client, () => this.client.closed());
  }

  /** @internal a frame from the SDK: decoded and validated as the ws port does. */
  receive(bytes: Uint8Array): void {
    if (!this.open) return;
    const parsed = parseRequest(decodeFrame(bytes));
    if (!isRequestError(parsed)) return void this.emit('request', parsed);
    if (parsed.id !== undefined) this.send({ id: parsed.id, ok: false, error: parsed.error });
    else this.close();
  }

  /** @internal */
  peerClosed(): void {
    if (!this.open) return;
    this.open = false;
    this.port.forget(this);
    this.emit('close', CLOSE_CODES.GOING_AWAY, '');
  }
}

export class MemoryClientPort implements ClientListener {
  private readonly conns = new Set<MemoryServerConn>();
  private nextId = 1;
  private requests = 0;
  private accepted = 0;

  constructor(
    readonly url: string,
    private readonly sockets: MemorySockets,
    private readonly onConnection: (conn: ClientConn) => void,
  ) {}

  async start(): Promise<void> {
    this.sockets.listen(this.url, this);
  }

  async stop(): Promise<void> {
    this.sockets.listen(this.url, null);
    for (const c of [...this.conns]) c.close();
  }

  connectionCount(): number {
    return this.conns.size;
  }

  stats(): ClientServerStats {
    return { ...zeroClientServerStats(), connections: this.accepted, requests: this.requests };
  }

  /** @internal */
  accept(client: MemoryClientSocket, remote: string): MemoryServerConn {
    const conn = new MemoryServerConn(this.nextId++, remote, client, this);
    this.conns.add(conn);
    this.accepted++;
    conn.on('request', () => void this.requests++);
    this.onConnection(conn);
    return conn;
  }

  /** @internal */
  forget(conn: MemoryServerConn): void {
    this.conns.delete(conn);
  }

  /** @internal */
  carry(from: string, to: string, deliver: () => void): void {
    this.sockets.carry(from, to, deliver);
  }
}
