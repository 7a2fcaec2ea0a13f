// Server-Sent Events for the HTTP API: a key-prefix watch (GET /v1/kv/watch) and an
// election observation (GET /v1/election/observe). Each stream starts with the current
// state (`snapshot`: the prefix's entries in pages, or the election's leader) and then sends
// every change as it is applied on this node (`kvChanged`, `electionChanged`), with the
// entry's index as the SSE id. The subscription is the websocket's own (the `watch` and
// `observe` ops, with this response as the sink), made before the state is read, so nothing
// falls between the snapshot and the first change: a watch holds the changes pushed while
// its snapshot is read and written, and sends those after the revision the snapshot reflects
// (an observation's changes pushed before its answer are in it, and are dropped).
// A watch resumes after a lost stream (another node, a leader change): with fromRevision, or
// the Last-Event-ID an EventSource sends, it replays every change after that revision from
// the watch history (stream-resume.ts) instead of a snapshot, or answers 410 COMPACTED. The
// events of one entry (a txn's, a session end's) go out together and only the last carries
// the `id`, so an id always means "every change up to this revision was sent"; the last page
// of a snapshot carries the revision it reflects as its id.
//
// What one stream may cost the node is bounded, whoever reads it and however slowly: the
// snapshot and a replay are written a page at a time, the next page only once the previous
// has left (65 MB of values cost a follower 1.5 GB of JSON built at once before this); bytes
// queued for the reader, and changes held while pages are written, never exceed
// MAX_BUFFERED_BYTES, and a reader that takes more than STALL_MS to take a page is cut,
// during the snapshot or replay as after it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, ServerEvent, WatchReplay, WatchSnapshot } from '../../../protocol/client-protocol.js';
import type { ConnectionGate } from '../client-gate.js';
import type { EventSink } from '../subscriptions.js';
import type { ApiNode } from './api-node.js';
import { sendError } from './respond.js';
import { bytesToJson, toJsonTokens } from './json-wire.js';
import { replayPages, replayedEvent, resumeRevision } from './stream-resume.js';

const KEEPALIVE_MS = 15_000;
/** A reader that stops reading is cut rather than buffered for without bound. */
export const MAX_BUFFERED_BYTES = 4 << 20;
/** A snapshot or replay page is written once less than this is queued for the reader. */
const PAGE_LOW_WATER_BYTES = 256 << 10;
/** A snapshot page holds at most this many entries, and stops growing past PAGE_BYTES. */
const PAGE_ENTRIES = 100;
const PAGE_BYTES = 256 << 10;
/** How long a reader may take to make room for the next page before it is cut. */
export const STALL_MS = 10_000;

let nextSinkId = -1_000_000_000;

/** Refusals of a resume that a later attempt may not get. */
const RETRY_LATER: ReadonlySet<string> = new Set(['UNAVAILABLE', 'TIMEOUT', 'NOT_LEADER', 'RATE_LIMITED']);

export async function serveStream(node: ApiNode, gate: ConnectionGate, req: Extract<Request, { op: 'watch' | 'observe' }>, httpReq: IncomingMessage, res: ServerResponse): Promise<void> {
  const out = new SseWriter(res);
  const from = req.op === 'watch' ? resumeRevision(req, httpReq) : undefined;
  // Before the first answer and while its pages are written: a watch holds the changes, in
  // order, within the byte bound (those its snapshot or replay covered are dropped when they
  // are sent); an observation drops them (its snapshot is read after them). Then: sent.
  let live = false;
  const held: ServerEvent[] = [];
  let heldBytes = 0;
  const sink: EventSink = {
    id: nextSinkId--,
    pushEvent: (e) => {
      if (!gate.showsEvent(e)) return;
      if (live) return out.event(e);
      if (req.op !== 'watch') return;
      heldBytes += eventText(e).length;
      if (heldBytes + res.writableLength > MAX_BUFFERED_BYTES) return out.cut();
      held.push(e);
    },
    isOpen: () => !out.cutOff && !res.destroyed,
  };
  const closed = new Promise<void>((resolve) => {
    httpReq.once('close', resolve);
    res.once('close', resolve);
  });
  const head = (): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    out.write(`retry: 1000\n\n`);
  };
  const goLive = (): void => {
    live = true;
    for (const e of held.splice(0)) out.event(e);
    out.flush();
  };
  try {
    if (req.op === 'watch' && from !== undefined) {
      for await (const page of replayPages(node, gate, req, from, sink)) {
        if (!page.ok) {
          // Not now (no leader yet, an election under way): a stream opened and ended at once
          // brings an EventSource back with its Last-Event-ID; a 503 would make it give up.
          if (!res.headersSent && !RETRY_LATER.has(page.error.code)) return sendError(res, page.error);
          if (!res.headersSent) head();
          out.write(`: ${page.error.code}: ${page.error.message.replace(/[\r\n]/g, ' ')}\n\n`);
          return void res.end();
        }
        if (!res.headersSent) head();
        const { changes, revision } = page.result as WatchReplay;
        for (const c of changes) out.event(replayedEvent(c));
        out.flush();
        out.sentThrough = revision;
        // The next page is asked for only once this one has (nearly) left.
        if (!(await out.roomFor(PAGE_LOW_WATER_BYTES))) return;
      }
    } else if (req.op === 'watch') {
      const first = await node.serve(gate, { ...req, snapshot: true }, sink);
      if (!first.ok) return sendError(res, first.error);
      head();
      await writeSnapshotPages(out, req.prefix, first.result as WatchSnapshot);
    } else {
      const first = await node.serve(gate, req, sink);
      if (!first.ok) return sendError(res, first.error);
      head();
      out.write(`event: snapshot\ndata: ${JSON.stringify(toJsonTokens(first.result))}\n\n`);
    }
    goLive();
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
 * PAGE_BYTES of JSON) each: `{"prefix", "revision", "truncated", "entries", "more"}`,
 * `more` false on the last, which carries the revision the snapshot reflects as its SSE id
 * (an EventSource that loses the stream sends it back as Last-Event-ID, and resumes from it).
 * Each page is built only once the previous one has (nearly) left.
 */
async function writeSnapshotPages(out: SseWriter, prefix: string, snap: WatchSnapshot): Promise<void> {
  const { entries, revision, truncated } = snap;
  const head = `event: snapshot\ndata: {"prefix":${JSON.stringify(prefix)},"revision":${revision},"truncated":${truncated},"entries":[`;
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
    const more = i < entries.length;
    out.write(`${more ? '' : `id: ${revision}\n`}${head}${page.join(',')}],"more":${more}}\n\n`);
  } while (i < entries.length && !out.cutOff);
  out.sentThrough = revision;
}

/** The SSE text of an event without its id, built once per event however many streams carry
 *  it (the same event object reaches every sink). A deleted key's `kvChanged` has no `value`. */
const eventTexts = new WeakMap<ServerEvent, string>();

function eventText(e: ServerEvent): string {
  let text = eventTexts.get(e);
  if (text !== undefined) return text;
  const { event, index: _index, ...data } = e;
  const json = e.event === 'kvChanged' && e.value === null ? { key: e.key, revision: e.revision } : toJsonTokens(data);
  text = `event: ${event}\ndata: ${JSON.stringify(json)}\n\n`;
  eventTexts.set(e, text);
  return text;
}

/** Writes to one event stream within the byte bound; cuts it when the bound is passed. */
class SseWriter {
  cutOff = false;
  /** Every change up to this revision was sent (by a snapshot, a replay or live): a change
   *  at or below it is not sent again. */
  sentThrough = 0;
  /** The events of the entry being written: one entry's events are pushed in one go, and go
   *  out together after it, the id on the last (an id means every change up to it was sent). */
  private batch: ServerEvent[] = [];

  constructor(private readonly res: ServerResponse) {}

  write(text: string): void {
    if (this.cutOff || this.res.destroyed) return;
    this.res.write(text);
    if (this.res.writableLength > MAX_BUFFERED_BYTES) this.cut();
  }

  /** Queues a change for the current batch; the batch is written at the end of this turn. */
  event(e: ServerEvent): void {
    if (e.index <= this.sentThrough) return;
    if (this.batch.length === 0) queueMicrotask(() => this.flush());
    this.batch.push(e);
  }

  /** Writes the batched events, each entry's id on its last event. */
  flush(): void {
    const events = this.batch;
    this.batch = [];
    events.forEach((e, i) => {
      const last = i === events.length - 1 || events[i + 1]!.index !== e.index;
      this.write(last ? `id: ${e.index}\n${eventText(e)}` : eventText(e));
    });
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
