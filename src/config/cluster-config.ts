// cluster.config.json: the embedded default and its validation. Every problem names the
// field it is about, so a typo stops start-up with a message that says where to look.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import {
  DEFAULT_CLIENT_LIMITS,
  DEFAULT_LEDGER,
  DEFAULT_RAFT,
  DEFAULT_SESSIONS,
  DEFAULT_SNAPSHOT,
  DEFAULT_KV,
  MACHINE_MAX_NAME_BYTES,
  defaultMinTtlMs,
  defaultSessionTtlMs,
} from './defaults.js';

export interface NodeConfig {
  readonly id: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly dataDir: string;
  /** Where this node serves /metrics, /healthz, /readyz and the status page (optional). */
  readonly httpUrl?: string;
}

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
}

/** The operation ledger (lock.once): how long finished and abandoned operations are kept. */
export interface LedgerSettings {
  /** A completed operation answers `done` for this long, then the leader prunes it. */
  readonly retentionMs: number;
  /** An operation begun and never completed is dropped after this long. */
  readonly abandonedAfterMs: number;
}

/** Bounds of transactions and of the watch history a new cluster starts with (replicated
 *  settings afterwards: `palisade config set txn.maxOps=...`). */
export interface KvSettings {
  readonly txnMaxOps: number;
  readonly historyEntries: number;
  readonly historyBytes: number;
  readonly historyMaxAgeMs: number;
}

export interface ClusterConfig {
  readonly clusterId: string;
  readonly secret: string;
  readonly nodes: readonly NodeConfig[];
  readonly raft: RaftTiming;
  readonly sessions: SessionLimits;
  readonly snapshot: SnapshotSettings;
  readonly ledger: LedgerSettings;
  readonly kv: KvSettings;
  /** null: clients are not authenticated. */
  readonly auth: AuthConfig | null;
  readonly tls: TlsConfig;
  readonly limits: ClientLimitsConfig;
  /** Where the file was read from; relative data directories resolve against it. */
  readonly baseDir: string;
}

export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`config: ${field}: ${message}`);
    this.name = 'ConfigError';
  }
}

export { DEFAULT_CLIENT_LIMITS } from './defaults.js';
/** The wire's bound on any string (client-protocol MAX_STRING_BYTES). */
const MAX_TOKEN_CHARS = 4096;

type Obj = Record<string, unknown>;

function isObj(x: unknown): x is Obj {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function str(o: Obj, key: string, field: string): string {
  const v = o[key];
  if (v === undefined) throw new ConfigError(field, 'is missing');
  if (typeof v !== 'string' || v.length === 0) throw new ConfigError(field, 'must be a non-empty string');
  return v;
}

function int(o: Obj, key: string, field: string, dflt: number, min: number, max: number): number {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new ConfigError(field, 'must be an integer');
  if (v < min || v > max) throw new ConfigError(field, `must be between ${min} and ${max}`);
  return v;
}

function section(o: Obj, key: string): Obj {
  const v = o[key];
  if (v === undefined) return {};
  if (!isObj(v)) throw new ConfigError(key, 'must be an object');
  return v;
}

export function parseWsUrl(url: string, field: string): { host: string; port: number } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ConfigError(field, `"${url}" is not a URL`);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new ConfigError(field, `"${url}" must start with ws:// or wss://`);
  const port = Number(u.port);
  if (!u.port || !Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError(field, `"${url}" needs an explicit port`);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port };
}

export function parseHttpUrl(url: string, field: string): { host: string; port: number } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ConfigError(field, `"${url}" is not a URL`);
  }
  if (u.protocol !== 'http:') throw new ConfigError(field, `"${url}" must start with http://`);
  if (u.pathname !== '/' || u.search || u.hash) throw new ConfigError(field, `"${url}" must have no path, query or fragment`);
  const port = Number(u.port);
  if (!u.port || !Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError(field, `"${url}" needs an explicit port`);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port };
}

export function validateConfig(raw: unknown, baseDir: string): ClusterConfig {
  if (!isObj(raw)) throw new ConfigError('(root)', 'must be a JSON object');
  const clusterId = str(raw, 'clusterId', 'clusterId');
  const secret = str(raw, 'secret', 'secret');
  if (secret.length < 16) throw new ConfigError('secret', 'must be at least 16 characters');
  const nodesRaw = raw['nodes'];
  if (!Array.isArray(nodesRaw) || nodesRaw.length === 0) throw new ConfigError('nodes', 'must be a non-empty array');
  const ids = new Set<string>();
  const endpoints = new Map<string, string>();
  const nodes = nodesRaw.map((n, i): NodeConfig => {
    const f = `nodes[${i}]`;
    if (!isObj(n)) throw new ConfigError(f, 'must be an object');
    const id = str(n, 'id', `${f}.id`);
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(id)) throw new ConfigError(`${f}.id`, 'may hold only letters, digits, ".", "_" and "-" (1-64)');
    if (ids.has(id)) throw new ConfigError(`${f}.id`, `duplicate id "${id}"`);
    ids.add(id);
    const peerUrl = str(n, 'peerUrl', `${f}.peerUrl`);
    const clientUrl = str(n, 'clientUrl', `${f}.clientUrl`);
    const httpUrl = n['httpUrl'] === undefined ? undefined : str(n, 'httpUrl', `${f}.httpUrl`);
    const urls: [string, string][] = [['peerUrl', peerUrl], ['clientUrl', clientUrl]];
    if (httpUrl !== undefined) urls.push(['httpUrl', httpUrl]);
    for (const [key, url] of urls) {
      const { host, port } = key === 'httpUrl' ? parseHttpUrl(url, `${f}.${key}`) : parseWsUrl(url, `${f}.${key}`);
      const ep = `${host}:${port}`;
      const prev = endpoints.get(ep);
      if (prev) throw new ConfigError(`${f}.${key}`, `port ${port} on ${host} is also used by ${prev}`);
      endpoints.set(ep, `${f}.${key}`);
    }
    const dataDirRaw = str(n, 'dataDir', `${f}.dataDir`);
    const dataDir = isAbsolute(dataDirRaw) ? dataDirRaw : resolve(baseDir, dataDirRaw);
    return { id, peerUrl, clientUrl, dataDir, ...(httpUrl !== undefined ? { httpUrl } : {}) };
  });
  const r = section(raw, 'raft');
  const tickMs = int(r, 'tickMs', 'raft.tickMs', DEFAULT_RAFT.tickMs, 1, 1000);
  const heartbeatMs = int(r, 'heartbeatMs', 'raft.heartbeatMs', DEFAULT_RAFT.heartbeatMs, tickMs, 10_000);
  const electionTimeoutMs = int(r, 'electionTimeoutMs', 'raft.electionTimeoutMs', DEFAULT_RAFT.electionTimeoutMs, heartbeatMs * 2, 60_000);
  const s = section(raw, 'sessions');
  const minTtlMs = int(s, 'minTtlMs', 'sessions.minTtlMs', defaultMinTtlMs(electionTimeoutMs), 100, 86_400_000);
  const maxTtlMs = int(s, 'maxTtlMs', 'sessions.maxTtlMs', Math.max(DEFAULT_SESSIONS.maxTtlMs, minTtlMs), minTtlMs, 86_400_000);
  const defaultTtlMs = int(s, 'defaultTtlMs', 'sessions.defaultTtlMs', defaultSessionTtlMs(minTtlMs, maxTtlMs), minTtlMs, maxTtlMs);
  // The lock machine refuses a default lock-delay above its largest (a start-up crash otherwise).
  const lockDelayMs = int(s, 'lockDelayMs', 'sessions.lockDelayMs', DEFAULT_SESSIONS.lockDelayMs, 0, DEFAULT_SESSIONS.maxLockDelayMs);
  const maxSessions = int(s, 'maxSessions', 'sessions.maxSessions', DEFAULT_SESSIONS.maxSessions, 1, 10_000_000);
  const maxSessionsPerToken = int(s, 'maxSessionsPerToken', 'sessions.maxSessionsPerToken', Math.min(DEFAULT_SESSIONS.maxSessionsPerToken, maxSessions), 1, maxSessions);
  // A session must outlive a leader change, or every failover would expire sessions.
  if (minTtlMs < electionTimeoutMs * 2) {
    throw new ConfigError('sessions.minTtlMs', `must be at least twice raft.electionTimeoutMs (${electionTimeoutMs * 2})`);
  }
  const sn = section(raw, 'snapshot');
  const entries = int(sn, 'entries', 'snapshot.entries', DEFAULT_SNAPSHOT.entries, 10, 100_000_000);
  const keepTail = int(sn, 'keepTail', 'snapshot.keepTail', DEFAULT_SNAPSHOT.keepTail, 0, 100_000_000);
  const lg = section(raw, 'ledger');
  const retentionMs = int(lg, 'retentionMs', 'ledger.retentionMs', DEFAULT_LEDGER.retentionMs, 1_000, 365 * 86_400_000);
  const abandonedAfterMs = int(lg, 'abandonedAfterMs', 'ledger.abandonedAfterMs', DEFAULT_LEDGER.abandonedAfterMs, retentionMs, 3650 * 86_400_000);
  const tx = section(raw, 'txn');
  const w = section(raw, 'watch');
  const kv: KvSettings = {
    txnMaxOps: int(tx, 'maxOps', 'txn.maxOps', DEFAULT_KV.txnMaxOps, 1, 1_024),
    historyEntries: int(w, 'historyEntries', 'watch.historyEntries', DEFAULT_KV.historyEntries, 0, 10_000_000),
    historyBytes: int(w, 'historyBytes', 'watch.historyBytes', DEFAULT_KV.historyBytes, 0, 4 * 1024 ** 3),
    historyMaxAgeMs: int(w, 'historyMaxAgeMs', 'watch.historyMaxAgeMs', DEFAULT_KV.historyMaxAgeMs, 0, 30 * 86_400_000),
  };
  const auth = authSection(raw);
  const tls = tlsSection(raw, nodes, baseDir);
  const limits = limitsSection(raw);
  return {
    clusterId,
    secret,
    nodes,
    raft: { tickMs, heartbeatMs, electionTimeoutMs },
    sessions: { defaultTtlMs, minTtlMs, maxTtlMs, lockDelayMs, maxSessions, maxSessionsPerToken },
    snapshot: { entries, keepTail },
    ledger: { retentionMs, abandonedAfterMs },
    kv,
    auth,
    tls,
    limits,
    baseDir,
  };
}

function bool(o: Obj, key: string, field: string, dflt: boolean): boolean {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new ConfigError(field, 'must be true or false');
  return v;
}

/** "auth": {"tokens": [{name, token, prefixes?, readOnly?}]}; absent = auth off. */
function authSection(raw: Obj): AuthConfig | null {
  if (raw['auth'] === undefined) return null;
  const a = section(raw, 'auth');
  const list = a['tokens'];
  if (!Array.isArray(list) || list.length === 0) throw new ConfigError('auth.tokens', 'must be a non-empty array (leave out "auth" to turn authentication off)');
  const names = new Set<string>();
  const secrets = new Set<string>();
  const tokens = list.map((t, i): TokenConfig => {
    const f = `auth.tokens[${i}]`;
    if (!isObj(t)) throw new ConfigError(f, 'must be an object');
    const name = str(t, 'name', `${f}.name`);
    if (!/^[A-Za-z0-9_.@:-]{1,64}$/.test(name)) throw new ConfigError(`${f}.name`, 'may hold only letters, digits and "._@:-" (1-64)');
    if (names.has(name)) throw new ConfigError(`${f}.name`, `duplicate token name "${name}"`);
    names.add(name);
    const token = str(t, 'token', `${f}.token`);
    // The message never repeats the token: config errors end up in logs.
    if (token.length < 16 || token.length > MAX_TOKEN_CHARS) throw new ConfigError(`${f}.token`, `must be 16 to ${MAX_TOKEN_CHARS} characters`);
    if (secrets.has(token)) throw new ConfigError(`${f}.token`, 'is the same as another token (each client identity needs its own)');
    secrets.add(token);
    let prefixes: string[] | null = null;
    if (t['prefixes'] !== undefined) {
      const p = t['prefixes'];
      if (!Array.isArray(p) || p.length === 0) throw new ConfigError(`${f}.prefixes`, 'must be a non-empty array of strings (leave it out to allow every name)');
      prefixes = p.map((x, j) => {
        if (typeof x !== 'string' || Buffer.byteLength(x, 'utf8') > MACHINE_MAX_NAME_BYTES) {
          throw new ConfigError(`${f}.prefixes[${j}]`, `must be a string of at most ${MACHINE_MAX_NAME_BYTES} bytes`);
        }
        return x;
      });
      if (prefixes.includes('')) prefixes = null; // "" matches every name
    }
    const readOnly = bool(t, 'readOnly', `${f}.readOnly`, false);
    const admin = bool(t, 'admin', `${f}.admin`, false);
    if (readOnly && admin) throw new ConfigError(`${f}.admin`, 'a read-only token cannot be an admin token');
    return { name, token, prefixes, readOnly, admin };
  });
  return { tokens };
}

/** "tls": {"peer": {...}, "client": {...}}; each port's URLs must agree with its section. */
function tlsSection(raw: Obj, nodes: readonly NodeConfig[], baseDir: string): TlsConfig {
  const t = section(raw, 'tls');
  for (const key of Object.keys(t)) if (key !== 'peer' && key !== 'client') throw new ConfigError(`tls.${key}`, 'unknown; use "peer" and "client"');
  const peer = tlsFiles(t, 'peer', baseDir);
  const client = tlsFiles(t, 'client', baseDir);
  checkSchemes(nodes, 'peerUrl', peer !== null);
  checkSchemes(nodes, 'clientUrl', client !== null);
  return { peer, client };
}

function tlsFiles(t: Obj, key: 'peer' | 'client', baseDir: string): TlsFilesConfig | null {
  if (t[key] === undefined) return null;
  const o = section(t, key);
  const f = `tls.${key}`;
  const path = (name: string): string => {
    const p = str(o, name, `${f}.${name}`);
    return isAbsolute(p) ? p : resolve(baseDir, p);
  };
  const cert = path('cert');
  const key_ = path('key');
  const ca = o['ca'] === undefined ? undefined : path('ca');
  const requireClientCert = bool(o, 'requireClientCert', `${f}.requireClientCert`, false);
  // Without a CA of our own any publicly trusted certificate would pass as a client.
  if (requireClientCert && ca === undefined) throw new ConfigError(`${f}.ca`, 'is needed to verify client certificates (requireClientCert)');
  return { cert, key: key_, ...(ca !== undefined ? { ca } : {}), requireClientCert };
}

/** wss:// means TLS on: every node's URL of that port must say so exactly when TLS is set. */
function checkSchemes(nodes: readonly NodeConfig[], key: 'peerUrl' | 'clientUrl', tlsOn: boolean): void {
  const where = key === 'peerUrl' ? 'tls.peer' : 'tls.client';
  nodes.forEach((n, i) => {
    const secure = n[key].startsWith('wss:');
    if (secure && !tlsOn) throw new ConfigError(`nodes[${i}].${key}`, `"${n[key]}" is wss:// but ${where} is not configured`);
    if (!secure && tlsOn) throw new ConfigError(`nodes[${i}].${key}`, `"${n[key]}" must be wss:// when ${where} is configured`);
  });
}

function limitsSection(raw: Obj): ClientLimitsConfig {
  const l = section(raw, 'limits');
  const d = DEFAULT_CLIENT_LIMITS;
  const known = new Set(Object.keys(d));
  for (const key of Object.keys(l)) if (!known.has(key)) throw new ConfigError(`limits.${key}`, `unknown limit (known: ${[...known].join(', ')})`);
  const requestsPerSecond = int(l, 'requestsPerSecond', 'limits.requestsPerSecond', d.requestsPerSecond, 0, 10_000_000);
  return {
    maxFrameBytes: int(l, 'maxFrameBytes', 'limits.maxFrameBytes', d.maxFrameBytes, 1024, 64 << 20),
    maxBufferedBytes: int(l, 'maxBufferedBytes', 'limits.maxBufferedBytes', d.maxBufferedBytes, 64 << 10, 1 << 30),
    maxConnectionsPerAddress: int(l, 'maxConnectionsPerAddress', 'limits.maxConnectionsPerAddress', d.maxConnectionsPerAddress, 1, 1_000_000),
    requestsPerSecond,
    // The default burst is never below the rate, or a steady client at exactly the rate would be refused.
    requestBurst: int(l, 'requestBurst', 'limits.requestBurst', Math.max(d.requestBurst, requestsPerSecond), Math.min(1, requestsPerSecond), 100_000_000),
    maxSessionsPerConnection: int(l, 'maxSessionsPerConnection', 'limits.maxSessionsPerConnection', d.maxSessionsPerConnection, 1, 1_000_000),
    maxLocksPerSession: int(l, 'maxLocksPerSession', 'limits.maxLocksPerSession', d.maxLocksPerSession, 1, 10_000),
    maxWaitsPerSession: int(l, 'maxWaitsPerSession', 'limits.maxWaitsPerSession', d.maxWaitsPerSession, 1, 10_000),
    maxWaitersPerLock: int(l, 'maxWaitersPerLock', 'limits.maxWaitersPerLock', d.maxWaitersPerLock, 1, 1_000_000),
    maxNameBytes: int(l, 'maxNameBytes', 'limits.maxNameBytes', d.maxNameBytes, 1, MACHINE_MAX_NAME_BYTES),
    maxWatchesPerConnection: int(l, 'maxWatchesPerConnection', 'limits.maxWatchesPerConnection', d.maxWatchesPerConnection, 1, 1_000_000),
  };
}

export function loadConfig(path: string): ClusterConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError('(file)', `cannot read ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError('(file)', `${path} is not valid JSON: ${(e as Error).message}`);
  }
  return validateConfig(raw, dirname(resolve(path)));
}

export function nodeById(cfg: ClusterConfig, id: string): NodeConfig {
  const n = cfg.nodes.find((x) => x.id === id);
  if (!n) throw new ConfigError('--id', `no node "${id}" in the config (have: ${cfg.nodes.map((x) => x.id).join(', ')})`);
  return n;
}
