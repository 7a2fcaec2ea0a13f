// The node's gate for client requests: authentication, permissions and the per-request
// limits, in front of PalisadeNode.handle. One ConnectionGate per client connection holds
// who that connection is; the node asks it before serving each request (admit), tells it
// what the answer was (observe), and asks it before pushing an event (showsEvent).
//
// Requests a follower forwards to the leader were admitted where they entered: the gate
// runs once, at the node the client is connected to (peers are trusted, see docs/security.md).
// The per-session and per-lock counts are checked by the leader before it proposes an
// acquire (limits.ts acquireLimitProblem), where the state is freshest.
import type { Logger } from 'pino';
import type { Request, ServerEvent, WireError } from '../../protocol/client-protocol.js';
import type { Answer } from '../../protocol/ops.js';
import { TokenRegistry, UNAUTHENTICATED_CLIENT, eventVisibleTo, permissionProblem, sessionScopeApplies, sessionScopeProblem, type Principal } from './auth.js';
import type { ClusterConfig } from '../../config/cluster-config.js';
import { ConnectionSessions, nameLengthProblem, type MachineView } from './limits.js';
import { ConnectionWatches } from './watch-limits.js';
import { ownerNeedsRead, sessionOwnerProblem } from './session-owner.js';

export class ClientGate {
  private readonly tokens: TokenRegistry | null;

  constructor(
    private readonly cfg: ClusterConfig,
    private readonly log: Logger,
    private readonly machine: () => MachineView,
  ) {
    this.tokens = cfg.auth ? new TokenRegistry(cfg.auth.tokens) : null;
  }

  /** Say once, at start-up, what is not protected. */
  announce(): void {
    if (!this.tokens) this.log.warn('clients are not authenticated: any client that reaches the client port may use every lock (configure "auth" to require tokens)');
    else this.log.info({ tokens: this.cfg.auth!.tokens.map((t) => t.name) }, 'clients must present a token');
    if (!this.cfg.tls.peer) this.log.warn('peer links are not encrypted (ws://): the cluster secret is never sent, but Raft traffic is readable on the network (configure "tls.peer")');
    if (!this.cfg.tls.client) this.log.warn('the client port is not encrypted (ws://): tokens and lock traffic are readable on the network (configure "tls.client")');
  }

  open(conn: { readonly id: number; readonly remoteAddress: string }): ConnectionGate {
    return new ConnectionGate(this, conn, this.tokens === null ? UNAUTHENTICATED_CLIENT : null);
  }

  /** @internal */
  authenticate(token: string | undefined): Principal | null {
    return this.tokens ? this.tokens.authenticate(token) : UNAUTHENTICATED_CLIENT;
  }

  /** @internal */
  get limits(): ClusterConfig['limits'] {
    return this.cfg.limits;
  }

  /** @internal */
  get machineView(): MachineView {
    return this.machine();
  }

  /** @internal */
  get logger(): Logger {
    return this.log;
  }
}

export class ConnectionGate {
  private readonly sessions: ConnectionSessions;
  private readonly watches: ConnectionWatches;
  /** Refusals already logged on this connection: the first of each kind is enough. */
  private readonly logged = new Set<WireError['code']>();

  /** @internal constructed by ClientGate.open */
  constructor(
    private readonly gate: ClientGate,
    private readonly conn: { readonly id: number; readonly remoteAddress: string },
    private principal: Principal | null,
  ) {
    this.sessions = new ConnectionSessions(gate.limits.maxSessionsPerConnection);
    this.watches = new ConnectionWatches(gate.limits.maxWatchesPerConnection);
  }

  /** Who this connection is, once authenticated. */
  get who(): Principal | null {
    return this.principal;
  }

  /** The client's address (for audit lines). */
  get remoteAddress(): string {
    return this.conn.remoteAddress;
  }

  /** The refusal to answer instead of serving `req`, or null to serve it. */
  admit(req: Request): WireError | null {
    if (req.op === 'hello') {
      // A hello (re)states who the connection is; a bad token leaves it unauthenticated.
      this.principal = this.gate.authenticate(req.token);
      if (this.principal) return null;
      return this.refuse(req, {
        code: 'UNAUTHENTICATED',
        message: req.token === undefined ? 'this cluster requires a token: send it in hello' : 'the token was not accepted',
      });
    }
    if (!this.principal) return this.refuse(req, { code: 'UNAUTHENTICATED', message: 'say hello with a valid token first' });
    return (
      this.refuse(req, permissionProblem(this.principal, req)) ??
      nameLengthProblem(this.gate.limits, req) ??
      this.watches.problem(req) ??
      this.sessions.problem(req, this.gate.machineView)
    );
  }

  /** Who owns the sessions this connection opens: its token's name, null with auth off. */
  get owner(): string | null {
    return this.principal === null || this.principal === UNAUTHENTICATED_CLIENT ? null : this.principal.name;
  }

  /** Whether `req` (admitted) uses a session whose owner and scope must be checked (an
   *  authenticated client): then sessionScope must be asked too. */
  judgesSession(req: Request): boolean {
    return this.principal !== null && sessionScopeApplies(this.principal, req);
  }

  /** Whether sessionScope needs state that covers everything committed before `req` arrived
   *  (a linearizable read first): a token limited in scope is judged by what the session
   *  holds now, and a session id above this node's applied index may be one it lags behind. */
  needsCurrentState(req: Request): boolean {
    const p = this.principal;
    if (p === null || !sessionScopeApplies(p, req)) return false;
    return p.prefixes !== null || p.readOnly || ownerNeedsRead(req, this.gate.machineView);
  }

  /** The owner and scope checks of the session `req` uses, against the node's applied state
   *  (see needsCurrentState for when that state must be current first). */
  sessionScope(req: Request): WireError | null {
    const p = this.principal;
    if (p === null || !sessionScopeApplies(p, req)) return null;
    const machine = this.gate.machineView;
    return this.refuse(req, sessionOwnerProblem(p, req, machine) ?? sessionScopeProblem(p, req, machine));
  }

  /** Record what the answer to an admitted request changed for this connection. */
  observe<R extends Request>(req: R, answer: Answer<R['op']>): void {
    this.sessions.observe(req, answer);
  }

  /** Events name locks, elections and keys: a client sees only those within its prefixes. */
  showsEvent(e: ServerEvent): boolean {
    return this.principal !== null && eventVisibleTo(this.principal, e);
  }

  private refuse(req: Request, error: WireError | null): WireError | null {
    if (!error || this.logged.has(error.code)) return error;
    this.logged.add(error.code);
    // Never the token: only which identity (if any) and what it tried.
    this.gate.logger.info(
      { conn: this.conn.id, remote: this.conn.remoteAddress, tokenName: this.principal?.name, op: req.op, code: error.code, reason: error.message },
      'refused a client request',
    );
    return error;
  }
}
