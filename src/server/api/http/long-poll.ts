// An acquire that waits at most `waitMs` (an HTTP long poll). The websocket protocol queues
// a waiting acquire and tells the grant later as an event on the connection; an HTTP request
// has no connection to tell it on, so the node holds the request open until the grant event
// arrives, and when the deadline passes first it withdraws the wait (cancelWait) so that no
// wait of a gone request stays queued. The withdrawal uses seq + 1 of the session: a
// long-poll acquire takes two seqs (docs/http-api.md), and a retry of it with the same seq
// retries the withdrawal with the same seq too, so retries stay exactly-once.
import type { Request, ServerEvent } from '../../../protocol/client-protocol.js';
import type { ConnectionGate } from '../client-gate.js';
import type { EventSink } from '../subscriptions.js';
import { fail } from '../wire.js';
import type { Answer } from '../../../protocol/ops.js';
import type { ApiNode } from './api-node.js';

type AcquireRequest = Extract<Request, { op: 'acquire' }>;

/** The HTTP API's answer to an acquire with a wait: the websocket's, or `timeout` when the
 *  wait ran out and was withdrawn (index: the withdrawal's entry, when it applied). */
export type LongPollAnswer = Answer<'acquire'> | { readonly ok: true; readonly result: { readonly status: 'timeout'; readonly index?: number } };

let nextSinkId = -1;

/** `gone` resolves when the HTTP client disconnects: the wait is withdrawn at once. */
export async function acquireWithWait(node: ApiNode, gate: ConnectionGate, req: AcquireRequest, waitMs: number, gone: Promise<void>): Promise<LongPollAnswer> {
  const deadline = Date.now() + waitMs;
  let settle!: (a: Answer<'acquire'> | null) => void;
  const news = new Promise<Answer<'acquire'> | null>((r) => (settle = r));
  const sink: EventSink = {
    id: nextSinkId--,
    pushEvent: (e: ServerEvent) => {
      if (!gate.showsEvent(e)) return;
      if (e.event === 'granted' && e.session === req.session && e.name === req.name) {
        settle({ ok: true, result: { status: 'granted', token: e.token, index: e.index } });
      } else if (e.event === 'sessionExpired' && e.session === req.session) {
        settle({ ok: false, error: { code: 'UNKNOWN_SESSION', message: `session ${req.session} expired while waiting for ${req.name}` } });
      }
    },
  };
  // Subscribed before the acquire is sent: a grant that follows at once is not missed.
  node.subscribe(req.session, sink);
  try {
    const ans = await node.serve(gate, req, sink);
    if (!ans.ok || ans.result.status !== 'queued') return ans;
    // A retried acquire answers its first answer (queued) even if the grant came since,
    // before we subscribed: read the lock once.
    const now = await node.serve(gate, { id: 0, op: 'get', name: req.name }, null);
    if (now.ok) {
      const lock = now.result;
      const held = lock.holders.find((h) => h.session === req.session);
      if (held) return { ok: true, result: { status: 'granted', token: held.token, index: held.token } };
      if (!lock.waiters.some((w) => w.session === req.session)) return await withdraw(node, gate, req);
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), Math.max(0, deadline - Date.now()))));
    const first = await Promise.race([news, timeout, gone.then(() => null)]);
    clearTimeout(timer);
    return first ?? (await withdraw(node, gate, req));
  } finally {
    node.drop(sink);
  }
}

/** Withdraw the wait (seq + 1). The grant may have won the race: then it is the answer. */
async function withdraw(node: ApiNode, gate: ConnectionGate, req: AcquireRequest): Promise<LongPollAnswer> {
  const cancel: Extract<Request, { op: 'cancelWait' }> = { id: 0, op: 'cancelWait', session: req.session, seq: req.seq + 1, name: req.name, ...(req.ackedSeq !== undefined ? { ackedSeq: req.ackedSeq } : {}) };
  const c = await node.serve(gate, cancel, null);
  if (c.ok) return { ok: true, result: { status: 'timeout', index: c.result.index } };
  if (c.error.code === 'CONFLICT') {
    // Not waiting: granted meanwhile, or no longer waiting at all. currentToken may be
    // another holder's, so the lock itself says which.
    const held = await heldBy(node, gate, req);
    if (held !== null) return held;
    return { ok: true, result: { status: 'timeout' } };
  }
  if (c.error.code === 'UNKNOWN_SESSION') return c;
  const message = `the wait ended but withdrawing it failed (${c.error.message}); retry the acquire with the same seq`;
  return fail(c.error.code, message, c.error.leaderHint ? { leaderHint: c.error.leaderHint } : {});
}

/** Our grant of the lock if this session holds it now (a linearizable read), else null. */
async function heldBy(node: ApiNode, gate: ConnectionGate, req: AcquireRequest): Promise<Answer<'acquire'> | null> {
  const now = await node.serve(gate, { id: 0, op: 'get', name: req.name }, null);
  if (!now.ok) return now;
  const lock = now.result;
  const held = lock.holders.find((h) => h.session === req.session);
  return held ? { ok: true, result: { status: 'granted', token: held.token, index: held.token } } : null;
}
