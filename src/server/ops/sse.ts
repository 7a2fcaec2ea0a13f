// Server-sent events (text/event-stream) to status pages. Each subscriber is one open
// response; a named event is `event: <name>\ndata: <json>\n\n`. A comment line every
// KEEPALIVE_MS keeps proxies from closing an idle stream, and `retry:` makes the browser
// reconnect within a second when the node restarts.
//
// What streams may cost: at most MAX_STREAMS open at once, MAX_STREAMS_PER_ADDRESS of them
// from one address (more are answered 429 before anything is computed for them), each with
// at most MAX_BUFFERED_BYTES queued for a reader that does not read (then it is cut). 3,000
// unread streams from one address took 360 MB before these bounds.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { addressKey } from '../../transport/address-key.js';

const KEEPALIVE_MS = 15_000;
const RETRY_MS = 1_000;
/** A page that stops reading is dropped rather than buffered for without bound. */
export const MAX_BUFFERED_BYTES = 1 << 20;
/** Event streams open at once on one node, and from one address (a few status pages). */
export const MAX_STREAMS = 64;
export const MAX_STREAMS_PER_ADDRESS = 4;

/** A stream's place, taken before its first events are computed; released once. */
export interface StreamPlace {
  release(): void;
}

export class SseHub {
  private readonly subscribers = new Set<ServerResponse>();
  private readonly perAddress = new Map<string, number>();
  private places = 0;
  private keepalive: NodeJS.Timeout | null = null;

  get size(): number {
    return this.subscribers.size;
  }

  /** A place for a new stream from `remote`, or null when a cap is reached. */
  reserve(remote: string): StreamPlace | null {
    const address = addressKey(remote);
    const mine = this.perAddress.get(address) ?? 0;
    if (this.places >= MAX_STREAMS || mine >= MAX_STREAMS_PER_ADDRESS) return null;
    this.places++;
    this.perAddress.set(address, mine + 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.places--;
        const left = (this.perAddress.get(address) ?? 1) - 1;
        if (left > 0) this.perAddress.set(address, left);
        else this.perAddress.delete(address);
      },
    };
  }

  /** Take over a request as an event stream, in `place`; `first` is sent to it alone, right away. */
  subscribe(place: StreamPlace, req: IncomingMessage, res: ServerResponse, first: readonly [string, unknown][]): void {
    const drop = (): void => {
      this.subscribers.delete(res);
      place.release();
      if (this.subscribers.size === 0 && this.keepalive) {
        clearInterval(this.keepalive);
        this.keepalive = null;
      }
    };
    req.on('close', drop);
    res.on('close', drop);
    res.on('error', drop);
    if (res.destroyed || req.socket.destroyed) return drop();
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${RETRY_MS}\n\n`);
    this.subscribers.add(res);
    for (const [name, data] of first) this.writeTo(res, frame(name, data));
    if (!this.keepalive) {
      this.keepalive = setInterval(() => this.comment('keepalive'), KEEPALIVE_MS);
      this.keepalive.unref();
    }
  }

  broadcast(name: string, data: unknown): void {
    if (this.subscribers.size === 0) return;
    this.write(frame(name, data));
  }

  close(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = null;
    for (const res of this.subscribers) res.end();
    this.subscribers.clear();
  }

  private comment(text: string): void {
    this.write(`: ${text}\n\n`);
  }

  private write(chunk: string): void {
    for (const res of this.subscribers) this.writeTo(res, chunk);
  }

  /** Cuts a reader with more than MAX_BUFFERED_BYTES queued (its 'close' releases its place). */
  private writeTo(res: ServerResponse, chunk: string): void {
    if (!this.subscribers.has(res)) return;
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      this.subscribers.delete(res);
      res.destroy();
      return;
    }
    res.write(chunk);
  }
}

function frame(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
