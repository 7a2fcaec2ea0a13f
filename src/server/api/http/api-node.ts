// What the HTTP/JSON API needs of a node: the websocket port's gate and dispatch, nothing
// more. PalisadeNode implements it (node.ts apiNode()); tests may fake it.
import type { Request } from '../../../protocol/client-protocol.js';
import type { ClientGate, ConnectionGate } from '../client-gate.js';
import type { EventSink, Subscriptions } from '../subscriptions.js';
import type { Answer } from '../../../protocol/ops.js';

export interface ApiNode {
  /** A gate for one HTTP request: authenticates its bearer token, judges its permissions. */
  openGate(remoteAddress: string): ConnectionGate;
  /** Admit and serve `req` exactly as a websocket request (same checks, same dispatch). */
  serve<R extends Request>(gate: ConnectionGate, req: R, sink: EventSink | null): Promise<Answer<R['op']>>;
  /** Deliver the events of `session` to `sink` until dropped. */
  subscribe(session: number, sink: EventSink): void;
  drop(sink: EventSink): void;
}

/** The ApiNode of a node's gate, subscriptions and serve function. */
export function apiNodeOf(gate: ClientGate, subs: Subscriptions, serve: ApiNode['serve']): ApiNode {
  let ids = 0;
  return {
    // Negative ids tell HTTP requests from websocket connections in the gate's log lines.
    openGate: (remoteAddress) => gate.open({ id: --ids, remoteAddress }),
    serve,
    subscribe: (session, sink) => subs.sessions.add(session, sink),
    drop: (sink) => subs.dropConn(sink),
  };
}
