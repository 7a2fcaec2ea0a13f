// One client connection served: its requests go through the gate and dispatch, their
// answers and the events for its sessions and watches go back on it.
import type { ServerEvent } from '../../protocol/client-protocol.js';
import type { Request } from '../../protocol/client-protocol.js';
import type { Answer } from '../../protocol/ops.js';
import type { ClientConn } from '../../transport/contracts.js';
import type { ClientGate, ConnectionGate } from './client-gate.js';
import type { EventSink, Subscriptions } from './subscriptions.js';

export type Serve = <R extends Request>(gate: ConnectionGate, req: R, sink: EventSink | null) => Promise<Answer<R['op']>>;

/** A connection whose token was removed is closed as a policy violation (as HELLO_TIMEOUT). */
const REVOKED_CLOSE_CODE = 1008;

export function serveConnection(conn: ClientConn, gates: ClientGate, serve: Serve, subs: Subscriptions): void {
  const gate = gates.open(conn, (why) => conn.close(REVOKED_CLOSE_CODE, why));
  const sink: EventSink = { id: conn.id, pushEvent: (e: ServerEvent) => gate.showsEvent(e) && conn.send(e), isOpen: () => conn.isOpen };
  // The port's pre-authentication limits end once the gate knows who this is (at once when
  // auth is off; after a hello with a valid token when it is on).
  if (gate.who) conn.authenticated();
  conn.on('request', (req) => {
    void serve(gate, req, sink).then((ans) => {
      // A watch's first read may hold 1000 values of 64 KiB: streamed, never built whole.
      if (ans.ok && req.op === 'watch') conn.sendStreamed({ id: req.id, ok: true, result: ans.result });
      else conn.send(ans.ok ? { id: req.id, ok: true, result: ans.result } : { id: req.id, ok: false, error: ans.error });
    });
    if (gate.who) conn.authenticated(); // admit() has judged a hello synchronously
  });
  conn.on('close', () => {
    gates.forget(gate);
    subs.dropConn(sink);
  });
}
