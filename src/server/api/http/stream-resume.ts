// Resuming a key-prefix watch over Server-Sent Events (GET /v1/kv/watch with fromRevision, or
// the Last-Event-ID header an EventSource sends when it reconnects): the changes after that
// revision from the replicated watch history, page by page, then the live ones. Kept apart
// from streams.ts so that the stream's own framing stays in one place.
import type { IncomingMessage } from 'node:http';
import type { Request, ServerEvent, WatchReplay } from '../../../protocol/client-protocol.js';
import type { Answer } from '../../../protocol/ops.js';
import type { ConnectionGate } from '../client-gate.js';
import type { EventSink } from '../subscriptions.js';
import type { ApiNode } from './api-node.js';

type WatchRequest = Extract<Request, { op: 'watch' }>;

/** The revision to resume after: the request's fromRevision, else a Last-Event-ID header
 *  (a decimal revision; anything else is ignored, as a new stream). */
export function resumeRevision(req: WatchRequest, httpReq: IncomingMessage): number | undefined {
  if (req.fromRevision !== undefined) return req.fromRevision;
  const id = httpReq.headers['last-event-id'];
  return typeof id === 'string' && /^[0-9]{1,16}$/.test(id) ? Number(id) : undefined;
}

/** The pages of the replay after `from`, each answered as a `watch` with fromRevision; the
 *  first refusal (COMPACTED, ...) ends them. */
export async function* replayPages(node: ApiNode, gate: ConnectionGate, req: WatchRequest, from: number, sink: EventSink): AsyncGenerator<Answer<'watch'>> {
  for (;;) {
    const ans = await node.serve(gate, { ...req, fromRevision: from }, sink);
    yield ans;
    if (!ans.ok) return;
    const page = ans.result as WatchReplay;
    if (!page.more) return;
    from = page.revision;
  }
}

/** A replayed change as the event a live one is. */
export function replayedEvent(c: WatchReplay['changes'][number]): ServerEvent {
  return { event: 'kvChanged', index: c.revision, key: c.key, value: c.value, revision: c.revision };
}
