// Bounds on what one client may ask of a node, beyond those the lock machine enforces
// itself. Frame size, unread bytes, rate and connections per address are the client
// port's (src/transport/client-server.ts); this module maps the config onto them and checks
// the rest per request: name lengths, sessions per connection, and per-session and per-lock
// counts against the node's applied state.
//
// The counts are checked by the leader against its applied state, before it proposes the
// acquire. They are soft bounds: acquires proposed but not yet applied at that moment can
// overshoot by their number. The lock machine's own maxLocksPerSession
// (held + waits + elections, 10,000) is the hard one, applied identically by every node.
import type { ClientServerOptions } from '../../transport/client-server.js';
import type { Request, WireError } from '../../protocol/client-protocol.js';
import type { Answer } from '../../protocol/ops.js';
import type { ClientLimitsConfig } from '../../config/cluster-config.js';

/** The parts of the lock machine the checks read (LockMachine satisfies it). */
export interface MachineView {
  /** The last entry applied here: a session id (its openSession's index) above it may just
   *  not have reached this node yet. */
  readonly appliedIndex: number;
  /** The token name that opened session `id`: null when opened without authentication,
   *  undefined when there is no such session. Cheap: checked on every session request. */
  sessionOwner(id: number): string | null | undefined;
  session(id: number): {
    readonly locks: readonly { readonly name: string }[];
    readonly waits: readonly { readonly name: string }[];
    readonly elections: readonly string[];
  } | null;
  lock(name: string): { readonly holders: readonly unknown[]; readonly waiters: readonly unknown[]; readonly delayed: boolean } | null;
}

/** The client port's share of the limits. */
export function clientPortLimits(l: ClientLimitsConfig): Pick<
  ClientServerOptions,
  'maxFrameBytes' | 'maxBufferedBytes' | 'requestsPerSecond' | 'requestBurst' | 'maxConnectionsPerAddress' | 'requestsPerSecondPerAddress' | 'requestBurstPerAddress'
> {
  return {
    maxFrameBytes: l.maxFrameBytes,
    maxBufferedBytes: l.maxBufferedBytes,
    requestsPerSecond: l.requestsPerSecond,
    requestBurst: l.requestBurst,
    maxConnectionsPerAddress: l.maxConnectionsPerAddress,
    requestsPerSecondPerAddress: l.requestsPerSecondPerAddress,
    requestBurstPerAddress: l.requestBurstPerAddress,
  };
}

const limitExceeded = (message: string): WireError => ({ code: 'LIMIT_EXCEEDED', message });

/** Lock, election and fence-lock names longer than maxNameBytes. */
export function nameLengthProblem(l: ClientLimitsConfig, req: Request): WireError | null {
  const names: [string, string][] = [];
  if ('name' in req) names.push(['name', req.name]);
  if ('election' in req) names.push(['election', req.election]);
  if ('fence' in req && req.fence) names.push(['fence.lock', req.fence.lock]);
  for (const [field, name] of names) {
    const bytes = Buffer.byteLength(name, 'utf8');
    if (bytes > l.maxNameBytes) {
      return { code: 'INVALID_ARGUMENT', message: `${req.op}.${field} is ${bytes} bytes, over the limit of ${l.maxNameBytes} (limits.maxNameBytes)` };
    }
  }
  return null;
}

/** Locks held and waited for per session, and waiters per lock, for an acquire. */
export function acquireLimitProblem(l: ClientLimitsConfig, req: Request, machine: MachineView): WireError | null {
  if (req.op !== 'acquire') return null;
  const session = machine.session(req.session);
  if (!session) return null; // the machine answers UNKNOWN_SESSION
  // A retry, or an acquire of a lock the session already has or awaits: the machine answers
  // it from what it has (the first grant, the same queue place), so no count grows.
  if (session.locks.some((x) => x.name === req.name) || session.waits.some((x) => x.name === req.name)) return null;
  if (session.locks.length >= l.maxLocksPerSession) {
    return limitExceeded(`session ${req.session} holds ${session.locks.length} locks, the limit (limits.maxLocksPerSession); release some first`);
  }
  if (!req.wait) return null;
  const lock = machine.lock(req.name);
  const wouldQueue = lock !== null && (lock.holders.length > 0 || lock.waiters.length > 0 || lock.delayed);
  if (!wouldQueue) return null;
  if (session.waits.length >= l.maxWaitsPerSession) {
    return limitExceeded(`session ${req.session} already waits for ${session.waits.length} locks, the limit (limits.maxWaitsPerSession)`);
  }
  if (lock.waiters.length >= l.maxWaitersPerLock) {
    return limitExceeded(`lock ${JSON.stringify(req.name)} has ${lock.waiters.length} waiters, the limit (limits.maxWaitersPerLock); retry later or without wait`);
  }
  return null;
}

/** The sessions one connection has opened or attached, bounded by maxSessionsPerConnection.
 *  A session is counted when it is requested, not when it is answered: pipelined opens
 *  cannot overshoot the bound by their number. */
export class ConnectionSessions {
  private readonly ids = new Set<number>();
  /** openSession/attach requests admitted here and not yet answered. */
  private readonly pending = new WeakSet<Request>();
  private pendingCount = 0;

  constructor(private readonly max: number) {}

  /** Why openSession/attach may not add a session here, or null (it is then counted). */
  problem(req: Request, machine: MachineView): WireError | null {
    if (req.op !== 'openSession' && req.op !== 'attach') return null;
    if (req.op === 'attach' && this.ids.has(req.session)) return null;
    if (this.ids.size + this.pendingCount >= this.max) {
      // Sessions that expired or closed meanwhile no longer count (the SDK opens a new
      // session on the same connection after its old one expired). One this node has not
      // applied yet (it lags the leader that answered) is not gone.
      for (const id of this.ids) if (id <= machine.appliedIndex && machine.session(id) === null) this.ids.delete(id);
    }
    if (this.ids.size + this.pendingCount < this.max) {
      this.pending.add(req);
      this.pendingCount++;
      return null;
    }
    const pending = this.pendingCount > 0 ? ` (${this.pendingCount} of them still being opened)` : '';
    return limitExceeded(`this connection already carries ${this.ids.size + this.pendingCount} sessions${pending}, the limit (limits.maxSessionsPerConnection)`);
  }

  /** Record what the answer to a request did to this connection's sessions (every answer,
   *  refusals too: a counted request stops being pending either way). */
  observe<R extends Request>(req: R, answer: Answer<R['op']>): void {
    if (this.pending.has(req)) {
      this.pending.delete(req);
      this.pendingCount--;
    }
    if (!answer.ok) return;
    if (req.op === 'openSession') {
      // The compiler does not tie `answer` to the narrowed req.op: read it as openSession's.
      const opened = answer.result;
      if (opened !== null && 'session' in opened && 'ttlMs' in opened) this.ids.add(opened.session);
    } else if (req.op === 'attach') {
      this.ids.add(req.session);
    } else if (req.op === 'closeSession') {
      this.ids.delete(req.session);
    }
  }
}
