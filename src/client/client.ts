// LockClient: the SDK's front door. It wires the parts together (link → session → locks,
// elections, kv) and routes server events to them; the behaviour lives in those modules.
import { hostname } from 'node:os';
import WebSocket from 'ws';
import type { KvEntry, LockInfo, NodeStatus, ServerEvent } from '../protocol/client-protocol.js';
import { systemClock, type Clock } from './clock.js';
import type { WebSocketConstructor } from './connection.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { Election, ElectionHub } from './election.js';
import { ClientClosedError, InvalidArgumentError } from './errors.js';
import { deleteKey, getKey, putKey, type DeleteResult, type KvValue, type PutOptions, type PutResult, type WriteOptions } from './kv.js';
import { WatchHub, type KvWatch, type WatchOptions } from './kv-watch.js';
import { runTxn, type TxnOptions, type TxnOutcome, type TxnRequest } from './txn.js';
import { ClientAdmin } from './admin.js';
import { ClusterLink } from './link.js';
import { ClientLocks, readLock, type AcquireOptions, type Lock, type TryAcquireOptions } from './lock.js';
import { SessionManager } from './session.js';
import { TokenFloor } from './token-floor.js';
import { warnProcess, type TrustViolation } from './trust.js';

/** The session TTL when LockClientOptions.ttlMs is not given (the node's sessions.defaultTtlMs
 *  default is the same; a test checks they agree). */
export const DEFAULT_TTL_MS = 15_000;

export interface LockClientOptions {
  /** Client URLs of cluster nodes (ws://host:port); any one reachable node is enough. */
  readonly endpoints: readonly string[];
  /** Session TTL: how long the cluster keeps this client's locks after it goes silent. Default 15000. */
  readonly ttlMs?: number;
  /** Shown next to this client's locks in lock tables and the status page, so people can
   *  tell who holds what (1..128 UTF-8 bytes). Default "HOST:PID" of this process. */
  readonly label?: string;
  /** Bound on one operation's retries across nodes. Default 10000. */
  readonly requestTimeoutMs?: number;
  /** How long one attempt on a live node may go unanswered before trying another node.
   *  Default: from the cluster's timing (4 election timeouts + 2 heartbeats: 1.3 s at the
   *  defaults). A node that goes silent is given up sooner, after two election timeouts
   *  plus two heartbeats without a frame (the SDK pings while requests are in flight). */
  readonly attemptTimeoutMs?: number;
  /** Bound on opening a connection and saying hello. Default 3000. */
  readonly connectTimeoutMs?: number;
  /** Assumed worst relative rate difference of client and server clocks. Default 0.01 (1 %). */
  readonly maxClockDrift?: number;
  /** Subtracted from the safe deadline. Default max(50 ms, 5 % of the TTL). */
  readonly safetyMarginMs?: number;
  /** Reconnect backoff: exponential from initialMs (default 25) to maxMs (default 1000), jittered. */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** connect(): fail at once when every endpoint refuses the connection (nothing listens
   *  there), instead of retrying until requestTimeoutMs. For command-line tools, where a
   *  cluster that is down should be said so at once. Default false (a client started before
   *  its cluster keeps trying). */
  readonly failWhenAllRefuse?: boolean;
  /** Connect to the leader when a node names it (saves a forwarding hop per write). Default true. */
  readonly preferLeader?: boolean;
  /** Sent in hello, for clusters that require authentication. Given to the endpoints above;
   *  to a member learned from the cluster only once it has proved it holds the token's
   *  digest (docs/security.md, "What clients trust"). A function is called at every
   *  connection, so that a long-running client can move to a new token of its name (a token
   *  rotation) and keep its sessions and locks: the node closes connections whose token is
   *  removed, and the client reconnects with what the function then returns. */
  readonly authToken?: string | (() => string);
  /** The cluster id to accept nodes of. Default: the one the first node reached answers
   *  with; either way a node answering for another cluster is not used. */
  readonly clusterId?: string;
  /** Told when a node is set aside as untrusted: it answered for another cluster, a learned
   *  member did not prove itself, a grant came with a token below the client's floor
   *  (TOKEN_REGRESSION), or a node named a URL with less protection than the endpoints.
   *  Default: process.emitWarning (type PalisadeTrustWarning). */
  readonly onTrustViolation?: (violation: TrustViolation) => void;
  /** For wss:// endpoints: the CA that signs the nodes' certificates (default: the system's
   *  roots), and a client certificate for nodes that require one. PEM text or bytes. A
   *  function is called at every connection, so that a long-running client takes a new CA (a
   *  CA replaced while it holds locks) without a restart. */
  readonly tls?: ClientTlsOptions | (() => ClientTlsOptions);
  /** Monotonic clock and timers; tests inject a fake one. */
  readonly clock?: Clock;
  /** WebSocket implementation; default the `ws` package. */
  readonly WebSocket?: WebSocketConstructor;
  /** Randomness for the first endpoint and backoff jitter. Default Math.random. */
  readonly random?: () => number;
}

/** HOST:PID: enough to find the process that holds a lock. */
export function defaultLabel(): string {
  return `${hostname()}:${process.pid}`;
}

export interface ClientTlsOptions {
  readonly ca?: string | Uint8Array;
  readonly cert?: string | Uint8Array;
  readonly key?: string | Uint8Array;
}

/** The `ws` WebSocket with TLS options bound, as the constructor the link expects. */
function wsWithTls(given: ClientTlsOptions | (() => ClientTlsOptions)): WebSocketConstructor {
  const pem = (x: string | Uint8Array): string | Buffer => (typeof x === 'string' ? x : Buffer.from(x));
  const optionsOf = (tls: ClientTlsOptions) => ({
    ...(tls.ca !== undefined ? { ca: pem(tls.ca) } : {}),
    ...(tls.cert !== undefined ? { cert: pem(tls.cert) } : {}),
    ...(tls.key !== undefined ? { key: pem(tls.key) } : {}),
  });
  const fixed = typeof given === 'function' ? null : optionsOf(given);
  return class extends WebSocket {
    constructor(url: string) {
      super(url, fixed ?? optionsOf((given as () => ClientTlsOptions)()));
    }
  };
}

export interface ReadOptions {
  readonly timeoutMs?: number;
}

export class LockClient {
  private readonly core: ClientCore;
  private readonly link: ClusterLink;
  private readonly sessions: SessionManager;
  private readonly locks: ClientLocks;
  private readonly elections: ElectionHub;
  private readonly watches: WatchHub;
  /** Sessions as an operator sees them, and revoking one (admin.ts). */
  readonly admin: ClientAdmin;
  private closing: Promise<void> | null = null;

  private constructor(options: LockClientOptions) {
    if (!Array.isArray(options.endpoints) || options.endpoints.length === 0) {
      throw new InvalidArgumentError('endpoints: give at least one node URL');
    }
    const clock = options.clock ?? systemClock;
    const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    const attemptTimeoutMs = options.attemptTimeoutMs === undefined ? undefined : Math.min(options.attemptTimeoutMs, requestTimeoutMs);
    const maxClockDrift = options.maxClockDrift ?? 0.01;
    if (!(ttlMs > 0)) throw new InvalidArgumentError('ttlMs must be positive');
    if (!(maxClockDrift >= 0 && maxClockDrift < 1)) throw new InvalidArgumentError('maxClockDrift must be in [0, 1)');
    this.link = new ClusterLink(
      {
        endpoints: options.endpoints,
        WebSocket: options.WebSocket ?? (options.tls ? wsWithTls(options.tls) : WebSocket),
        clock,
        random: options.random ?? Math.random,
        connectTimeoutMs: options.connectTimeoutMs ?? 3_000,
        attemptTimeoutMs,
        backoffInitialMs: options.backoff?.initialMs ?? 25,
        backoffMaxMs: options.backoff?.maxMs ?? 1_000,
        preferLeader: options.preferLeader ?? true,
        ...(options.authToken === undefined ? {} : { authToken: options.authToken }),
        ...(options.failWhenAllRefuse ? { failWhenAllRefuse: true } : {}),
        ...(options.clusterId === undefined ? {} : { clusterId: options.clusterId }),
        onTrustViolation: options.onTrustViolation ?? warnProcess,
      },
      {
        onEvent: (event, url) => this.dispatch(event, url),
        prepare: (connection) => this.sessions.prepare(connection),
        onReady: () => {
          this.locks.recheckWaiters();
          this.elections.resubscribeAll();
          this.watches.resubscribeAll();
        },
      },
    );
    this.sessions = new SessionManager(this.link, {
      ttlMs,
      label: options.label ?? defaultLabel(),
      maxClockDrift,
      safetyMarginMs: options.safetyMarginMs,
      requestTimeoutMs,
      clock,
    });
    this.core = { clock, link: this.link, sessions: this.sessions, requestTimeoutMs, floor: new TokenFloor() };
    this.locks = new ClientLocks(this.core);
    this.elections = new ElectionHub(this.core);
    this.watches = new WatchHub(this.core);
    this.admin = new ClientAdmin(this.core);
    this.link.start();
  }

  /**
   * Connects to the cluster and opens this client's session. Resolves once the session is
   * open; rejects (and closes) if that fails within requestTimeoutMs.
   */
  static async connect(options: LockClientOptions): Promise<LockClient> {
    const client = new LockClient(options);
    try {
      await client.sessions.ensure(defaultDeadline(client.core));
    } catch (e) {
      await client.close();
      throw e;
    }
    return client;
  }

  /** This client's current session id (null between sessions). */
  get sessionId(): number | null {
    return this.sessions.active?.id ?? null;
  }

  /** The current session's end: aborted (its reason a SessionExpiredError saying why: an
   *  expiry, a revoke by an operator, a close) when it ends; null between sessions. What an
   *  ephemeral key's writer watches to know its key is gone. */
  get sessionSignal(): AbortSignal | null {
    return this.sessions.active?.signal ?? null;
  }

  /** The node this client is connected to, if any. */
  get connectedUrl(): string | null {
    return this.link.connectedUrl;
  }

  /**
   * Acquires `name`, waiting in the cluster's FIFO queue until granted (or `waitMs` passes:
   * LockTimeoutError; or `signal` aborts). Nothing is left held or queued on failure.
   */
  async acquire(name: string, options?: AcquireOptions): Promise<Lock> {
    this.checkOpen();
    return this.locks.acquire(name, options);
  }

  /** Acquires `name` only if it is free now; null when it is busy. */
  async tryAcquire(name: string, options?: TryAcquireOptions): Promise<Lock | null> {
    this.checkOpen();
    return this.locks.tryAcquire(name, options);
  }

  /** Acquires `name`, runs fn with the lock, and releases it even when fn throws. */
  withLock<T>(name: string, fn: (lock: Lock) => T | Promise<T>): Promise<T>;
  withLock<T>(name: string, options: AcquireOptions, fn: (lock: Lock) => T | Promise<T>): Promise<T>;
  async withLock<T>(
    name: string,
    optionsOrFn: AcquireOptions | ((lock: Lock) => T | Promise<T>),
    maybeFn?: (lock: Lock) => T | Promise<T>,
  ): Promise<T> {
    const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn];
    if (typeof fn !== 'function') throw new InvalidArgumentError('withLock needs a function to run');
    const lock = await this.acquire(name, options);
    let result: T;
    try {
      result = await fn(lock);
    } catch (e) {
      await lock.release().catch(() => {}); // fn's error is the one worth reporting
      throw e;
    }
    await lock.release();
    return result;
  }

  /** An election by name: campaign, observe, read its leader. */
  election(name: string): Election {
    this.checkOpen();
    return new Election(this.core, this.elections, name);
  }

  /** A lock's holders, token(s) and waiters (linearizable read). */
  async get(name: string, options: ReadOptions = {}): Promise<LockInfo> {
    this.checkOpen();
    if (typeof name !== 'string' || name === '') throw new InvalidArgumentError('lock name must be a non-empty string');
    return readLock(this.core, name, options.timeoutMs);
  }

  /** Writes a key; with `fence`, only while that lock is held with that token; with
   *  `session`, tied to this client's session (deleted when the session ends). */
  async put(key: string, value: KvValue, options?: PutOptions): Promise<PutResult> {
    this.checkOpen();
    return putKey(this.core, key, value, options);
  }

  /** Reads a key (linearizable); null when absent. */
  async kvGet(key: string, options: ReadOptions = {}): Promise<KvEntry | null> {
    this.checkOpen();
    return getKey(this.core, key, options.timeoutMs);
  }

  /** Deletes a key; with `fence`, only while that lock is held with that token. */
  async delete(key: string, options?: WriteOptions): Promise<DeleteResult> {
    this.checkOpen();
    return deleteKey(this.core, key, options);
  }

  /**
   * Applies one branch of writes in one entry: `success` when every compare holds (key
   * revisions, absent keys, locks held with a token: a Lock handle fences the writes), else
   * `failure`. At most the cluster's txn.maxOps compares and writes per branch.
   */
  async txn(txn: TxnRequest, options?: TxnOptions): Promise<TxnOutcome> {
    this.checkOpen();
    return runTxn(this.core, txn, options);
  }

  /** Streams changes to keys under `prefix`, each exactly once and in revision order; across
   *  reconnects and leader changes it resumes from its revision (CompactedError if the
   *  cluster's watch history no longer reaches back to it). */
  watch(prefix: string, options?: WatchOptions): KvWatch {
    this.checkOpen();
    return this.watches.watch(prefix, options);
  }

  /** Status of the node this client is connected to. */
  async status(options: ReadOptions = {}): Promise<NodeStatus> {
    this.checkOpen();
    const deadline = options.timeoutMs === undefined ? defaultDeadline(this.core) : this.core.clock.now() + options.timeoutMs;
    return this.link.call(() => ({ op: 'status' }), { deadline });
  }

  /**
   * Closes the session (the cluster releases its locks and leaderships), ends watches and
   * observers, stops timers and closes the connection. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.sessions.close();
      } finally {
        this.watches.endAll();
        this.elections.endAll();
        this.link.close();
      }
    })();
    return this.closing;
  }

  private checkOpen(): void {
    if (this.closing) throw new ClientClosedError();
  }

  private dispatch(event: ServerEvent, url: string): void {
    switch (event.event) {
      case 'granted':
      case 'released':
        // Events for a session that is not ours (an earlier one, or a stray) are ignored.
        if (this.sessions.active?.id === event.session) this.locks.handleEvent(event, url);
        return;
      case 'sessionExpired':
        this.sessions.expiredByServer(event);
        return;
      case 'electionChanged':
        this.elections.handleEvent(event, url);
        return;
      case 'kvChanged':
        this.watches.handleEvent(event);
        return;
    }
  }
}
