// What the SDK's parts (locks, elections, kv) share of the client: its clock, its line to
// the cluster and its session. Passed down instead of the LockClient so that no part
// imports the client and the modules stay free of cycles.
import type { Clock } from './clock.js';
import type { ClusterLink } from './link.js';
import type { SessionManager } from './session.js';
import type { TokenFloor } from './token-floor.js';

export interface ClientCore {
  readonly clock: Clock;
  readonly link: ClusterLink;
  readonly sessions: SessionManager;
  /** Default bound on one operation's retries. */
  readonly requestTimeoutMs: number;
  /** The highest token of any grant this client accepted: grants are judged by it. */
  readonly floor: TokenFloor;
}

/** Deadline for an operation that starts now with the client's default timeout. */
export function defaultDeadline(core: ClientCore): number {
  return core.clock.now() + core.requestTimeoutMs;
}
