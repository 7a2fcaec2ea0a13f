// Server-sent events (text/event-stream) to status pages. Each subscriber is one open
// response; a named event is `event: <name>\ndata: <json>\n\n`. A comment line every
// KEEPALIVE_MS keeps proxies from closing an idle stream, and `retry:` makes the browser
// reconnect within a second when the node restarts.
import type { IncomingMessage, ServerResponse } from 'node:http';

const KEEPALIVE_MS = 15_000;
const RETRY_MS = 1_000;
/** A page that stops reading is dropped rather than buffered for without bound. */
const MAX_BUFFERED_BYTES = 4 << 20;

export class SseHub {
  private readonly subscribers = new Set<ServerResponse>();
  private keepalive: NodeJS.Timeout | null = null;

  get size(): number {
    return this.subscribers.size;
  }

  /** Take over a request as an event stream; `first` is sent to it alone, right away. */
  subscribe(req: IncomingMessage, res: ServerResponse, first: readonly [string, unknown][]): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${RETRY_MS}\n\n`);
    for (const [name, data] of first) res.write(frame(name, data));
    this.subscribers.add(res);
    const drop = () => this.subscribers.delete(res);
    req.on('close', drop);
    res.on('close', drop);
    res.on('error', drop);
    this.keepalive ??= setInterval(() => this.comment('keepalive'), KEEPALIVE_MS);
    this.keepalive.unref();
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
    for (const res of this.subscribers) {
      if (res.writableLength > MAX_BUFFERED_BYTES) {
        this.subscribers.delete(res);
        res.destroy();
        continue;
      }
      res.write(chunk);
    }
  }
}

function frame(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
