// A session belongs to the principal (token name) that opened it: the lock machine records
// the owner in the session (replicated, in snapshots), and only that principal may attach
// to it, keep it alive, close it, read its view or write through it. Admin tokens may also
// close, revoke and read any session (to find and evict a stuck client); they may not use it
// otherwise, so nobody acts under another client's identity. Sessions opened without
// authentication (owner null, e.g. before auth was turned on) fall back to the scope rule of
// auth.ts.
//
// To anyone but its owner a session does not exist: the refusal is UNKNOWN_SESSION with the
// very message the lock machine gives for a session that is not open. A distinct answer
// (it was PERMISSION_DENIED) told a stranger with any valid token which session ids are
// live, one guess per id (ids are log indexes).
//
// The owner never changes, so a node can judge it from its own applied state as soon as
// it has applied the session's openSession: only a session id above its applied index
// needs a linearizable read first. A session id still above the applied index after that
// read was not open when the request arrived, and is answered as unknown (it could be an
// openSession in flight whose owner nobody has checked yet).
import type { Request, WireError } from '../../protocol/client-protocol.js';
import type { Principal } from './auth.js';
import type { MachineView } from './limits.js';
import { sessionNotOpen } from './wire.js';

type SessionRequest = Extract<Request, { session: number }>;

/** What an admin token may do with a session another token opened. */
const ADMIN_MAY: ReadonlySet<Request['op']> = new Set(['closeSession', 'revokeSession', 'sessionInfo']);

/** Whether the owner check needs state newer than this node's applied state. */
export function ownerNeedsRead(req: SessionRequest, machine: MachineView): boolean {
  return req.session > machine.appliedIndex;
}

/** Why `p` may not use the session of `req`, or null when it may (or the session does not
 *  exist, which the machine or the lease keeper answers). Never names the session's locks. */
export function sessionOwnerProblem(p: Principal, req: SessionRequest, machine: MachineView): WireError | null {
  if (req.session > machine.appliedIndex) return sessionNotOpen(req.session);
  const owner = machine.sessionOwner(req.session);
  if (owner === undefined || owner === null || owner === p.name) return null;
  if (p.admin && ADMIN_MAY.has(req.op)) return null;
  return sessionNotOpen(req.session);
}
