// cluster.config.json: the embedded default and its validation. Every problem names the
// field it is about, so a typo stops start-up with a message that says where to look.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';

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
}

export interface SnapshotSettings {
  /** Snapshot once the applied log has grown by this many entries since the last one. */
  readonly entries: number;
  /** Entries kept behind a snapshot so that slightly slow followers need no snapshot. */
  readonly keepTail: number;
}

export interface ClusterConfig {
  readonly clusterId: string;
  readonly secret: string;
  readonly nodes: readonly NodeConfig[];
  readonly raft: RaftTiming;
  readonly sessions: SessionLimits;
  readonly snapshot: SnapshotSettings;
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

const DEFAULT_RAFT: RaftTiming = { tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 };
const DEFAULT_SESSIONS: SessionLimits = { defaultTtlMs: 10_000, minTtlMs: 500, maxTtlMs: 3_600_000, lockDelayMs: 0 };
const DEFAULT_SNAPSHOT: SnapshotSettings = { entries: 20_000, keepTail: 5_000 };

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
  const minTtlMs = int(s, 'minTtlMs', 'sessions.minTtlMs', DEFAULT_SESSIONS.minTtlMs, 100, 86_400_000);
  const maxTtlMs = int(s, 'maxTtlMs', 'sessions.maxTtlMs', DEFAULT_SESSIONS.maxTtlMs, minTtlMs, 86_400_000);
  const defaultTtlMs = int(s, 'defaultTtlMs', 'sessions.defaultTtlMs', DEFAULT_SESSIONS.defaultTtlMs, minTtlMs, maxTtlMs);
  const lockDelayMs = int(s, 'lockDelayMs', 'sessions.lockDelayMs', DEFAULT_SESSIONS.lockDelayMs, 0, 3_600_000);
  // A session must outlive a leader change, or every failover would expire sessions.
  if (minTtlMs < electionTimeoutMs * 2) {
    throw new ConfigError('sessions.minTtlMs', `must be at least twice raft.electionTimeoutMs (${electionTimeoutMs * 2})`);
  }
  const sn = section(raw, 'snapshot');
  const entries = int(sn, 'entries', 'snapshot.entries', DEFAULT_SNAPSHOT.entries, 10, 100_000_000);
  const keepTail = int(sn, 'keepTail', 'snapshot.keepTail', DEFAULT_SNAPSHOT.keepTail, 0, 100_000_000);
  return {
    clusterId,
    secret,
    nodes,
    raft: { tickMs, heartbeatMs, electionTimeoutMs },
    sessions: { defaultTtlMs, minTtlMs, maxTtlMs, lockDelayMs },
    snapshot: { entries, keepTail },
    baseDir,
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
