// The client's line to the cluster: keeps one connection to some node, moves to another
// when it breaks or the node cannot serve, and retries a request there until it gets a
// definite answer or the caller's deadline passes. Requests are retried verbatim (the
// session layer builds each with a fixed seq), so a retry is idempotent on the server.
import type { HelloResult, ServerEvent, WireError } from '../protocol/client-protocol.js';
import type { Op, ResultOf } from '../protocol/ops.js';
import type { Clock, TimerHandle } from './clock.js';
import { readAnswer } from '../protocol/results.js';
import { DeadlineReached, sleep, waitFor } from './wait.js';
import { attemptTimeoutFor, livenessFor, watchLiveness } from './liveness.js';
import { Connection, ConnectionLostError, UntrustedNodeError, type ConnectionOptions, type RequestBody, type WebSocketConstructor } from './connection.js';
import { learnedUrlProblem, seedTransport, type SeedTransport } from './endpoint-policy.js';
import type { TrustViolation } from './trust.js';
import { scoutFor, scoutWhenLate } from './scout.js';
import { cooldownFor, EndpointCooldown } from './cooldown.js';
import {
  ClientClosedError,
  errorFromWire,
  PalisadeError,
  PermissionDeniedError,
  TimeoutError,
  TokenRegressionError,
  UnauthenticatedError,
  UnavailableError,
} from './errors.js';

export interface LinkOptions {
  readonly endpoints: readonly string[];
  readonly WebSocket: WebSocketConstructor;
  readonly clock: Clock;
  readonly random: () => number;
  readonly connectTimeoutMs: number;
  /** How long one attempt on one live node may go unanswered before the node is given up;
   *  undefined: derived from the cluster's timing (liveness.ts). A silent node is given up
   *  sooner, by the liveness pings. */
  readonly attemptTimeoutMs: number | undefined;
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  /** Move to the leader when a node's hello names one (writes then skip a forwarding hop). */
  readonly preferLeader: boolean;
  /** A function is called at every connection (client.ts). */
  readonly authToken?: string | (() => string);
  /** Until the first connection: give up as soon as every endpoint refused (see LockClientOptions). */
  readonly failWhenAllRefuse?: boolean;
  /** The cluster to accept nodes of; default the one the first node reached answers for. */
  readonly clusterId?: string;
  /** Told of every node set aside as untrusted (trust.ts). */
  readonly onTrustViolation: (violation: TrustViolation) => void;
}

export interface LinkHooks {
  /** A server event, pushed by the node at `url`. */
  onEvent(event: ServerEvent, url: string): void;
  /** Runs on each new connection before it serves callers (re-attaches the session). Throwing rejects the node. */
  prepare(connection: Connection): Promise<void>;
  /** A new connection is serving callers: re-subscribe, re-read what may have been missed. */
  onReady(connection: Connection): void;
}

export interface CallOptions {
  /** On the link's clock; Infinity for "until answered". */
  readonly deadline: number;
  readonly signal?: AbortSignal;
  /** Judges an ok answer before it is returned, given the URL of the node that answered: a
   *  TokenRegressionError it returns sets that node aside and is thrown to the caller. */
  readonly vet?: (result: unknown, url: string) => TokenRegressionError | null;
  /** Told the URL of the node whose ok answer is returned. */
  readonly answeredBy?: (url: string) => void;
}

/** Codes after which the same request is tried on another node. */
const RETRY_ELSEWHERE = new Set<WireError['code']>(['NOT_LEADER', 'UNAVAILABLE', 'TIMEOUT']);

const MAX_INTERNAL_RETRIES = 2;

/**
 * How long a node that proved untrustworthy (another cluster's, an unproven learned member,
 * a grant below the token floor) is not dialled, whatever else fails meanwhile: unlike a
 * node that is down, it answers, and would be dialled again at every round otherwise.
 */
export const UNTRUSTED_SET_ASIDE_MS = 60_000;

/** Learned URLs refused by the policy that are remembered, so each is reported once. */
const MAX_REMEMBERED_INSECURE = 256;

export class ClusterLink {
  private readonly options: LinkOptions;
  private readonly hooks: LinkHooks;
  private readonly clock: Clock;
  private readonly endpoints: string[];
  /** The endpoints the application gave; every other one was learned from a node. */
  private readonly seeds: ReadonlySet<string>;
  /** What protection the seeds give, which a learned URL must match (endpoint-policy.ts). */
  private readonly seedTransport: SeedTransport;
  /** The cluster every node must answer for: the option, or the first hello's. */
  private clusterId: string | null;
  /** Nodes set aside as untrusted, until when; and learned URLs refused by the policy. */
  private readonly untrusted = new Map<string, number>();
  private readonly insecureUrls = new Set<string>();
  private cursor: number;
  /** Where to connect next, ahead of the rotation (a leader hint). */
  private preferredUrl: string | null = null;
  /** The connection serving callers, once prepared. */
  private current: Connection | null = null;
  private connecting = false;
  /** Consecutive failures since the last ok answer; drives backoff. */
  private failures = 0;
  private closed = false;
  /** An error no other node will cure (bad credentials): every caller gets it. */
  private fatal: PalisadeError | null = null;
  /** Why the last connection attempt failed, for callers whose deadline passes unconnected. */
  private lastConnectError: Error | null = null;
  private readonly changeListeners = new Set<() => void>();
  /** The last hello seen: the cluster's timing, for liveness and attempt timeouts. */
  private lastHello: HelloResult | null = null;
  private readonly stopping = new AbortController();
  /** Endpoints that refused a connection outright (nobody listens) since the last success. */
  private readonly refused = new Set<string>();
  /** Endpoints that failed lately, set aside while others have not (cooldown.ts). */
  private readonly cooldown: EndpointCooldown;
  private everConnected = false;
  /** Set when every endpoint refused before any connection (failWhenAllRefuse): callers get it. */
  private allRefused: UnavailableError | null = null;

  constructor(options: LinkOptions, hooks: LinkHooks) {
    if (options.endpoints.length === 0) throw new TypeError('at least one endpoint is needed');
    this.options = options;
    this.hooks = hooks;
    this.clock = options.clock;
    this.cooldown = new EndpointCooldown(options.clock);
    this.endpoints = [...new Set(options.endpoints)];
    this.seeds = new Set(this.endpoints);
    this.seedTransport = seedTransport(this.endpoints);
    this.clusterId = options.clusterId ?? null;
    this.cursor = Math.floor(options.random() * this.endpoints.length);
  }

  /** Why the last connection attempt failed (for errors that say why nothing was reached). */
  get lastConnectFailure(): string | null {
    return this.lastConnectError?.message ?? null;
  }

  /** How long one attempt on one live node may take. */
  get attemptTimeoutMs(): number {
    return this.options.attemptTimeoutMs ?? attemptTimeoutFor(this.lastHello);
  }

  /** The node currently serving this client, if any. */
  get connectedUrl(): string | null {
    return this.current?.isOpen ? this.current.url : null;
  }

  start(): void {
    this.ensureConnecting();
  }

  /**
   * Sends the request built by `makeBody` until a node gives a definite answer. Resolves
   * with the result; rejects with the typed error of a definite refusal, UnavailableError
   * when the deadline passed and the request never reached a node that could apply it,
   * TimeoutError when it passed with the outcome unknown.
   */
  async call<O extends Op>(makeBody: () => RequestBody & { readonly op: O }, options: CallOptions): Promise<ResultOf<O>> {
    const { deadline, signal } = options;
    let inDoubt = false;
    let lastError: unknown;
    let internalErrors = 0;
    for (;;) {
      signal?.throwIfAborted();
      const remaining = deadline - this.clock.now();
      if (remaining <= 0) {
        throw inDoubt
          ? new TimeoutError('no definite answer before the deadline: the request may or may not have been applied', { cause: lastError })
          : new UnavailableError(
              `no node could serve the request before the deadline${lastError === undefined && this.lastConnectError ? ` (last connection attempt: ${this.lastConnectError.message})` : ''}`,
              { cause: lastError ?? this.lastConnectError ?? undefined },
            );
      }
      let connection: Connection;
      try {
        connection = await this.ready(deadline, signal);
      } catch (e) {
        if (e instanceof DeadlineReached) continue;
        throw e;
      }
      let response;
      const body = makeBody();
      try {
        response = await connection.request(body, Math.min(this.attemptTimeoutMs, remaining), signal);
      } catch (e) {
        if (!(e instanceof ConnectionLostError)) throw e;
        inDoubt = true;
        lastError = e;
        this.abandon(connection);
        continue;
      }
      const answer = readAnswer(body.op, response);
      if (answer.ok) {
        this.failures = 0;
        const refused = options.vet?.(answer.result, connection.url) ?? null;
        if (refused) {
          this.distrust(connection.url, { kind: 'TOKEN_REGRESSION', url: connection.url, message: refused.message });
          throw refused;
        }
        options.answeredBy?.(connection.url);
        return answer.result;
      }
      const error = answer.error;
      lastError = errorFromWire(error);
      if (RETRY_ELSEWHERE.has(error.code)) {
        if (error.code === 'TIMEOUT') inDoubt = true;
        this.abandon(connection, error.leaderHint);
        continue;
      }
      // A bug in the node may be passing (docs/protocol.md §9): a few retries, then give up.
      if (error.code === 'RATE_LIMITED' || (error.code === 'INTERNAL' && ++internalErrors <= MAX_INTERNAL_RETRIES)) {
        this.failures++;
        await sleep(this.clock, Math.min(this.backoffDelay(), remaining), signal);
        continue;
      }
      throw lastError;
    }
  }

  /** Drops `connection` (if it is still the current one) and connects elsewhere, to `hint` first. */
  abandon(connection: Connection, hint?: WireError['leaderHint']): void {
    if (hint?.clientUrl) this.preferEndpoint(hint.clientUrl);
    connection.close(); // its onClose moves the link on
  }

  /**
   * Sets `url` aside as untrusted for UNTRUSTED_SET_ASIDE_MS and reports why (once per
   * setting aside); the connection to it, if it serves, is dropped and the link moves on.
   */
  distrust(url: string, violation: TrustViolation): void {
    if (!this.isUntrusted(url)) this.options.onTrustViolation(violation);
    this.untrusted.set(url, this.clock.now() + UNTRUSTED_SET_ASIDE_MS);
    if (this.preferredUrl === url) this.preferredUrl = null;
    if (this.current?.url === url) this.current.close();
  }

  private isUntrusted(url: string): boolean {
    return (this.untrusted.get(url) ?? -Infinity) > this.clock.now();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopping.abort(new ClientClosedError());
    this.current?.close();
    this.current = null;
    this.notifyChange();
  }

  /** The prepared connection, waiting for one until the deadline. */
  private async ready(deadline: number, signal?: AbortSignal): Promise<Connection> {
    for (;;) {
      if (this.closed) throw new ClientClosedError();
      if (this.fatal) throw this.fatal;
      if (this.current?.isOpen) return this.current;
      if (this.allRefused) throw this.allRefused;
      this.ensureConnecting();
      await this.waitForChange(deadline, signal);
    }
  }

  /** The next change of connection state; rejects with DeadlineReached or the abort reason. */
  private waitForChange(deadline: number, signal?: AbortSignal): Promise<void> {
    return waitFor<void>({ clock: this.clock, deadline, signal }, (resolve) => {
      const onChange = (): void => resolve();
      this.changeListeners.add(onChange);
      return () => this.changeListeners.delete(onChange);
    });
  }

  private notifyChange(): void {
    for (const listener of [...this.changeListeners]) listener();
  }

  private ensureConnecting(): void {
    if (this.closed || this.connecting || this.current?.isOpen) return;
    this.connecting = true;
    void this.connectLoop().finally(() => {
      this.connecting = false;
      this.notifyChange();
    });
  }

  private async connectLoop(): Promise<void> {
    let redirectedToLeader = false;
    while (!this.closed) {
      // Where a node said the leader is (or the scout found it) is worth going at once; a
      // bounded number of times, so that stale hints cannot spin the client.
      const delay = this.preferredUrl !== null && this.failures <= 2 * this.endpoints.length ? 0 : this.backoffDelay();
      if (delay > 0) {
        try {
          await sleep(this.clock, delay, this.stopping.signal);
        } catch {
          return;
        }
      }
      let connection: Connection;
      try {
        connection = await this.dial();
      } catch (e) {
        if (e instanceof UnauthenticatedError || e instanceof PermissionDeniedError) {
          this.fatal = e;
          return;
        }
        this.lastConnectError = e as Error;
        this.failures++;
        if (this.allRefused) return; // set by noneListening, from dial
        continue;
      }
      if (this.closed) {
        connection.close();
        return;
      }
      const url = connection.url;
      this.lastHello = connection.hello;
      this.learnMembers(connection.hello);
      const leaderUrl = this.leaderUrl(connection.hello);
      // A leader that just failed us (the node we lost, or one that refused) is named by a
      // follower that has not noticed yet: staying here is better, as this node holds the
      // request until the next leader is elected and forwards it there.
      const leaderUsable = leaderUrl !== null && leaderUrl !== url && this.endpoints.includes(leaderUrl) && !this.cooldown.isCooling(leaderUrl) && !this.isUntrusted(leaderUrl);
      if (this.options.preferLeader && !redirectedToLeader && leaderUsable) {
        // Once per round: a stale hello must not bounce the client between nodes.
        redirectedToLeader = true;
        this.preferEndpoint(leaderUrl);
        connection.close();
        continue;
      }
      connection.onEvent = (event) => this.hooks.onEvent(event, url);
      const unwatch = watchLiveness(connection, this.clock, livenessFor(connection.hello));
      const unscout = scoutWhenLate(connection, this.clock, scoutFor(connection.hello), {
        // A node that failed lately is not asked again each round: it is down, not leading
        // elsewhere, until its time is up.
        others: () => this.endpoints.filter((u) => u !== url && !this.cooldown.isCooling(u) && !this.isUntrusted(u)),
        dial: (other, timeoutMs) => this.open(other, this.connectionOptions(timeoutMs)),
        found: (leader) => {
          this.preferEndpoint(leader);
          connection.close();
        },
      });
      connection.onClose = () => {
        unwatch();
        unscout();
        this.connectionClosed(connection);
      };
      try {
        await this.hooks.prepare(connection);
      } catch (e) {
        if (e instanceof ConnectionLostError && e.leaderHint) this.preferEndpoint(e.leaderHint.clientUrl);
        connection.close();
        this.failures++;
        continue;
      }
      if (!connection.isOpen || this.closed) {
        this.failures++;
        continue;
      }
      this.current = connection;
      this.everConnected = true;
      this.refused.clear();
      this.notifyChange();
      this.hooks.onReady(connection);
      return;
    }
  }

  /**
   * Opens a connection to the next endpoint; when it has not said hello by the time a live
   * node would have (a paused node accepts TCP and says nothing), dials the next one too,
   * and so on through the endpoints. The first to say hello wins; the others are closed.
   */
  private dial(): Promise<Connection> {
    const lateMs = livenessFor(this.lastHello).silentAfterMs;
    const options = this.connectionOptions(this.options.connectTimeoutMs);
    const tried = new Set<string>();
    // When every endpoint failed lately, none is set aside (this dial came after a backoff);
    // an untrusted one stays aside whatever else fails.
    const everyCooling = this.endpoints.every((u) => this.cooldown.isCooling(u) || this.isUntrusted(u));
    let dialing = 0;
    return waitFor<Connection>({ clock: this.clock, deadline: Infinity, signal: this.stopping.signal }, (resolve, reject) => {
      let timer: TimerHandle | undefined;
      let done = false;
      const next = (): void => {
        timer = undefined;
        if (done) return;
        const url = this.untried(tried, everyCooling);
        if (url === null) return; // every endpoint is being tried, or set aside
        tried.add(url);
        dialing++;
        this.open(url, options).then(
          (connection) => {
            dialing--;
            if (done) return connection.close();
            done = true;
            resolve(connection);
          },
          (e: unknown) => {
            dialing--;
            if (done) return;
            const fatal = e instanceof UnauthenticatedError || e instanceof PermissionDeniedError;
            if (fatal || this.noneListening(url, e)) {
              done = true;
              return reject(e);
            }
            // Refused (a killed node, often the leader a stale hello or hint named): the
            // next endpoint now, rather than after a backoff that grows with every such round.
            // (Ones set aside are not dialed in this round: they wait for the next, after a backoff.)
            if (tried.size < this.endpoints.length) {
              if (timer !== undefined) this.clock.clearTimeout(timer);
              next();
            }
            if (dialing === 0) {
              done = true;
              reject(e);
            }
          },
        );
        timer = this.clock.setTimeout(next, lateMs);
      };
      next();
      if (tried.size === 0) {
        done = true;
        reject(new ConnectionLostError(`no endpoint may be dialled: every one is set aside as untrusted (${this.endpoints.join(', ')})`));
      }
      return () => {
        done = true;
        if (timer !== undefined) this.clock.clearTimeout(timer);
      };
    });
  }

  /**
   * Opens a connection, noting whether the node is up (cooldown.ts) and whether it may be
   * trusted (connection.ts greet): it must answer for the pinned cluster, and a learned URL
   * must prove it holds the token before it is given it. The first node to say hello pins
   * the cluster (dials run side by side; the first to answer is the one used).
   */
  private async open(url: string, options: ConnectionOptions): Promise<Connection> {
    let connection: Connection;
    try {
      const token = this.options.authToken;
      const authToken = typeof token === 'function' ? token() : token;
      connection = await Connection.open(url, { ...options, ...(authToken === undefined ? {} : { authToken }), clusterId: () => this.clusterId, learned: !this.seeds.has(url) });
    } catch (e) {
      if (e instanceof UntrustedNodeError) this.distrust(url, e.violation);
      else if (!(e instanceof PalisadeError)) this.cooldown.failed(url, cooldownFor(this.lastHello));
      throw e;
    }
    this.clusterId ??= connection.hello.clusterId;
    this.cooldown.succeeded(url);
    return connection;
  }

  private connectionOptions(connectTimeoutMs: number): ConnectionOptions {
    return {
      WebSocket: this.options.WebSocket,
      clock: this.clock,
      connectTimeoutMs,
    };
  }

  /**
   * Notes a failed connection; true when, before any connection succeeded and with
   * failWhenAllRefuse, every endpoint has now refused outright (nothing listens there, or
   * the name does not resolve): waiting longer will not help a command-line user.
   */
  private noneListening(url: string, e: unknown): boolean {
    if (!this.options.failWhenAllRefuse || this.everConnected) return false;
    let text = '';
    for (let x: unknown = e, depth = 0; x instanceof Error && depth < 5; x = x.cause, depth++) text += ` ${x.message} ${String((x as NodeJS.ErrnoException).code ?? '')}`;
    if (!/ECONNREFUSED|ENOTFOUND|EAI_AGAIN/.test(text)) {
      this.refused.delete(url);
      return false;
    }
    this.refused.add(url);
    if (!this.endpoints.every((u) => this.refused.has(u))) return false;
    this.allRefused = new UnavailableError(
      `no node is listening: every endpoint refused the connection (${this.endpoints.join(', ')}); is the cluster running?`,
      { cause: e },
    );
    return true;
  }

  private connectionClosed(connection: Connection): void {
    if (this.current !== connection) return;
    this.current = null;
    this.failures++;
    if (connection.lost) this.cooldown.failed(connection.url, cooldownFor(this.lastHello));
    // It failed us: unless a node named where to go, try the others before it again.
    if (this.preferredUrl === null && this.endpoints[this.cursor % this.endpoints.length] === connection.url) {
      this.cursor = (this.cursor + 1) % this.endpoints.length;
    }
    this.ensureConnecting();
  }

  private backoffDelay(): number {
    // The first retry goes at once (usually to another node or to the leader's hint);
    // after that, exponential with jitter so a fleet of clients does not stampede.
    if (this.failures <= 1) return 0;
    const base = Math.min(this.options.backoffMaxMs, this.options.backoffInitialMs * 2 ** Math.min(this.failures - 2, 20));
    return base * (0.5 + 0.5 * this.options.random());
  }

  /**
   * The next endpoint in turn that is not in `tried` nor set aside (unless `everyCooling`:
   * then none is); null when there is none.
   */
  private untried(tried: ReadonlySet<string>, everyCooling: boolean): string | null {
    const usable = (url: string): boolean => !tried.has(url) && !this.isUntrusted(url) && (everyCooling || !this.cooldown.isCooling(url));
    const preferred = this.preferredUrl;
    this.preferredUrl = null;
    if (preferred !== null && usable(preferred)) return preferred;
    for (let i = 0; i < this.endpoints.length; i++) {
      const url = this.endpoints[this.cursor % this.endpoints.length]!;
      this.cursor = (this.cursor + 1) % this.endpoints.length;
      if (usable(url)) return url;
    }
    return null;
  }

  /** Where to connect next. A hint naming a node that just failed us is stale (the node
   *  giving it has not noticed yet): it is not followed; nor one the client may not dial. */
  private preferEndpoint(url: string): void {
    if (!this.learn(url)) return;
    if (!this.cooldown.isCooling(url) && !this.isUntrusted(url)) this.preferredUrl = url;
  }

  /** A node's member list names nodes the caller may not have listed: fail over to them too. */
  private learnMembers(hello: HelloResult): void {
    for (const member of hello.members) if (member.clientUrl) this.learn(member.clientUrl);
  }

  /**
   * Adds a URL a node named to the endpoints, if the client may dial it: with the seeds'
   * protection (endpoint-policy.ts). A refused one is reported once. True when it is an endpoint.
   */
  private learn(url: string): boolean {
    if (this.endpoints.includes(url)) return true;
    const problem = learnedUrlProblem(url, this.seedTransport);
    if (problem === null) {
      this.endpoints.push(url);
      return true;
    }
    if (!this.insecureUrls.has(url)) {
      // Bounded: a node may list any number of URLs; past the bound one may be reported again.
      if (this.insecureUrls.size >= MAX_REMEMBERED_INSECURE) this.insecureUrls.clear();
      this.insecureUrls.add(url);
      this.options.onTrustViolation({ kind: 'INSECURE_ENDPOINT', url, message: `a node named ${problem}: not dialled` });
    }
    return false;
  }

  private leaderUrl(hello: HelloResult): string | null {
    if (hello.leader === null || hello.leader === hello.nodeId) return null;
    return hello.members.find((m) => m.id === hello.leader)?.clientUrl ?? null;
  }
}
