// Every default of the cluster config, in one place, and the lock machine's bounds derived
// from the config. Defaults that the lock machine also has (TTL bounds, lock-delay, session
// cap, name length) are taken from its DEFAULT_MACHINE_CONFIG, so the two cannot disagree;
// defaults that depend on another setting are functions of it, so that every default
// passes the validator's rules (cluster-config.ts) whatever else the file sets. The static
// defaults are also written in config.schema.json (for editors and docs/configuration.md); a
// test checks the two agree.
import { DEFAULT_MACHINE_CONFIG, type MachineConfig } from '../lockfsm/config.js';
import type { BudgetSettings, ClientLimitsConfig, ClusterConfig, LedgerSettings, RaftProfileName, RaftTiming, SnapshotSettings, TxnSettings, WatchHistorySettings } from './types.js';

/** Named Raft timings (`raft.profile`). `loopback` suits nodes on one machine (`npm start`),
 *  where a round trip takes microseconds; `lan` suits hosts on a network, where a GC pause,
 *  a busy disk or a slow switch port can hold a heartbeat for tens of milliseconds and a
 *  300 ms election timeout would depose healthy leaders (etcd's defaults are 100/1000 too). */
export const RAFT_PROFILES: Readonly<Record<RaftProfileName, RaftTiming>> = Object.freeze({
  loopback: Object.freeze({ tickMs: 10, heartbeatMs: 50, electionTimeoutMs: 300 }),
  lan: Object.freeze({ tickMs: 10, heartbeatMs: 100, electionTimeoutMs: 1_000 }),
});

/** The profile of a config that names none: `loopback` when every peer is reached on a
 *  loopback address (the nodes share one machine), else `lan`. */
export function defaultRaftProfile(peerHostsAreLoopback: boolean): RaftProfileName {
  return peerHostsAreLoopback ? 'loopback' : 'lan';
}

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

/** The transaction bound and the watch history of a file that sets none: the lock machine's
 *  own defaults (replicated settings afterwards: `palisade config set txn.maxOps=...`). */
export const DEFAULT_TXN: TxnSettings = Object.freeze({ maxOps: DEFAULT_MACHINE_CONFIG.maxTxnOps });
export const DEFAULT_WATCH_HISTORY: WatchHistorySettings = Object.freeze({
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
  /** The default is a function of the cluster (defaultSessionsPerAddress); this is its cap. */
  maxSessionsPerAddress: 1_000,
  maxInFlightPerAddress: 4_096,
  // Four times one connection's: a host with several client processes is not held to one
  // connection's rate, and reconnecting does not refill anything.
  requestsPerSecondPerAddress: 4_000,
  requestBurstPerAddress: 8_000,
  // Ten times one connection's: a token is often shared by a whole fleet.
  requestsPerSecondPerToken: 10_000,
  requestBurstPerToken: 20_000,
});

/**
 * Sessions one address may open through one node: at most 1,000, and small enough that one
 * address opening its share through every node takes at most half of sessions.maxSessions,
 * so one anonymous address cannot fill the cluster's sessions alone (1,000 at the defaults:
 * 3 nodes × 1,000 of 100,000).
 */
export function defaultSessionsPerAddress(nodes: number, maxSessions: number): number {
  return Math.max(1, Math.min(DEFAULT_CLIENT_LIMITS.maxSessionsPerAddress, Math.floor(maxSessions / (2 * Math.max(1, nodes)))));
}

/** The lock machine's bounds for this cluster: every node derives the same from the same file. */
export function machineConfigFrom(cfg: ClusterConfig): MachineConfig {
  return {
    ...DEFAULT_MACHINE_CONFIG,
    minTtlMs: cfg.sessions.minTtlMs,
    maxTtlMs: cfg.sessions.maxTtlMs,
    defaultLockDelayMs: cfg.sessions.lockDelayMs,
    maxSessions: cfg.sessions.maxSessions,
    maxSessionsPerOwner: cfg.sessions.maxSessionsPerToken,
    ledgerRetentionMs: cfg.ledger.retentionMs,
    ledgerAbandonedAfterMs: cfg.ledger.abandonedAfterMs,
    maxKvTotalBytes: cfg.budgets.kvBytes,
    maxKvBytesPerOwner: cfg.budgets.kvBytesPerToken,
    maxLedgerBytes: cfg.budgets.ledgerBytes,
    maxLedgerBytesPerOwner: cfg.budgets.ledgerBytesPerToken,
    maxElectionBytes: cfg.budgets.electionBytes,
    maxElectionBytesPerOwner: cfg.budgets.electionBytesPerToken,
    maxPendingResultBytesPerSession: cfg.budgets.answerBytesPerSession,
    maxTxnOps: cfg.txn.maxOps,
    watchHistoryEntries: cfg.watch.historyEntries,
    watchHistoryBytes: cfg.watch.historyBytes,
    watchHistoryMaxAgeMs: cfg.watch.historyMaxAgeMs,
  };
}

/** The byte budgets of a file that sets none: the lock machine's own defaults. */
export const DEFAULT_BUDGETS: BudgetSettings = Object.freeze({
  kvBytes: DEFAULT_MACHINE_CONFIG.maxKvTotalBytes,
  kvBytesPerToken: DEFAULT_MACHINE_CONFIG.maxKvBytesPerOwner,
  ledgerBytes: DEFAULT_MACHINE_CONFIG.maxLedgerBytes,
  ledgerBytesPerToken: DEFAULT_MACHINE_CONFIG.maxLedgerBytesPerOwner,
  electionBytes: DEFAULT_MACHINE_CONFIG.maxElectionBytes,
  electionBytesPerToken: DEFAULT_MACHINE_CONFIG.maxElectionBytesPerOwner,
  answerBytesPerSession: DEFAULT_MACHINE_CONFIG.maxPendingResultBytesPerSession,
});
