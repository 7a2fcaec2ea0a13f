// Every default of the cluster config, in one place, and the lock machine's bounds derived
// from the config. Defaults that the lock machine also has (TTL bounds, lock-delay, session
// cap, name length) are taken from its DEFAULT_MACHINE_CONFIG, so the two cannot disagree;
// defaults that depend on another setting are functions of it, so that every default
// passes the validator's rules (config.ts) whatever else the file sets.
import { DEFAULT_MACHINE_CONFIG, type MachineConfig } from '../lockfsm/config.js';
import type { ClientLimitsConfig, ClusterConfig, KvSettings, LedgerSettings, RaftTiming, SnapshotSettings } from './cluster-config.js';

export const DEFAULT_RAFT: RaftTiming = Object.freeze({ tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 });

/** The SDK's session TTL (src/client DEFAULT_TTL_MS; the client may not import the server,
 *  a test checks they agree): a session opened without a TTL gets the same. */
export const DEFAULT_SESSION_TTL_MS = 15_000;

export const DEFAULT_SESSIONS = Object.freeze({
  maxTtlMs: DEFAULT_MACHINE_CONFIG.maxTtlMs,
  lockDelayMs: DEFAULT_MACHINE_CONFIG.defaultLockDelayMs,
  /** The largest lock-delay the machine accepts: the config's lockDelayMs may not exceed it. */
  maxLockDelayMs: DEFAULT_MACHINE_CONFIG.maxLockDelayMs,
  maxSessions: DEFAULT_MACHINE_CONFIG.maxSessions,
  maxSessionsPerToken: DEFAULT_MACHINE_CONFIG.maxSessionsPerOwner,
});

/** A session must outlive a leader change: minTtlMs is at least twice the election timeout
 *  (the validator's rule), and never below the lock machine's own minimum. */
export function defaultMinTtlMs(electionTimeoutMs: number): number {
  return Math.max(DEFAULT_MACHINE_CONFIG.minTtlMs, 2 * electionTimeoutMs);
}

/** The SDK's TTL, raised to minTtlMs and capped at maxTtlMs when those are set otherwise. */
export function defaultSessionTtlMs(minTtlMs: number, maxTtlMs: number): number {
  return Math.min(Math.max(DEFAULT_SESSION_TTL_MS, minTtlMs), maxTtlMs);
}

export const DEFAULT_SNAPSHOT: SnapshotSettings = Object.freeze({ entries: 20_000, keepTail: 5_000 });

export const DEFAULT_LEDGER: LedgerSettings = Object.freeze({ retentionMs: 7 * 86_400_000, abandonedAfterMs: 30 * 86_400_000 });

export const DEFAULT_KV: KvSettings = Object.freeze({
  txnMaxOps: DEFAULT_MACHINE_CONFIG.maxTxnOps,
  historyEntries: DEFAULT_MACHINE_CONFIG.watchHistoryEntries,
  historyBytes: DEFAULT_MACHINE_CONFIG.watchHistoryBytes,
  historyMaxAgeMs: DEFAULT_MACHINE_CONFIG.watchHistoryMaxAgeMs,
});

/** The lock machine's own bound on names: the node-side limit may only be tighter. */
export const MACHINE_MAX_NAME_BYTES = DEFAULT_MACHINE_CONFIG.maxNameLength;

export const DEFAULT_CLIENT_LIMITS: ClientLimitsConfig = Object.freeze({
  maxFrameBytes: 1 << 20,
  maxBufferedBytes: 16 << 20,
  maxConnectionsPerAddress: 256,
  requestsPerSecond: 1_000,
  requestBurst: 2_000,
  maxSessionsPerConnection: 64,
  maxLocksPerSession: 1_000,
  maxWaitsPerSession: 100,
  maxWaitersPerLock: 1_000,
  maxNameBytes: MACHINE_MAX_NAME_BYTES,
  maxWatchesPerConnection: 1_000,
});

/** The lock machine's bounds for this cluster: every node derives the same from the same file. */
export function machineConfigFrom(cfg: ClusterConfig): MachineConfig {
  return {
    ...DEFAULT_MACHINE_CONFIG,
    minTtlMs: cfg.sessions.minTtlMs,
    maxTtlMs: cfg.sessions.maxTtlMs,
    defaultLockDelayMs: cfg.sessions.lockDelayMs,
    maxSessions: cfg.sessions.maxSessions,
    maxSessionsPerOwner: cfg.sessions.maxSessionsPerToken,
    maxTxnOps: cfg.kv.txnMaxOps,
    watchHistoryEntries: cfg.kv.historyEntries,
    watchHistoryBytes: cfg.kv.historyBytes,
    watchHistoryMaxAgeMs: cfg.kv.historyMaxAgeMs,
  };
}
