// Server-Sent Events for the HTTP API: a key-prefix watch (GET /v1/kv/watch) and an
// election observation (GET /v1/election/observe). Each stream starts with the current
// state (`snapshot`: the prefix's entries in pages, or the election's leader) and then sends
// every change as it is applied on this node (`kvChanged`, `electionChanged`), with the
// entry's index as the SSE id. The subscription is the websocket's own (the `watch` and
// `observe` ops, with this response as the sink), made before the state is read, so nothing
// falls between the snapshot and the first change. Changes pushed while the read waits for
// its read index were applied before the state was read (the node reads it synchronously
// once the wait ends, and its answer reaches us through promise resolution only, with no
// entry applied in between), so they are in the snapshot and are not sent again; changes
// applied while the snapshot's pages are being written wait behind them.
// Resuming after a lost stream (another node, a leader change) is a new stream: its
// snapshot is the state to resume from, and it names the index it reflects.
//
// What one stream may cost the node is bounded, whoever reads it and however slowly: the
// snapshot is written a page at a time, the next page only once the previous has left
// (65 MB of values cost a follower 1.5 GB of JSON built at once before this); bytes queued
// for the reader never exceed MAX_BUFFERED_BYTES, and a reader that takes more than
// STALL_MS to take a page is cut, during the snapshot as after it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KvEntry, Request, ServerEvent } from '../../../protocol/client-protocol.js';
import type { ConnectionGate } from '../client-gate.js';
import type { EventSink } from '../subscriptions.js';
import type { ApiNode } from './api-node.js';
import { sendError } from './respond.js';
import { bytesToJson, toJsonTokens } from './json-wire.js';

const KEEPALIVE_MS = 15_000;
/** A reader that stops reading is cut rather than buffered for without bound. */
export const MAX_BUFFERED_BYTES = 4 << 20;
/** A snapshot page is written once less than this is queued for the reader. */
const PAGE_LOW_WATER_BYTES = 256 << 10;
/** A snapshot page holds at most this many entries, and stops growing past PAGE_BYTES. */
const PAGE_ENTRIES = 100;
const PAGE_BYTES = 256 << 10;
/** How long a reader may take to make room for the next page before it is cut. */
export const STALL_MS = 10_000;

let nextSinkId = -1_000_000_000;

export async function serveStream(node: ApiNode, gate: ConnectionGate, req: Extract<Request, { op: 'watch' | 'observe' }>, httpReq: IncomingMessage, res: ServerResponse): Promise<void> {
  const out = new SseWriter(res);
  // Before the answer: events are in the snapshot (dropped). While its pages are written:
  // held, in order, within the byte bound. Then: written as they come.
  let phase: 'reading' | 'paging' | 'live' = 'reading';
  const held: string[] = [];
  let heldBytes = 0;
  const sink: EventSink = {
    id: nextSinkId--,
    pushEvent: (e) => {
      if (phase === 'reading' || !gate.showsEvent(e)) return;
      const text = eventText(e);
      if (phase === 'live') return out.write(text);
      heldBytes += text.length;
      if (heldBytes + res.writableLength > MAX_BUFFERED_BYTES) return out.cut();
      held.push(text);
    },
    isOpen: () => !out.cutOff && !res.destroyed,
  };
  const closed = new Promise<void>((resolve) => {
    httpReq.once('close', resolve);
    res.once('close', resolve);
  });
  try {
    const first = await node.serve(gate, req, sink);
    if (!first.ok) return sendError(res, first.error);
    phase = 'paging';
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    out.write(`retry: 1000\n\n`);
    if (req.op === 'watch') await writeSnapshotPages(out, req.prefix, first.result as readonly KvEntry[]);
    else out.write(`event: snapshot\ndata: ${JSON.stringify(toJsonTokens(first.result))}\n\n`);
    for (const text of held.splice(0)) out.write(text);
    phase = 'live';
    if (out.cutOff) return;
    const keepalive = setInterval(() => out.write(': keepalive\n\n'), KEEPALIVE_MS);
    await closed;
    clearInterval(keepalive);
  } finally {
    node.drop(sink);
  }
}

/**
 * The prefix's entries as `snapshot` events of at most PAGE_ENTRIES entries (or about
 * PAGE_BYTES of JSON) each: `{"prefix", "entries", "more"}`, `more` false on the last.
 * Each page is built only once the previous one has (nearly) left.
 */
async function writeSnapshotPages(out: SseWriter, prefix: string, entries: readonly KvEntry[]): Promise<void> {
  const head = `event: snapshot\ndata: {"prefix":${JSON.stringify(prefix)},"entries":[`;
  let i = 0;
  do {
    // A turn of the event loop per page, whatever the reader: when it keeps up, the socket
    // takes each page at once and nothing else would make this loop yield (65 MB of values
    // written in one turn held a leader's loop 1.4 s, past its election timeout).
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!(await out.roomFor(PAGE_LOW_WATER_BYTES))) return;
    const page: string[] = [];
    let bytes = 0;
    while (i < entries.length && page.length < PAGE_ENTRIES && bytes < PAGE_BYTES) {
      const e = entries[i++]!;
      const text = JSON.stringify({ key: e.key, ...bytesToJson(e.value), revision: e.revision });
      page.push(text);
      bytes += text.length;
    }
    out.write(`${head}${page.join(',')}],"more":${i < entries.length}}\n\n`);
  } while (i < entries.length && !out.cutOff);
}

/** The SSE text of an event, built once per event however many streams carry it (the same
 *  event object reaches every sink). A deleted key's `kvChanged` has no `value`. */
const eventTexts = new WeakMap<ServerEvent, string>();

function eventText(e: ServerEvent): string {
  let text = eventTexts.get(e);
  if (text !== undefined) return text;
  const { event, index, ...data } = e;
  const json = e.event === 'kvChanged' && e.value === null ? { key: e.key, revision: e.revision } : toJsonTokens(data);
  text = `id: ${index}\nevent: ${event}\ndata: ${JSON.stringify(json)}\n\n`;
  eventTexts.set(e, text);
  return text;
}

/** Writes to one event stream within the byte bound; cuts it when the bound is passed. */
class SseWriter {
  cutOff = false;

  constructor(private readonly res: ServerResponse) {}

  write(text: string): void {
    if (this.cutOff || this.res.destroyed) return;
    this.res.write(text);
    if (this.res.writableLength > MAX_BUFFERED_BYTES) this.cut();
  }

  cut(): void {
    this.cutOff = true;
    this.res.destroy();
  }

  /** Resolves true once less than `bytes` is queued for the reader, false when the stream
   *  was cut (closed, or no room within STALL_MS). */
  async roomFor(bytes: number): Promise<boolean> {
    const res = this.res;
    if (this.cutOff || res.destroyed) return false;
    if (res.writableLength < bytes) return true;
    return new Promise<boolean>((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        res.off('drain', onDrain);
        res.off('close', onClose);
        if (!ok) this.cut();
        resolve(ok && !this.cutOff);
      };
      const onDrain = (): void => done(true);
      const onClose = (): void => done(false);
      const timer = setTimeout(() => done(false), STALL_MS);
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
  }
}
