// A bare client-protocol connection for the tests of the node's gate (tokens, session
// ownership, limits): exactly the frames a test asks for, with every pushed event recorded.
// Over ws or wss (with the test's CA), it also records the close code and reason the node
// hung up with; over an in-process cluster's socket (InProcessCluster.rawSocket) there are no
// close codes, as the memory client port has none.
import WebSocket, { type ClientOptions } from 'ws';
import { openSocket, RawClient, type RawSocket, type Reply } from './raw-client.js';

export class WireClient extends RawClient {
  /** How the node closed a ws connection; null until then, and always over a memory socket. */
  closeCode: number | null = null;
  closeReason = '';
  private readonly seqs = new Map<number, number>();
  private readonly closedWith: Promise<number | null>;

  private constructor(sock: WebSocket | RawSocket) {
    super(sock);
    this.closedWith = new Promise((resolve) => {
      if (!(sock instanceof WebSocket)) return sock.onClose(() => resolve(null));
      sock.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        resolve(code);
      });
      // These tests provoke refusals; a socket error shows up as the close that follows it.
      sock.on('error', () => {});
    });
  }

  /** A client on an open socket of an in-process cluster. */
  static override over(socket: RawSocket): WireClient {
    return new WireClient(socket);
  }

  static override async connect(url: string, options: ClientOptions = {}): Promise<WireClient> {
    return new WireClient(await openSocket(url, options));
  }

  /** Connect and say hello with `token`; throws if the hello is refused. */
  static async authenticated(url: string, token: string, options: ClientOptions = {}): Promise<WireClient> {
    return (await WireClient.connect(url, options)).hello(token);
  }

  /** Say hello with `token`; throws if the hello is refused. */
  async hello(token: string): Promise<this> {
    const r = await this.call({ op: 'hello', version: 1, token });
    if (!r.ok) throw new Error(`hello refused: ${r.error.code} ${r.error.message}`);
    return this;
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

  whenClosed(): Promise<number | null> {
    return this.closedWith;
  }

  /** Ends the connection at once (a ws socket is terminated, not closed with a handshake). */
  override close(): void {
    if (this.ws) this.ws.terminate();
    else this.socket.close();
  }
}
