// One-shot requests to a node's client port, for CLI commands that need no session
// (status, locks, get) and for a joining node. Sessions and retries live in the SDK. It is
// the protocol's simplest client, not the node's networking, so it lives here.
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from './codec.js';
import { PROTOCOL_VERSION, type RequestBody, type Response } from './client-protocol.js';

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
export function rpc<T>(url: string, body: RequestBody, timeoutMs = 2_000, credentials: RpcCredentials = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const { token, ca, cert, key } = credentials;
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new RpcError('TIMEOUT', `${url} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = (fn: () => void) => {
      clearTimeout(timer);
      ws.close();
      fn();
    };
    ws.on('error', (e) => done(() => reject(new RpcError('UNAVAILABLE', `${url}: ${e.message}`))));
    ws.on('close', (code, reason) => done(() => reject(new RpcError('UNAVAILABLE', `${url} closed the connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`))));
    ws.on('open', () => {
      // Both frames at once: a node serves a connection's frames in order.
      if (token !== undefined) ws.send(encodeFrame({ id: 0, op: 'hello', version: PROTOCOL_VERSION, token }));
      ws.send(encodeFrame({ id: 1, ...body }));
    });
    ws.on('message', (data: Buffer) => {
      let frame: Response;
      try {
        frame = decodeFrame(data) as Response;
      } catch (e) {
        return done(() => reject(new RpcError('BAD_FRAME', (e as Error).message)));
      }
      if (typeof frame !== 'object' || frame === null) return;
      const id = (frame as { id?: unknown }).id;
      if (id === 0 && !frame.ok) return done(() => reject(new RpcError(frame.error.code, frame.error.message)));
      if (id !== 1) return; // an event, or the hello's answer
      if (frame.ok) done(() => resolve(frame.result as T));
      else done(() => reject(new RpcError(frame.error.code, frame.error.message)));
    });
  });
}
