// One-shot requests to a node's client port, for CLI commands that need no session
// (status, locks, get). Sessions and retries live in the SDK.
import WebSocket from 'ws';
import { decodeFrame, encodeFrame } from './codec.js';
import type { Request, Response } from './client-protocol.js';

export type RequestBody = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Send one request to `url` and resolve with its result (or reject with RpcError). */
export function rpc<T>(url: string, body: RequestBody, timeoutMs = 2_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs });
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
    ws.on('open', () => ws.send(encodeFrame({ id: 1, ...body })));
    ws.on('message', (data: Buffer) => {
      let frame: Response;
      try {
        frame = decodeFrame(data) as Response;
      } catch (e) {
        return done(() => reject(new RpcError('BAD_FRAME', (e as Error).message)));
      }
      if (typeof frame !== 'object' || frame === null || (frame as { id?: unknown }).id !== 1) return; // an event
      if (frame.ok) done(() => resolve(frame.result as T));
      else done(() => reject(new RpcError(frame.error.code, frame.error.message)));
    });
  });
}
