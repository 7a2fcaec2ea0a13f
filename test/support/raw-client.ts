// A bare client-protocol connection for integration tests that check the server itself:
// it sends exactly the frames a test asks for and records every event pushed to it.
import WebSocket, { type ClientOptions } from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import type { ServerEvent, WireError } from '../../src/protocol/client-protocol.js';
import { within } from './within.js';

export type Reply = { ok: true; result: any } | { ok: false; error: WireError };

/**
 * A socket once it is open; rejects with the error that prevented it, or when no open came
 * within `timeoutMs` (a node that is gone or wedged fails the test, not leaves it waiting).
 * Once open, an error shows as the close that follows it.
 */
export async function openSocket(url: string, options: ClientOptions = {}, timeoutMs = 10_000): Promise<WebSocket> {
  const ws = new WebSocket(url, options);
  ws.on('error', () => {});
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  try {
    await within(opened, timeoutMs, () => `no open from ${url}`);
    return ws;
  } catch (e) {
    ws.terminate();
    throw e;
  }
}

/** What a RawClient needs of its socket: a ws WebSocket, or the SDK-side socket of an
 *  in-process cluster's client port (test/support/in-process-cluster.ts). */
export interface RawSocket {
  send(bytes: Uint8Array): void;
  close(): void;
  onMessage(listener: (bytes: Uint8Array) => void): void;
  onClose(listener: () => void): void;
}

function wsSocket(ws: WebSocket): RawSocket {
  return {
    send: (bytes) => ws.send(bytes),
    close: () => ws.close(),
    onMessage: (listener) => void ws.on('message', (data: Buffer) => listener(data)),
    onClose: (listener) => void ws.on('close', listener),
  };
}

export class RawClient {
  readonly events: ServerEvent[] = [];
  private readonly pending = new Map<number, (r: Reply) => void>();
  private nextId = 0;
  private eventWaiters: { pred: (e: ServerEvent) => boolean; resolve: (e: ServerEvent) => void }[] = [];
  closed = false;

  /** A raw client on an open socket. */
  static over(socket: RawSocket): RawClient {
    return new RawClient(socket);
  }

  readonly socket: RawSocket;
  /** The ws socket, for a client connected over ws (tests that poke at the socket itself). */
  readonly ws: WebSocket;

  protected constructor(sock: WebSocket | RawSocket) {
    const socket = sock instanceof WebSocket ? wsSocket(sock) : sock;
    this.socket = socket;
    this.ws = sock instanceof WebSocket ? sock : (undefined as unknown as WebSocket);
    socket.onMessage((data) => {
      const f = decodeFrame(data) as Record<string, unknown>;
      if (typeof f['id'] === 'number' && 'ok' in f) {
        this.pending.get(f['id'])?.(f as unknown as Reply);
        this.pending.delete(f['id']);
      } else if (typeof f['event'] === 'string') {
        const e = f as unknown as ServerEvent;
        this.events.push(e);
        this.eventWaiters = this.eventWaiters.filter((w) => (w.pred(e) ? (w.resolve(e), false) : true));
      }
    });
    socket.onClose(() => {
      this.closed = true;
      for (const r of this.pending.values()) r({ ok: false, error: { code: 'UNAVAILABLE', message: 'connection closed' } });
      this.pending.clear();
    });
  }

  static async connect(url: string, options: ClientOptions = {}): Promise<RawClient> {
    return new RawClient(await openSocket(url, options));
  }

  call(body: Record<string, unknown>, timeoutMs = 10_000): Promise<Reply> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply to ${JSON.stringify(body)} within ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, (r) => {
        clearTimeout(t);
        resolve(r);
      });
      this.socket.send(encodeFrame({ id, ...body }));
    });
  }

  /** Call and return the result, throwing on an error answer. */
  async ok(body: Record<string, unknown>): Promise<any> {
    const r = await this.call(body);
    if (!r.ok) throw new Error(`${String(body['op'])} failed: ${r.error.code} ${r.error.message}`);
    return r.result;
  }

  nextEvent(pred: (e: ServerEvent) => boolean, timeoutMs = 10_000): Promise<ServerEvent> {
    const seen = this.events.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('expected event did not arrive')), timeoutMs);
      this.eventWaiters.push({
        pred,
        resolve: (e) => {
          clearTimeout(t);
          resolve(e);
        },
      });
    });
  }

  close(): void {
    this.socket.close();
  }
}

/** A session on a raw connection, with its own sequence numbers. */
export class RawSession {
  private seq = 0;
  constructor(
    readonly client: RawClient,
    readonly id: number,
  ) {}

  static async open(client: RawClient, ttlMs: number): Promise<RawSession> {
    const r = await client.ok({ op: 'openSession', ttlMs });
    return new RawSession(client, r.session);
  }

  call(body: Record<string, unknown>): Promise<Reply> {
    return this.client.call({ ...body, session: this.id, seq: ++this.seq });
  }
}
