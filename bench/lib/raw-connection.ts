// A bare client-protocol connection (src/protocol/codec.ts frames over ws) that carries many
// sessions at once: the sessions and memory workloads need tens of thousands of sessions,
// which one LockClient per session would not sustain in one client process.
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from '../../src/protocol/codec.js';
import type { ServerEvent, WireError } from '../../src/protocol/client-protocol.js';
import type { RequestBody } from '../../src/protocol/rpc.js';

export type Reply = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: WireError };

const CLOSED: Reply = { ok: false, error: { code: 'UNAVAILABLE', message: 'connection closed' } };

export class RawConnection {
  private readonly pending = new Map<number, (reply: Reply) => void>();
  private nextId = 0;
  private eventHandler: (event: ServerEvent) => void = () => {};
  private isClosed = false;

  private constructor(
    readonly url: string,
    private readonly ws: WebSocket,
  ) {
    ws.on('message', (data: Buffer) => this.onFrame(data));
    ws.on('close', () => {
      this.isClosed = true;
      for (const resolve of this.pending.values()) resolve(CLOSED);
      this.pending.clear();
    });
    ws.on('error', () => {}); // a close follows
  }

  static open(url: string, timeoutMs = 5_000): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { handshakeTimeout: timeoutMs });
      ws.once('open', () => resolve(new RawConnection(url, ws)));
      ws.once('error', (e) => reject(new Error(`${url}: ${e.message}`)));
    });
  }

  get closed(): boolean {
    return this.isClosed;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  onEvent(handler: (event: ServerEvent) => void): void {
    this.eventHandler = handler;
  }

  /** Send one request; resolves with its reply, or an error reply when the connection
   *  closes or nothing came back within `timeoutMs` (code TIMEOUT, as a node would say). */
  call(body: RequestBody, timeoutMs = 10_000): Promise<Reply> {
    if (this.isClosed) return Promise.resolve(CLOSED);
    const id = ++this.nextId;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, error: { code: 'TIMEOUT', message: `no answer to ${body.op} within ${timeoutMs} ms` } });
      }, timeoutMs);
      this.pending.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.ws.send(encodeFrame({ id, ...body }));
    });
  }

  close(): void {
    this.ws.close();
  }

  private onFrame(data: Buffer): void {
    const frame = decodeFrame(data) as Record<string, unknown>;
    const id = frame['id'];
    if (typeof id === 'number' && 'ok' in frame) {
      const resolve = this.pending.get(id);
      this.pending.delete(id);
      resolve?.(frame as unknown as Reply);
    } else if (typeof frame['event'] === 'string') {
      this.eventHandler(frame as unknown as ServerEvent);
    }
  }
}

/** The result of a successful reply, or a thrown error naming the code. */
export function resultOf(reply: Reply, what: string): unknown {
  if (!reply.ok) throw new Error(`${what}: ${reply.error.code} ${reply.error.message}`);
  return reply.result;
}
