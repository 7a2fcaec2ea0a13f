// cluster.config.json: reading and validating it. The file is first checked against
// config.schema.json (schema.ts: every key known, every value of the right type and range),
// then the rules that tie settings together are checked here and every default is filled in
// (defaults.ts). Every problem names the field it is about, so a typo stops start-up with a
// message that says where to look.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { checkAddresses, isLoopbackHost, nodePort, parseWsUrl, type NodePort } from './addresses.js';
import { ConfigError } from './config-error.js';
import {
  DEFAULT_BUDGETS,
  DEFAULT_CLIENT_LIMITS,
  defaultSessionsPerAddress,
  DEFAULT_LEDGER,
  DEFAULT_SESSIONS,
  DEFAULT_SNAPSHOT,
  DEFAULT_TXN,
  DEFAULT_WATCH_HISTORY,
  MACHINE_MAX_NAME_BYTES,
  RAFT_PROFILES,
  defaultMinTtlMs,
  defaultRaftProfile,
  defaultSessionTtlMs,
} from './defaults.js';
import { checkAgainstSchema } from './schema.js';
import type {
  AuthConfig,
  BudgetSettings,
  HttpPolicyConfig,
  ClientLimitsConfig,
  ClusterConfig,
  NodeConfig,
  RaftProfileName,
  RaftTiming,
  SessionLimits,
  TlsConfig,
  TlsFilesConfig,
  TokenConfig,
  TxnSettings,
  WatchHistorySettings,
} from './types.js';

export type * from './types.js';
export { ConfigError } from './config-error.js';
export { isLoopbackHost, parseHttpUrl, parseWsUrl } from './addresses.js';
export { DEFAULT_CLIENT_LIMITS } from './defaults.js';

/** The file's shape once checked against config.schema.json (so every key here is known and
 *  typed; ranges that depend on other settings are checked below). */
interface RawNode {
  readonly id: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly dataDir: string;
  readonly httpUrl?: string;
  readonly listenPeerUrl?: string;
  readonly listenClientUrl?: string;
  readonly listenHttpUrl?: string;
}
interface RawToken {
  readonly name: string;
  readonly token: string;
  readonly prefixes?: readonly string[];
  readonly readOnly?: boolean;
  readonly admin?: boolean;
}
interface RawTls {
  readonly cert: string;
  readonly key: string;
  readonly ca?: string;
  readonly requireClientCert?: boolean;
}
interface RawConfig {
  readonly clusterId: string;
  readonly secret?: string;
  readonly secrets?: readonly string[];
  readonly nodes: readonly RawNode[];
  readonly raft?: Partial<RaftTiming> & { readonly profile?: RaftProfileName };
  readonly sessions?: Partial<SessionLimits>;
  readonly snapshot?: { readonly entries?: number; readonly keepTail?: number };
  readonly ledger?: { readonly retentionMs?: number; readonly abandonedAfterMs?: number };
  readonly budgets?: Partial<BudgetSettings>;
  readonly txn?: Partial<TxnSettings>;
  readonly watch?: Partial<WatchHistorySettings>;
  readonly auth?: { readonly tokens: readonly RawToken[] };
  readonly tls?: { readonly peer?: RawTls; readonly client?: RawTls };
  readonly limits?: Partial<ClientLimitsConfig>;
  readonly http?: { readonly allowedOrigins?: readonly string[]; readonly allowedHosts?: readonly string[] };
}

/** A value the schema accepted, checked against bounds that depend on other settings. */
function within(value: number, field: string, min: number, max: number, why: string): number {
  if (value < min || value > max) throw new ConfigError(field, `must be between ${min} and ${max} (${why})`);
  return value;
}

export function validateConfig(input: unknown, baseDir: string): ClusterConfig {
  checkAgainstSchema(input);
  const raw = input as RawConfig;
  const nodes = nodesSection(raw.nodes, baseDir);
  const raft = raftSection(raw, nodes);
  const s = raw.sessions ?? {};
  const minTtlMs = s.minTtlMs ?? defaultMinTtlMs(raft.electionTimeoutMs);
  // A session must outlive a leader change, or every failover would expire sessions.
  if (minTtlMs < raft.electionTimeoutMs * 2) {
    throw new ConfigError('sessions.minTtlMs', `must be at least twice raft.electionTimeoutMs (${raft.electionTimeoutMs * 2})`);
  }
  const maxTtlMs = within(s.maxTtlMs ?? Math.max(DEFAULT_SESSIONS.maxTtlMs, minTtlMs), 'sessions.maxTtlMs', minTtlMs, 86_400_000, 'at least sessions.minTtlMs');
  const defaultTtlMs = within(s.defaultTtlMs ?? defaultSessionTtlMs(minTtlMs, maxTtlMs), 'sessions.defaultTtlMs', minTtlMs, maxTtlMs, 'from sessions.minTtlMs to sessions.maxTtlMs');
  const maxSessions = s.maxSessions ?? DEFAULT_SESSIONS.maxSessions;
  const maxSessionsPerToken = within(s.maxSessionsPerToken ?? Math.min(DEFAULT_SESSIONS.maxSessionsPerToken, maxSessions), 'sessions.maxSessionsPerToken', 1, maxSessions, 'at most sessions.maxSessions');
  const lg = raw.ledger ?? {};
  const retentionMs = lg.retentionMs ?? DEFAULT_LEDGER.retentionMs;
  const abandonedAfterMs = within(lg.abandonedAfterMs ?? Math.max(DEFAULT_LEDGER.abandonedAfterMs, retentionMs), 'ledger.abandonedAfterMs', retentionMs, 3650 * 86_400_000, 'at least ledger.retentionMs');
  return {
    clusterId: raw.clusterId,
    secrets: secretsSection(raw),
    nodes,
    raft,
    sessions: { defaultTtlMs, minTtlMs, maxTtlMs, lockDelayMs: s.lockDelayMs ?? DEFAULT_SESSIONS.lockDelayMs, maxSessions, maxSessionsPerToken },
    snapshot: { entries: raw.snapshot?.entries ?? DEFAULT_SNAPSHOT.entries, keepTail: raw.snapshot?.keepTail ?? DEFAULT_SNAPSHOT.keepTail },
    ledger: { retentionMs, abandonedAfterMs },
    budgets: { ...DEFAULT_BUDGETS, ...raw.budgets },
    txn: { ...DEFAULT_TXN, ...raw.txn },
    watch: { ...DEFAULT_WATCH_HISTORY, ...raw.watch },
    auth: authSection(raw),
    tls: tlsSection(raw, nodes, baseDir),
    limits: limitsSection(raw, nodes.length, maxSessions),
    http: httpSection(raw),
    baseDir,
  };
}

/** The most secrets a node holds: each costs an HMAC per peer handshake it accepts. */
export const MAX_SECRETS = 4;

/** `secret` then `secrets`: the first is what this node proves itself with, all are accepted. */
function secretsSection(raw: RawConfig): string[] {
  const list = [...(raw.secret !== undefined ? [raw.secret] : []), ...(raw.secrets ?? [])];
  if (list.length === 0) throw new ConfigError('secret', 'is missing (give "secret", or "secrets" to rotate it)');
  if (list.length > MAX_SECRETS) throw new ConfigError('secrets', `at most ${MAX_SECRETS} secrets in all (secret and secrets): one in use and the next, during a rotation`);
  // The message never repeats a secret: config errors end up in logs.
  const offset = raw.secret !== undefined ? 1 : 0;
  list.forEach((s, i) => {
    if (list.indexOf(s) !== i) throw new ConfigError(`secrets[${i - offset}]`, 'is the same as another secret');
  });
  return list;
}

function nodesSection(list: readonly RawNode[], baseDir: string): NodeConfig[] {
  const ids = new Set<string>();
  const ports: NodePort[] = [];
  const nodes = list.map((n, i): NodeConfig => {
    if (ids.has(n.id)) throw new ConfigError(`nodes[${i}].id`, `duplicate id "${n.id}"`);
    ids.add(n.id);
    if (n.listenHttpUrl !== undefined && n.httpUrl === undefined) {
      throw new ConfigError(`nodes[${i}].listenHttpUrl`, 'needs httpUrl: the address the other nodes fetch this node\'s status from');
    }
    ports.push(nodePort(i, 'peer', n.peerUrl, n.listenPeerUrl), nodePort(i, 'client', n.clientUrl, n.listenClientUrl));
    if (n.httpUrl !== undefined) ports.push(nodePort(i, 'http', n.httpUrl, n.listenHttpUrl));
    return {
      id: n.id,
      peerUrl: n.peerUrl,
      clientUrl: n.clientUrl,
      dataDir: isAbsolute(n.dataDir) ? n.dataDir : resolve(baseDir, n.dataDir),
      listenPeerUrl: n.listenPeerUrl ?? n.peerUrl,
      listenClientUrl: n.listenClientUrl ?? n.clientUrl,
      ...(n.httpUrl !== undefined ? { httpUrl: n.httpUrl, listenHttpUrl: n.listenHttpUrl ?? n.httpUrl } : {}),
    };
  });
  checkAddresses(ports);
  return nodes;
}

/** The profile's timings (named, or the one that fits the peers' addresses), each overridden
 *  by the file's own value. */
function raftSection(raw: RawConfig, nodes: readonly NodeConfig[]): RaftTiming {
  const r = raw.raft ?? {};
  const loopback = nodes.every((n) => isLoopbackHost(parseWsUrl(n.peerUrl, 'peerUrl').host));
  const profile = RAFT_PROFILES[r.profile ?? defaultRaftProfile(loopback)];
  const tickMs = r.tickMs ?? profile.tickMs;
  const heartbeatMs = within(r.heartbeatMs ?? Math.max(profile.heartbeatMs, tickMs), 'raft.heartbeatMs', tickMs, 10_000, 'at least raft.tickMs');
  const electionTimeoutMs = within(r.electionTimeoutMs ?? Math.max(profile.electionTimeoutMs, 2 * heartbeatMs), 'raft.electionTimeoutMs', heartbeatMs * 2, 60_000, 'at least twice raft.heartbeatMs');
  return { tickMs, heartbeatMs, electionTimeoutMs };
}

/** "auth": {"tokens": [{name, token, prefixes?, readOnly?, admin?}]}; absent = auth off. */
function authSection(raw: RawConfig): AuthConfig | null {
  if (raw.auth === undefined) return null;
  const secrets = new Set<string>();
  const tokens = raw.auth.tokens.map((t, i): TokenConfig => {
    const f = `auth.tokens[${i}]`;
    // The message never repeats the token: config errors end up in logs.
    if (secrets.has(t.token)) throw new ConfigError(`${f}.token`, 'is the same as another token (each client identity needs its own)');
    secrets.add(t.token);
    let prefixes: string[] | null = null;
    if (t.prefixes !== undefined) {
      prefixes = t.prefixes.map((x, j) => {
        if (Buffer.byteLength(x, 'utf8') > MACHINE_MAX_NAME_BYTES) throw new ConfigError(`${f}.prefixes[${j}]`, `must be a string of at most ${MACHINE_MAX_NAME_BYTES} bytes`);
        return x;
      });
      if (prefixes.includes('')) prefixes = null; // "" matches every name
    }
    const readOnly = t.readOnly ?? false;
    const admin = t.admin ?? false;
    if (readOnly && admin) throw new ConfigError(`${f}.admin`, 'a read-only token cannot be an admin token');
    return { name: t.name, token: t.token, prefixes, readOnly, admin };
  });
  tokens.forEach((t, i) => {
    const first = tokens.findIndex((x) => x.name === t.name);
    // Two tokens of one name are one identity (its sessions are the name's), there only to
    // rotate its token: a second entry granting more would widen what the name may do.
    if (first !== i && !sameRights(tokens[first]!, t)) {
      throw new ConfigError(`auth.tokens[${i}]`, `is a second token of "${t.name}" (tokens[${first}]) granting something else: tokens of one name must have the same prefixes, readOnly and admin`);
    }
  });
  return { tokens };
}

function sameRights(a: TokenConfig, b: TokenConfig): boolean {
  const prefixes = (t: TokenConfig): string => (t.prefixes === null ? '*' : JSON.stringify([...new Set(t.prefixes)].sort()));
  return a.readOnly === b.readOnly && a.admin === b.admin && prefixes(a) === prefixes(b);
}

/** "tls": {"peer": {...}, "client": {...}}; each port's URLs must agree with its section. */
function tlsSection(raw: RawConfig, nodes: readonly NodeConfig[], baseDir: string): TlsConfig {
  const peer = tlsFiles(raw.tls?.peer, 'tls.peer', baseDir);
  const client = tlsFiles(raw.tls?.client, 'tls.client', baseDir);
  checkSchemes(nodes, 'peerUrl', peer !== null);
  checkSchemes(nodes, 'clientUrl', client !== null);
  return { peer, client };
}

function tlsFiles(o: RawTls | undefined, f: string, baseDir: string): TlsFilesConfig | null {
  if (o === undefined) return null;
  const path = (p: string): string => (isAbsolute(p) ? p : resolve(baseDir, p));
  const requireClientCert = o.requireClientCert ?? false;
  // Without a CA of our own any publicly trusted certificate would pass as a client.
  if (requireClientCert && o.ca === undefined) throw new ConfigError(`${f}.ca`, 'is needed to verify client certificates (requireClientCert)');
  return { cert: path(o.cert), key: path(o.key), ...(o.ca !== undefined ? { ca: path(o.ca) } : {}), requireClientCert };
}

/** wss:// means TLS on: every node's URL of that port must say so exactly when TLS is set
 *  (a listen URL has its advertised URL's scheme, addresses.ts). */
function checkSchemes(nodes: readonly NodeConfig[], key: 'peerUrl' | 'clientUrl', tlsOn: boolean): void {
  const where = key === 'peerUrl' ? 'tls.peer' : 'tls.client';
  nodes.forEach((n, i) => {
    const secure = n[key].startsWith('wss:');
    if (secure && !tlsOn) throw new ConfigError(`nodes[${i}].${key}`, `"${n[key]}" is wss:// but ${where} is not configured`);
    if (!secure && tlsOn) throw new ConfigError(`nodes[${i}].${key}`, `"${n[key]}" must be wss:// when ${where} is configured`);
  });
}

function limitsSection(raw: RawConfig, nodeCount: number, maxSessions: number): ClientLimitsConfig {
  const l = raw.limits ?? {};
  const d = DEFAULT_CLIENT_LIMITS;
  const requestsPerSecond = l.requestsPerSecond ?? d.requestsPerSecond;
  const perAddress = l.requestsPerSecondPerAddress ?? d.requestsPerSecondPerAddress;
  const perToken = l.requestsPerSecondPerToken ?? d.requestsPerSecondPerToken;
  // A bucket's default burst is never below its rate, or a steady client at exactly the rate
  // would be refused; a set rate needs a bucket of at least one.
  const burst = (key: 'requestBurst' | 'requestBurstPerAddress' | 'requestBurstPerToken', rate: number, dflt: number): number =>
    within(l[key] ?? Math.max(dflt, rate), `limits.${key}`, Math.min(1, rate), 100_000_000, 'at least 1 when its rate is set');
  return {
    ...d,
    ...l,
    requestsPerSecond,
    requestBurst: burst('requestBurst', requestsPerSecond, d.requestBurst),
    maxSessionsPerAddress: l.maxSessionsPerAddress ?? defaultSessionsPerAddress(nodeCount, maxSessions),
    requestsPerSecondPerAddress: perAddress,
    requestBurstPerAddress: burst('requestBurstPerAddress', perAddress, d.requestBurstPerAddress),
    requestsPerSecondPerToken: perToken,
    requestBurstPerToken: burst('requestBurstPerToken', perToken, d.requestBurstPerToken),
  };
}

/** "http": {"allowedOrigins": [...], "allowedHosts": [...]}; both empty by default. The schema
 *  checks they are lists of strings; an origin must be what a browser sends. */
function httpSection(raw: RawConfig): HttpPolicyConfig {
  const origins = (raw.http?.allowedOrigins ?? []).map((x, i) => {
    let u: URL;
    try {
      u = new URL(x);
    } catch {
      throw new ConfigError(`http.allowedOrigins[${i}]`, `"${x}" is not an origin (scheme://host[:port])`);
    }
    // What a browser sends: scheme, host and a port other than the scheme's default, nothing else.
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== x.toLowerCase()) {
      throw new ConfigError(`http.allowedOrigins[${i}]`, `"${x}" is not an origin: write it as ${u.origin} (scheme://host[:port], no path)`);
    }
    return x.toLowerCase();
  });
  return { allowedOrigins: origins, allowedHosts: (raw.http?.allowedHosts ?? []).map((x) => x.toLowerCase()) };
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
