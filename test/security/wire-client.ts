// A bare client-protocol connection for the security tests: exactly the frames a test asks
// for, over ws or wss (with the test's CA), with every pushed event recorded, and the close
// code and reason the node hung up with.
import type { ClientOptions, WebSocket } from 'ws';
import { openSocket, RawClient, type Reply } from '../support/raw-client.js';

export class WireClient extends RawClient {
  closeCode: number | null = null;
  closeReason = '';
  private readonly seqs = new Map<number, number>();
  private readonly closedWith: Promise<number>;

  private constructor(ws: WebSocket) {
    super(ws);
    this.closedWith = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        resolve(code);
      }),
    );
    // These tests provoke refusals; a socket error shows up as the close that follows it.
    ws.on('error', () => {});
  }

  static override async connect(url: string, options: ClientOptions = {}): Promise<WireClient> {
    return new WireClient(await openSocket(url, options));
  }

  /** Connect and say hello with `token`; throws if the hello is refused. */
  static async authenticated(url: string, token: string, options: ClientOptions = {}): Promise<WireClient> {
    const c = await WireClient.connect(url, options);
    const r = await c.call({ op: 'hello', version: 1, token });
    if (!r.ok) throw new Error(`hello refused: ${r.error.code} ${r.error.message}`);
    return c;
  }

  /** Send without waiting (for floods); the reply is collected like any other. */
  fire(body: Record<string, unknown>): Promise<Reply> {
    return this.call(body, 60_000);
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
    return this.closedWith;
  }

  override close(): void {
    this.ws.terminate();
  }
}
