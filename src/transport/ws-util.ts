// Small rules every socket of both ports follows, so that no input from the network can end
// the process or hold a socket open without bound:
//   - close reasons fit the 123 bytes a close frame allows (ws throws a RangeError otherwise,
//     and a reason often quotes what the other side sent);
//   - a listener that throws closes its own socket, never the process;
//   - a close handshake the other side does not answer (it stopped reading) ends with the
//     socket cut after a grace period.
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';

/** RFC 6455 §5.5: a control frame's payload is at most 125 bytes, 2 of them the code. */
export const MAX_CLOSE_REASON_BYTES = 123;

/** `reason`, cut to fit a close frame (on a character boundary, marked with "..."). */
export function closeReason(reason: string): string {
  const buf = Buffer.from(reason, 'utf8');
  if (buf.length <= MAX_CLOSE_REASON_BYTES) return reason;
  // Cutting mid-character leaves a partial sequence that decodes as U+FFFD: drop it.
  return buf.subarray(0, MAX_CLOSE_REASON_BYTES - 3).toString('utf8').replace(/\uFFFD+$/, '') + '...';
}

/** Close with `code` and a bounded reason; cut the socket if the close handshake has not
 *  finished within `graceMs` (a peer that stopped reading never answers it). */
export function closeWithin(ws: WebSocket, code: number, reason: string, graceMs: number): void {
  if (ws.readyState === WebSocket.CLOSED) return;
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.terminate();
    return;
  }
  const timer = setTimeout(() => ws.terminate(), graceMs);
  timer.unref();
  ws.once('close', () => clearTimeout(timer));
  if (ws.readyState === WebSocket.OPEN) {
    try {
      ws.close(code, closeReason(reason));
    } catch {
      ws.terminate(); // an invalid close code: ours, but still never the process's end
    }
  }
}

/** How often a throwing listener is logged at most, so hostile input cannot flood the log. */
const THROW_LOG_INTERVAL_MS = 10_000;
let lastThrowLogged = -Infinity;
let throwsSinceLogged = 0;

/**
 * Wrap a socket's listener: an exception it throws is logged (rate-limited) and ends that
 * socket, never the process. Every listener on a socket that carries network input is
 * wrapped, since a bug anywhere behind it would otherwise be one frame away from an exit.
 */
export function guarded<A extends unknown[]>(ws: WebSocket, log: Logger, what: string, listener: (...args: A) => void): (...args: A) => void {
  return (...args: A) => {
    try {
      listener(...args);
    } catch (err) {
      throwsSinceLogged += 1;
      const now = Date.now();
      if (now - lastThrowLogged >= THROW_LOG_INTERVAL_MS) {
        log.error({ err, what, throwsSinceLogged }, 'a socket listener threw; the socket is cut');
        lastThrowLogged = now;
        throwsSinceLogged = 0;
      }
      ws.terminate();
    }
  };
}

export function rawBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}
