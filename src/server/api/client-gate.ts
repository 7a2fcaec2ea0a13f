// The node's gate for client requests: authentication, permissions and the per-request
// limits, in front of PalisadeNode.handle. One ConnectionGate per client connection holds
// who that connection is; the node asks it before serving each request (admit), tells it
// what the answer was (observe), and asks it before pushing an event (showsEvent).
//
// The tokens are reloaded with the config (setTokens): a connection keeps the digest of the
// token it presented, not its rights, so a token's new rights apply to its open connections
// at once, and a removed token's connections are closed (those that asked to hear of it) and
// every later request of theirs is UNAUTHENTICATED. Their sessions are left to expire: their
// clients may act on their locks until their leases end (docs/security.md).
//
// Requests a follower forwards to the leader were admitted where they entered: the gate
// runs once, at the node the client is connected to (peers are trusted, see docs/security.md).
// The per-session and per-lock counts are checked by the leader before it proposes an
// acquire (limits.ts acquireLimitProblem), where the state is freshest.
import type { Logger } from 'pino';
import type { HelloChallenge, Request, ServerEvent, WireError } from '../../protocol/client-protocol.js';
import type { Answer } from '../../protocol/ops.js';
import { TokenRegistry, UNAUTHENTICATED_CLIENT, eventVisibleTo, permissionProblem, sessionScopeApplies, sessionScopeProblem, tokenDigest, type Principal } from './auth.js';
import type { AuthConfig, ClusterConfig } from '../../config/cluster-config.js';
import { ConnectionSessions, nameLengthProblem, type MachineView } from './limits.js';
import { ConnectionWatches } from './watch-limits.js';
import { ownerNeedsRead, sessionOwnerProblem } from './session-owner.js';
import { RefusalLog } from '../../transport/refusal-log.js';
import { AddressLimits } from './address-limits.js';
import { systemClock, type NodeClock } from '../clock.js';

export class ClientGate {
  private tokens: TokenRegistry | null;
  private auth: AuthConfig | null;
  /** Counts token reloads: a connection whose principal is older looks its token up again. */
  private tokensVersion = 0;
  /** Connections to close when their token is removed (websockets; an HTTP request's gate
   *  lives for one request, and a stream of one hears no more events). */
  private readonly revocable = new Map<ConnectionGate, (why: string) => void>();
  /** Refused requests, logged at a bounded rate per address and code: an HTTP request has a
   *  gate of its own, so "first of each kind per connection" alone bounds nothing there. */
  private readonly refusals: RefusalLog;
  /** Sessions and requests in flight per address, requests per token (address-limits.ts). */
  private readonly addresses: AddressLimits;

  constructor(
    private readonly cfg: ClusterConfig,
    private readonly log: Logger,
    private readonly machine: () => MachineView,
    clock: NodeClock = systemClock,
  ) {
    this.auth = cfg.auth;
    this.tokens = cfg.auth ? new TokenRegistry(cfg.auth.tokens) : null;
    this.refusals = new RefusalLog(log, 'refused a client request', 'refused client requests', { level: 'info', timers: clock });
    this.addresses = new AddressLimits(cfg.limits, () => clock.now());
  }

  /** A session closed or expired: it no longer counts for the address that opened it. */
  sessionEnded(session: number): void {
    this.addresses.ended(session);
  }

  /** Write the counted refusals (the node is stopping). */
  close(): void {
    this.refusals.close();
  }

  /**
   * The tokens of a reloaded config (auth stays on or off: that needs a restart). Open
   * connections whose token is gone are told and closed; the others take their token's new
   * rights. Returns what changed.
   */
  setTokens(auth: AuthConfig | null): string[] {
    if ((auth === null) !== (this.auth === null)) throw new Error('authentication cannot be turned on or off while the node runs');
    if (auth === null || JSON.stringify(auth) === JSON.stringify(this.auth)) return [];
    this.auth = auth;
    this.tokens = new TokenRegistry(auth.tokens);
    this.tokensVersion += 1;
    let closed = 0;
    for (const [gate, revoke] of this.revocable) {
      if (!gate.revoked()) continue;
      this.revocable.delete(gate);
      closed += 1;
      revoke('UNAUTHENTICATED: the token of this connection was removed from the cluster config');
    }
    const names = [...new Set(auth.tokens.map((t) => t.name))];
    this.log.info({ tokens: names, connectionsClosed: closed }, 'client tokens reloaded');
    return [`tokens (${names.join(', ')}; ${closed} connection(s) of removed tokens closed)`];
  }

  /** Say once, at start-up, what is not protected. */
  announce(): void {
    if (!this.tokens) this.log.warn('clients are not authenticated: any client that reaches the client port may use every lock (configure "auth" to require tokens)');
    else this.log.info({ tokens: this.cfg.auth!.tokens.map((t) => t.name) }, 'clients must present a token');
    if (!this.cfg.tls.peer) this.log.warn('peer links are not encrypted (ws://): the cluster secret is never sent, but Raft traffic is readable on the network (configure "tls.peer")');
    if (!this.cfg.tls.client) this.log.warn('the client port is not encrypted (ws://): tokens and lock traffic are readable on the network (configure "tls.client")');
  }

  /** A gate for one connection; `revoke` closes it when its token is removed (forget() it
   *  when the connection closes). */
  open(conn: { readonly id: number; readonly remoteAddress: string }, revoke?: (why: string) => void): ConnectionGate {
    const gate = new ConnectionGate(this, conn, this.tokens === null ? UNAUTHENTICATED_CLIENT : null);
    if (revoke) this.revocable.set(gate, revoke);
    return gate;
  }

  forget(gate: ConnectionGate): void {
    this.revocable.delete(gate);
  }

  /** @internal The principal of a token's digest (null: none presented, or unknown). */
  principalOf(digest: Buffer | null): Principal | null {
    if (!this.tokens) return UNAUTHENTICATED_CLIENT;
    return digest === null ? null : this.tokens.principalOf(digest);
  }

  /** @internal */
  prove(challenge: HelloChallenge, clusterId: string, clientUrl: string): Uint8Array | null | 'unknownToken' {
    if (!this.tokens) return null;
    return this.tokens.prove(challenge.tokenId, challenge.nonce, clusterId, clientUrl) ?? 'unknownToken';
  }

  /** @internal */
  get version(): number {
    return this.tokensVersion;
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
  get addressLimits(): AddressLimits {
    return this.addresses;
  }

  /** @internal */
  logRefusal(remote: string, fields: Readonly<Record<string, unknown>>, code: WireError['code']): void {
    this.refusals.refuse(remote, fields, code);
  }
}

export class ConnectionGate {
  private readonly sessions: ConnectionSessions;
  private readonly watches: ConnectionWatches;
  /** Refusals already logged on this connection: the first of each kind is enough. */
  private readonly logged = new Set<WireError['code']>();
  /** The digest of the token the last hello presented (null: none), and the tokens' version
   *  the principal was looked up in. */
  private credential: Buffer | null = null;
  private version: number;
  /** Its token was accepted, then removed by a reload. */
  private wasRevoked = false;

  /** @internal constructed by ClientGate.open */
  constructor(
    private readonly gate: ClientGate,
    private readonly conn: { readonly id: number; readonly remoteAddress: string },
    private principal: Principal | null,
  ) {
    this.version = gate.version;
    this.sessions = new ConnectionSessions(gate.limits.maxSessionsPerConnection);
    this.watches = new ConnectionWatches(gate.limits.maxWatchesPerConnection);
  }

  /** Who this connection is, once authenticated: its token's rights as the config now says. */
  get who(): Principal | null {
    this.lookUpAgain();
    return this.principal;
  }

  /** Whether this connection's token was accepted and has since been removed. */
  revoked(): boolean {
    this.lookUpAgain();
    return this.wasRevoked;
  }

  /** The tokens were reloaded since this connection's token was looked up: again. */
  private lookUpAgain(): void {
    if (this.version === this.gate.version) return;
    this.version = this.gate.version;
    if (this.principal === null) return;
    this.principal = this.gate.principalOf(this.credential);
    this.wasRevoked = this.principal === null;
  }

  /** The client's address (for audit lines). */
  get remoteAddress(): string {
    return this.conn.remoteAddress;
  }

  /** The refusal to answer instead of serving `req`, or null to serve it. */
  admit(req: Request): WireError | null {
    if (req.op === 'hello') {
      // A hello (re)states who the connection is; a bad token leaves it unauthenticated.
      this.credential = req.token === undefined ? null : tokenDigest(req.token);
      this.version = this.gate.version;
      this.wasRevoked = false;
      this.principal = this.gate.principalOf(this.credential);
      if (this.principal) return null;
      return this.refuse(req, {
        code: 'UNAUTHENTICATED',
        message: req.token === undefined ? 'this cluster requires a token: send it in hello' : 'the token was not accepted',
      });
    }
    const principal = this.who;
    if (!principal) {
      const message = this.wasRevoked ? 'the token of this connection was removed from the cluster config' : 'say hello with a valid token first';
      return this.refuse(req, { code: 'UNAUTHENTICATED', message });
    }
    return (
      this.refuse(req, permissionProblem(principal, req)) ??
      nameLengthProblem(this.gate.limits, req) ??
      this.watches.problem(req) ??
      this.sessions.problem(req, this.gate.machineView) ??
      // Last: what it counts (in flight, a pending open) is counted only for a request served.
      this.refuse(req, this.gate.addressLimits.admit(this.conn.remoteAddress, req, this.owner, this.gate.machineView))
    );
  }

  /**
   * The proof for this node asked by a challenge hello (request-dispatch.ts answerChallenge): null with auth off (no token
   * to prove with), 'unknownToken' when no configured token has the challenge's id.
   */
  prove(challenge: HelloChallenge, clusterId: string, clientUrl: string): Uint8Array | null | 'unknownToken' {
    return this.gate.prove(challenge, clusterId, clientUrl);
  }

  /** Who owns the sessions this connection opens: its token's name, null with auth off. */
  get owner(): string | null {
    const p = this.who;
    return p === null || p === UNAUTHENTICATED_CLIENT ? null : p.name;
  }

  /** Whether `req` (admitted) uses a session whose owner and scope must be checked (an
   *  authenticated client): then sessionScope must be asked too. */
  judgesSession(req: Request): boolean {
    const p = this.who;
    return p !== null && sessionScopeApplies(p, req);
  }

  /** Whether sessionScope needs state that covers everything committed before `req` arrived
   *  (a linearizable read first): a token limited in scope is judged by what the session
   *  holds now, and a session id above this node's applied index may be one it lags behind. */
  needsCurrentState(req: Request): boolean {
    const p = this.who;
    if (p === null || !sessionScopeApplies(p, req)) return false;
    return p.prefixes !== null || p.readOnly || ownerNeedsRead(req, this.gate.machineView);
  }

  /** The owner and scope checks of the session `req` uses, against the node's applied state
   *  (see needsCurrentState for when that state must be current first). */
  sessionScope(req: Request): WireError | null {
    const p = this.who;
    if (p === null || !sessionScopeApplies(p, req)) return null;
    const machine = this.gate.machineView;
    return this.refuse(req, sessionOwnerProblem(p, req, machine) ?? sessionScopeProblem(p, req, machine));
  }

  /** Record what the answer to an admitted request changed for this connection. */
  observe<R extends Request>(req: R, answer: Answer<R['op']>): void {
    this.sessions.observe(req, answer);
    this.gate.addressLimits.settle(req, answer);
  }

  /** Events name locks, elections and keys: a client sees only those within its prefixes. */
  showsEvent(e: ServerEvent): boolean {
    const p = this.who;
    return p !== null && eventVisibleTo(p, e);
  }

  private refuse(req: Request, error: WireError | null): WireError | null {
    if (!error || this.logged.has(error.code)) return error;
    this.logged.add(error.code);
    // Never the token: only which identity (if any) and what it tried.
    this.gate.logRefusal(this.conn.remoteAddress, { conn: this.conn.id, tokenName: this.principal?.name, op: req.op, code: error.code, reason: error.message }, error.code);
    return error;
  }
}
