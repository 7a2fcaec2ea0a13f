// Server-Sent Events for the HTTP API: a key-prefix watch (GET /v1/kv/watch) and an
// election observation (GET /v1/election/observe). Each stream starts with the current
// state (`snapshot`: the prefix's entries, or the election's leader) and then sends every
// change as it is applied on this node (`kvChanged`, `electionChanged`), with the entry's
// index as the SSE id. The subscription is the websocket's own (the `watch` and `observe`
// ops, with this response as the sink), made before the state is read, so nothing falls
// between the snapshot and the first change. Changes pushed while the read waits for its
// read index were applied before the state was read (the node reads it synchronously once
// the wait ends, and its answer reaches us through promise resolution only, with no
// entry applied in between), so they are in the snapshot and are not sent again.
// A watch resumes after a lost stream (another node, a leader change): with fromRevision, or
// the Last-Event-ID an EventSource sends, it replays every change after that revision from
// the watch history (stream-resume.ts) instead of a snapshot, or answers 410 COMPACTED. The
// events of one entry (a txn's, a session end's) go out together and only the last carries
// the `id`, so an id always means "every change up to this revision was sent".
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, ServerEvent, WatchReplay, WatchSnapshot } from '../../../protocol/client-protocol.js';
import type { ConnectionGate } from '../client-gate.js';
import type { EventSink } from '../subscriptions.js';
import type { ApiNode } from './api-node.js';
import { sendError } from './respond.js';
import { toJsonTokens } from './json-wire.js';
import { replayPages, replayedEvent, resumeRevision } from './stream-resume.js';

const KEEPALIVE_MS = 15_000;
/** A reader that stops reading is cut rather than buffered for without bound. */
const MAX_BUFFERED_BYTES = 4 << 20;

let nextSinkId = -1_000_000_000;

/** Refusals of a resume that a later attempt may not get. */
const RETRY_LATER: ReadonlySet<string> = new Set(['UNAVAILABLE', 'TIMEOUT', 'NOT_LEADER', 'RATE_LIMITED']);

export async function serveStream(node: ApiNode, gate: ConnectionGate, req: Extract<Request, { op: 'watch' | 'observe' }>, httpReq: IncomingMessage, res: ServerResponse): Promise<void> {
  let live = false; // observe: events before the snapshot are in it, dropped; watch: held
  const from = req.op === 'watch' ? resumeRevision(req, httpReq) : undefined;
  const held: ServerEvent[] = []; // watch: while the first answer is read, sent after it if it did not cover them
  let sentThrough = 0;
  let batch: ServerEvent[] = [];
  const flush = (): void => {
    const events = batch;
    batch = [];
    events.forEach((e, i) => {
      if (res.writableLength > MAX_BUFFERED_BYTES) return void res.destroy();
      const { event, index, ...data } = e;
      const id = i === events.length - 1 || events[i + 1]!.index !== index ? `id: ${index}\n` : '';
      res.write(`${id}event: ${event}\ndata: ${JSON.stringify(toJsonTokens(data))}\n\n`);
    });
  };
  // One entry's events are pushed in one go: written together after it, the id on the last.
  const write = (e: ServerEvent) => {
    if (e.index <= sentThrough) return;
    if (batch.length === 0) queueMicrotask(flush);
    batch.push(e);
  };
  const sink: EventSink = {
    id: nextSinkId--,
    pushEvent: (e) => {
      if (!gate.showsEvent(e)) return;
      if (live) write(e);
      else if (req.op === 'watch') held.push(e);
    },
  };
  const closed = new Promise<void>((resolve) => {
    httpReq.once('close', resolve);
    res.once('close', resolve);
  });
  const head = (): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    res.write(`retry: 1000\n\n`);
  };
  try {
    if (req.op === 'watch' && from !== undefined) {
      for await (const page of replayPages(node, gate, req, from, sink)) {
        if (!page.ok) {
          // Not now (no leader yet, an election under way): a stream opened and ended at once
          // brings an EventSource back with its Last-Event-ID; a 503 would make it give up.
          if (!res.headersSent && !RETRY_LATER.has(page.error.code)) return sendError(res, page.error);
          if (!res.headersSent) head();
          res.write(`: ${page.error.code}: ${page.error.message.replace(/\n/g, ' ')}\n\n`);
          return void res.end();
        }
        if (!res.headersSent) head();
        const { changes, revision } = page.result as WatchReplay;
        changes.forEach((c) => write(replayedEvent(c)));
        flush();
        sentThrough = revision;
      }
      live = true;
      held.splice(0).forEach(write);
    } else if (req.op === 'watch') {
      // The snapshot names the revision it reflects as its id: an EventSource that loses the
      // stream sends it back as Last-Event-ID, and resumes from it.
      const first = await node.serve(gate, { ...req, snapshot: true }, sink);
      if (!first.ok) return sendError(res, first.error);
      head();
      const snap = first.result as WatchSnapshot;
      res.write(`id: ${snap.revision}\nevent: snapshot\ndata: ${JSON.stringify(toJsonTokens({ prefix: req.prefix, ...snap }))}\n\n`);
      sentThrough = snap.revision;
      live = true;
      held.splice(0).forEach(write);
    } else {
      const first = await node.serve(gate, req, sink);
      if (!first.ok) return sendError(res, first.error);
      head();
      res.write(`event: snapshot\ndata: ${JSON.stringify(toJsonTokens(first.result))}\n\n`);
      live = true;
    }
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
    await closed;
    clearInterval(keepalive);
  } finally {
    node.drop(sink);
  }
}
