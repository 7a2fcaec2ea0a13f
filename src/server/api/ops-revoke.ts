// The status page's revoke (ops/revoke.ts) as a client's revokeSession: the admin token is
// authenticated by the client port's own gate, and the request is served (and audit-logged,
// naming the status page) as it would be from a websocket or the HTTP API.
import { PROTOCOL_VERSION } from '../../protocol/client-protocol.js';
import type { Revoke } from '../ops/revoke.js';
import type { ClientGate } from './client-gate.js';
import type { Serve } from './client-connections.js';

export function opsRevoke(gates: ClientGate, serve: Serve): Revoke {
  return async (token, session, reason, remote) => {
    const gate = gates.open({ id: 0, remoteAddress: `${remote} (status page)` });
    const hello = await serve(gate, { id: 0, op: 'hello', version: PROTOCOL_VERSION, token }, null);
    if (!hello.ok) return hello;
    return serve(gate, { id: 0, op: 'revokeSession', session, reason }, null);
  };
}
