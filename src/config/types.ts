// The cluster config as the rest of the code sees it, once validated (cluster-config.ts) with
// every default filled in (defaults.ts). Types only, so that both can import them.
/** One member. The URLs are where the others and the clients reach the node (advertised);
 *  the listen URLs are what it binds, the same unless the config says otherwise (NAT,
 *  containers, a wildcard address). */
export interface NodeConfig {
  readonly id: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly dataDir: string;
  /** Where this node serves /metrics, /healthz, /readyz and the status page (optional). */
  readonly httpUrl?: string;
  readonly listenPeerUrl: string;
  readonly listenClientUrl: string;
  /** Set exactly when httpUrl is. */
  readonly listenHttpUrl?: string;
}

/** The named timings of `raft.profile` (defaults.ts RAFT_PROFILES). */
export type RaftProfileName = 'loopback' | 'lan';

export interface RaftTiming {
  /** How often the driver calls tick(). */
  readonly tickMs: number;
  readonly heartbeatMs: number;
  /** Base election timeout; the effective one is drawn from [base, 2*base). */
  readonly electionTimeoutMs: number;
}

export interface SessionLimits {
  readonly defaultTtlMs: number;
  readonly minTtlMs: number;
  readonly maxTtlMs: number;
  readonly lockDelayMs: number;
  /** Sessions open at once in the whole cluster (the lock machine refuses more). */
  readonly maxSessions: number;
  /** Sessions open at once per token (auth on), so one token cannot take them all. */
  readonly maxSessionsPerToken: number;
}

export interface SnapshotSettings {
  /** Snapshot once the applied log has grown by this many entries since the last one. */
  readonly entries: number;
  /** Entries kept behind a snapshot so that slightly slow followers need no snapshot. */
  readonly keepTail: number;
}

/** One client bearer token (docs/security.md). */
export interface TokenConfig {
  /** Names the token in logs and errors; the token itself is never logged. */
  readonly name: string;
  readonly token: string;
  /** Lock, election, key, opKey and fence-lock names the token may touch; null = all. */
  readonly prefixes: readonly string[] | null;
  /** May read, open sessions and keep them alive, but change no lock, election, key or op. */
  readonly readOnly: boolean;
  /** May change the cluster: addMember, removeMember, transferLeader, snapshot. */
  readonly admin: boolean;
}

/** Client authentication; absent from the file = off (every client is trusted). */
export interface AuthConfig {
  readonly tokens: readonly TokenConfig[];
}

/** Certificate files of one port. Paths are absolute; "{id}" stands for the node's id. */
export interface TlsFilesConfig {
  readonly cert: string;
  readonly key: string;
  /** Trusted CA: verifies the other side (the acceptor when dialing, client certificates when accepting). */
  readonly ca?: string;
  /** Refuse connections that present no certificate signed by `ca` (mutual TLS). */
  readonly requireClientCert: boolean;
}

/** TLS of each port; null = plain ws (the URLs say ws://). */
export interface TlsConfig {
  readonly peer: TlsFilesConfig | null;
  readonly client: TlsFilesConfig | null;
}

/** Bounds on what one client may ask of a node (docs/security.md). */
export interface ClientLimitsConfig {
  /** Largest frame accepted from a client (FRAME_TOO_LARGE, then close 1009). */
  readonly maxFrameBytes: number;
  /** Responses queued unread for one client before it is disconnected. */
  readonly maxBufferedBytes: number;
  /** Open client connections from one IP address; more are closed with 1013. */
  readonly maxConnectionsPerAddress: number;
  /** Token bucket per connection: sustained rate and burst (RATE_LIMITED). 0 = unlimited. */
  readonly requestsPerSecond: number;
  readonly requestBurst: number;
  /** Sessions opened or attached over one connection (LIMIT_EXCEEDED). */
  readonly maxSessionsPerConnection: number;
  /** Locks one session holds (LIMIT_EXCEEDED). */
  readonly maxLocksPerSession: number;
  /** Locks one session waits for at once (LIMIT_EXCEEDED). */
  readonly maxWaitsPerSession: number;
  /** Sessions queued behind one lock (LIMIT_EXCEEDED). */
  readonly maxWaitersPerLock: number;
  /** Longest lock, election or fence-lock name in UTF-8 bytes (INVALID_ARGUMENT); keys and
   *  opKeys keep the lock machine's own bound (1 KiB). At most the machine's 256. */
  readonly maxNameBytes: number;
  /** Key prefixes watched plus elections observed over one connection (LIMIT_EXCEEDED). */
  readonly maxWatchesPerConnection: number;
  /** Sessions opened through this node from one address (any transport), open at once
   *  (LIMIT_EXCEEDED): what one address can take of sessions.maxSessions. */
  readonly maxSessionsPerAddress: number;
  /** Requests being served at once for one address, websocket and HTTP (LIMIT_EXCEEDED). */
  readonly maxInFlightPerAddress: number;
  /** Token bucket per client address, over all its connections, kept across reconnects
   *  (RATE_LIMITED). 0 = unlimited. */
  readonly requestsPerSecondPerAddress: number;
  readonly requestBurstPerAddress: number;
  /** Token bucket per token name (auth on), over all its connections and addresses. 0 = unlimited. */
  readonly requestsPerSecondPerToken: number;
  readonly requestBurstPerToken: number;
}

/** What web browsers may do (src/transport/browser-guard.ts): programs send no Origin, pages do. */
export interface HttpPolicyConfig {
  /** Origins (`scheme://host[:port]`) whose pages may open websockets to and call the client
   *  port; none by default. */
  readonly allowedOrigins: readonly string[];
  /** Host names requests may name besides IP addresses, the host of the port's own URL and
   *  (on a loopback bind) localhost: the names clients reach the node by through DNS. */
  readonly allowedHosts: readonly string[];
}

/** The operation ledger (lock.once): how long finished and abandoned operations are kept. */
export interface LedgerSettings {
  /** A completed operation answers `done` for this long, then the leader prunes it. */
  readonly retentionMs: number;
  /** An operation begun and never completed is dropped after this long. */
  readonly abandonedAfterMs: number;
}

/** Byte budgets of the replicated tables (the lock machine's settings; file keys in
 *  src/config/replicated-settings.ts). */
export interface BudgetSettings {
  readonly kvBytes: number;
  readonly kvBytesPerToken: number;
  readonly ledgerBytes: number;
  readonly ledgerBytesPerToken: number;
  readonly electionBytes: number;
  readonly electionBytesPerToken: number;
  readonly answerBytesPerSession: number;
}

/** The transaction's bound (a replicated setting: the file seeds a new cluster). */
export interface TxnSettings {
  /** Compares of one txn, and operations in each of its branches. */
  readonly maxOps: number;
}

/** The replicated watch history that watches resume from (a replicated setting: the file
 *  seeds a new cluster; `palisade config set watch.historyEntries=...` afterwards). The
 *  oldest changes are dropped past any of the three bounds (0 keeps none). */
export interface WatchHistorySettings {
  readonly historyEntries: number;
  readonly historyBytes: number;
  readonly historyMaxAgeMs: number;
}

export interface ClusterConfig {
  readonly clusterId: string;
  /** The cluster secrets, never empty, all different: a node proves itself to its peers with
   *  the first and accepts a peer that proves any (the file's `secret`, then `secrets`). */
  readonly secrets: readonly string[];
  readonly nodes: readonly NodeConfig[];
  readonly raft: RaftTiming;
  readonly sessions: SessionLimits;
  readonly snapshot: SnapshotSettings;
  readonly ledger: LedgerSettings;
  readonly budgets: BudgetSettings;
  readonly txn: TxnSettings;
  readonly watch: WatchHistorySettings;
  /** null: clients are not authenticated. */
  readonly auth: AuthConfig | null;
  readonly tls: TlsConfig;
  readonly limits: ClientLimitsConfig;
  readonly http: HttpPolicyConfig;
  /** Where the file was read from; relative data directories resolve against it. */
  readonly baseDir: string;
}
