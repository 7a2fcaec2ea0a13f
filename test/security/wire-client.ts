// A bare client-protocol connection for the security tests: exactly the frames a test asks
// for, over ws or wss (with the test's CA), with every pushed event recorded.
import WebSocket, { type ClientOptions } from 'ws';
import { decodeFrame, encodeFrame } from '../../src/transport/codec.js';
import type { ServerEvent, WireError } from '../../src/transport/client-protocol.js';

export type Reply = { ok: true; result: any } | { ok: false; error: WireError };

export class WireClient {
  readonly events: ServerEvent[] = [];
  closeCode: number | null = null;
  closeReason = '';
  private readonly pending = new Map<number, (r: Reply) => void>();
  private nextId = 0;
  private seqs = new Map<number, number>();
  private readonly closed: Promise<number>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const f = decodeFrame(data) as Record<string, unknown>;
      if (typeof f['id'] === 'number' && 'ok' in f) {
        this.pending.get(f['id'])?.(f as unknown as Reply);
        this.pending.delete(f['id']);
      } else if (typeof f['event'] === 'string') {
        this.events.push(f as unknown as ServerEvent);
      }
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        for (const r of this.pending.values()) r({ ok: false, error: { code: 'UNAVAILABLE', message: 'connection closed' } });
        this.pending.clear();
        resolve(code);
      }),
    );
    ws.on('error', () => {});
  }

  static async connect(url: string, options: ClientOptions = {}): Promise<WireClient> {
    const ws = new WebSocket(url, options);
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
    });
    return new WireClient(ws);
  }

  /** Connect and say hello with `token`; throws if the hello is refused. */
  static async authenticated(url: string, token: string, options: ClientOptions = {}): Promise<WireClient> {
    const c = await WireClient.connect(url, options);
    const r = await c.call({ op: 'hello', version: 1, token });
    if (!r.ok) throw new Error(`hello refused: ${r.error.code} ${r.error.message}`);
    return c;
  }

  call(body: Record<string, unknown>, timeoutMs = 10_000): Promise<Reply> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply to ${JSON.stringify(body)} within ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, (r) => {
        clearTimeout(t);
        resolve(r);
      });
      this.ws.send(encodeFrame({ id, ...body }));
    });
  }

  /** Send without waiting (for floods); the reply is collected like any other. */
  fire(body: Record<string, unknown>): Promise<Reply> {
    return this.call(body, 60_000);
  }

  async ok(body: Record<string, unknown>): Promise<any> {
    const r = await this.call(body);
    if (!r.ok) throw new Error(`${String(body['op'])} failed: ${r.error.code} ${r.error.message}`);
    return r.result;
  }

  /** A session-scoped request with the session's next seq. */
  sequenced(session: number, body: Record<string, unknown>): Promise<Reply> {
    const seq = (this.seqs.get(session) ?? 0) + 1;
    this.seqs.set(session, seq);
    return this.call({ ...body, session, seq });
  }

  async openSession(ttlMs = 30_000): Promise<number> {
    return (await this.ok({ op: 'openSession', ttlMs })).session as number;
  }

  whenClosed(): Promise<number> {
    return this.closed;
  }

  close(): void {
    this.ws.terminate();
  }
}
