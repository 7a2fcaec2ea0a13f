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
// Resuming after a lost stream (another node, a leader change) is a new stream: its
// snapshot is the state to resume from, and it names the index it reflects.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, ServerEvent } from '../../../protocol/client-protocol.js';
import type { ConnectionGate } from '../client-gate.js';
import type { EventSink } from '../subscriptions.js';
import type { ApiNode } from './api-node.js';
import { sendError } from './respond.js';
import { toJsonTokens } from './json-wire.js';

const KEEPALIVE_MS = 15_000;
/** A reader that stops reading is cut rather than buffered for without bound. */
const MAX_BUFFERED_BYTES = 4 << 20;

let nextSinkId = -1_000_000_000;

export async function serveStream(node: ApiNode, gate: ConnectionGate, req: Extract<Request, { op: 'watch' | 'observe' }>, httpReq: IncomingMessage, res: ServerResponse): Promise<void> {
  let live = false; // events before the snapshot are in it: dropped
  const write = (e: ServerEvent) => {
    if (res.writableLength > MAX_BUFFERED_BYTES) return void res.destroy();
    const { event, index, ...data } = e;
    res.write(`id: ${index}\nevent: ${event}\ndata: ${JSON.stringify(toJsonTokens(data))}\n\n`);
  };
  const sink: EventSink = {
    id: nextSinkId--,
    pushEvent: (e) => {
      if (!gate.showsEvent(e)) return;
      if (live) write(e);
    },
  };
  const closed = new Promise<void>((resolve) => {
    httpReq.once('close', resolve);
    res.once('close', resolve);
  });
  try {
    const first = await node.serve(gate, req, sink);
    if (!first.ok) return sendError(res, first.error);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' });
    res.write(`retry: 1000\n\n`);
    const snapshot = req.op === 'watch' ? { prefix: req.prefix, entries: first.result } : first.result;
    res.write(`event: snapshot\ndata: ${JSON.stringify(toJsonTokens(snapshot))}\n\n`);
    live = true;
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
    await closed;
    clearInterval(keepalive);
  } finally {
    node.drop(sink);
  }
}
