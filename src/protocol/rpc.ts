// One-shot requests to a node's client port, for CLI commands that need no session
// (status, locks, get) and for a joining node. Sessions and retries live in the SDK. It is
// the protocol's simplest client, not the node's networking, so it lives here.
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from './codec.js';
import { PROTOCOL_VERSION, type RequestBody, type Response } from './client-protocol.js';
import type { Op, ResultOf } from './ops.js';
import { readAnswer } from './results.js';

/** How to prove who we are and whom to trust; everything optional (auth and TLS off). */
export interface RpcCredentials {
  /** Bearer token, sent in a hello before the request. */
  readonly token?: string;
  /** CA that signs the nodes' certificates (wss://); default the system's roots. */
  readonly ca?: string | Buffer;
  /** Client certificate and key, for a client port that requires one. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
}

export type { RequestBody } from './client-protocol.js';

export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Send one request to `url` and resolve with its result (or reject with RpcError). With a
 *  token, a hello carrying it goes first and its refusal is the rejection. */
export async function rpc<O extends Op>(url: string, body: RequestBody & { readonly op: O }, timeoutMs = 2_000, credentials: RpcCredentials = {}): Promise<ResultOf<O>> {
  const deadline = Date.now() + timeoutMs;
  const c = await RpcConnection.open(url, timeoutMs, credentials);
  try {
    return await c.call<O>(body, Math.max(1, deadline - Date.now()), timeoutMs);
  } finally {
    c.close();
  }
}

interface Pending {
  /** The request's op, to read its answer by (results.ts). */
  readonly op: Op;
  readonly resolve: (result: unknown) => void;
  readonly reject: (e: RpcError) => void;
  readonly timer: NodeJS.Timeout;
}

/** One connection for a sequence of requests to the same node (a backup read a chunk at a
 *  time: its file lives on the node that wrote it). Requests are answered in any order. */
export class RpcConnection {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private helloSent = false;
  private failure: RpcError | null = null;

  private constructor(
    private readonly url: string,
    private readonly ws: WebSocket,
    private readonly token: string | undefined,
  ) {
    ws.on('message', (data: Buffer) => this.onFrame(data));
    ws.on('error', (e) => this.fail(new RpcError('UNAVAILABLE', `${url}: ${e.message}`)));
    ws.on('close', (code, reason) => this.fail(new RpcError('UNAVAILABLE', `${url} closed the connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`)));
  }

  /** Connect within `timeoutMs`. */
  static open(url: string, timeoutMs: number, credentials: RpcCredentials = {}): Promise<RpcConnection> {
    const { token, ca, cert, key } = credentials;
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) });
    return new Promise<RpcConnection>((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new RpcError('TIMEOUT', `${url} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const failed = (e: RpcError): void => {
        clearTimeout(timer);
        ws.removeAllListeners();
        ws.on('error', () => {});
        ws.terminate();
        reject(e);
      };
      ws.once('error', (e) => failed(new RpcError('UNAVAILABLE', `${url}: ${e.message}`)));
      ws.once('close', (code, reason) => failed(new RpcError('UNAVAILABLE', `${url} closed the connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`)));
      ws.once('open', () => {
        clearTimeout(timer);
        ws.removeAllListeners();
        resolve(new RpcConnection(url, ws, token));
      });
    });
  }

  /** One request's result; TIMEOUT after `timeoutMs` (`saidMs` is the bound the message names). */
  call<O extends Op>(body: RequestBody & { readonly op: O }, timeoutMs: number, saidMs = timeoutMs): Promise<ResultOf<O>> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<ResultOf<O>>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new RpcError('TIMEOUT', `${this.url} did not answer within ${saidMs} ms`)), timeoutMs);
      // onFrame resolves with readAnswer(body.op, ...)'s result: a ResultOf<O>.
      this.pending.set(id, { op: body.op, resolve: resolve as (r: unknown) => void, reject, timer });
      // The hello and the first request leave together: a node serves a connection's frames in order.
      if (!this.helloSent && this.token !== undefined) this.ws.send(encodeFrame({ id: 0, op: 'hello', version: PROTOCOL_VERSION, token: this.token }));
      this.helloSent = true;
      this.ws.send(encodeFrame({ id, ...body }));
    });
  }

  close(): void {
    this.fail(new RpcError('UNAVAILABLE', `${this.url}: the connection was closed`));
  }

  private onFrame(data: Buffer): void {
    let frame: Response;
    try {
      frame = decodeFrame(data) as Response;
    } catch (e) {
      return this.fail(new RpcError('BAD_FRAME', (e as Error).message));
    }
    if (typeof frame !== 'object' || frame === null) return;
    const id = (frame as { id?: unknown }).id;
    if (id === 0 && !frame.ok) return this.fail(new RpcError(frame.error.code, frame.error.message));
    const p = typeof id === 'number' ? this.pending.get(id) : undefined;
    if (!p) return; // an event, or the hello's answer
    this.pending.delete(id as number);
    clearTimeout(p.timer);
    const answer = readAnswer(p.op, frame);
    if (answer.ok) p.resolve(answer.result);
    else p.reject(new RpcError(answer.error.code, answer.error.message));
  }

  /** Every request still waiting (and every later one) fails with `e`; the socket closes. */
  private fail(e: RpcError): void {
    if (this.failure) return;
    this.failure = e;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(e);
    }
    this.pending.clear();
    if (e.code === 'TIMEOUT') this.ws.terminate();
    else this.ws.close();
  }
}
