// Bounds of the lock state machine. Every node of a cluster must run with the same config:
// the bounds decide results, so nodes with different bounds would diverge.

export interface MachineConfig {
  /** Shortest and longest session TTL a client may ask for (inclusive). */
  readonly minTtlMs: number;
  readonly maxTtlMs: number;
  /** Lock-delay of a grant whose acquire did not say (Consul's default is 15 s). */
  readonly defaultLockDelayMs: number;
  /** Largest lock-delay an acquire may ask for (Consul caps it at 60 s). */
  readonly maxLockDelayMs: number;
  /** Longest lock, election or fence-lock name, in UTF-8 bytes (names are 1..256 bytes by default). */
  readonly maxNameLength: number;
  /** Longest key-value key and ledger opKey, in UTF-8 bytes. */
  readonly maxKeyBytes: number;
  /** Largest key-value value, op result and election value, in bytes (UTF-8 for strings). */
  readonly maxValueBytes: number;
  /** Sum of key bytes + value bytes over the whole key-value space. */
  readonly maxKvTotalBytes: number;
  /** Answers kept per session for seq > ackedSeq; a new request beyond it is refused. */
  readonly maxPendingResultsPerSession: number;
  /** Locks held + locks waited for + elections entered, per session. */
  readonly maxLocksPerSession: number;
  /** Operations (running or done) the ledger keeps at once. */
  readonly maxLedgerEntries: number;
  /** How far above a session's highest seq so far a new seq may be: a seq far ahead (say
   *  2^53-1) would leave no room for the session's later requests. */
  readonly maxSeqAdvance: number;
  /** Sessions open at once across the cluster; an openSession beyond it is LIMIT_EXCEEDED. */
  readonly maxSessions: number;
  /** Sessions open at once with the same owner (token): one token cannot take the whole
   *  cluster's maxSessions from the others. Sessions without an owner are not counted. */
  readonly maxSessionsPerOwner: number;
}

export const DEFAULT_MACHINE_CONFIG: MachineConfig = Object.freeze({
  minTtlMs: 1_000,
  maxTtlMs: 3_600_000,
  defaultLockDelayMs: 15_000,
  maxLockDelayMs: 60_000,
  maxNameLength: 256,
  maxKeyBytes: 1_024,
  maxValueBytes: 65_536,
  maxKvTotalBytes: 64 * 1024 * 1024,
  maxPendingResultsPerSession: 128,
  maxLocksPerSession: 10_000,
  maxLedgerEntries: 100_000,
  maxSeqAdvance: 1_000_000,
  maxSessions: 100_000,
  maxSessionsPerOwner: 10_000,
});

/** Throws on a config no node should run with (a start-up error, not a command error). */
export function checkMachineConfig(config: MachineConfig): MachineConfig {
  const fields: (keyof MachineConfig)[] = [
    'minTtlMs',
    'maxTtlMs',
    'defaultLockDelayMs',
    'maxLockDelayMs',
    'maxNameLength',
    'maxKeyBytes',
    'maxValueBytes',
    'maxKvTotalBytes',
    'maxPendingResultsPerSession',
    'maxLocksPerSession',
    'maxLedgerEntries',
    'maxSeqAdvance',
    'maxSessions',
    'maxSessionsPerOwner',
  ];
  for (const field of fields) {
    const v = config[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new Error(`lockfsm config: ${field} must be a non-negative safe integer, got ${String(v)}`);
    }
  }
  const positive: (keyof MachineConfig)[] = [
    'minTtlMs',
    'maxNameLength',
    'maxKeyBytes',
    'maxPendingResultsPerSession',
    'maxLocksPerSession',
    'maxLedgerEntries',
    'maxSeqAdvance',
    'maxSessions',
    'maxSessionsPerOwner',
  ];
  for (const field of positive) {
    if (config[field] === 0) throw new Error(`lockfsm config: ${field} must be at least 1`);
  }
  if (config.minTtlMs > config.maxTtlMs) {
    throw new Error(`lockfsm config: minTtlMs (${config.minTtlMs}) exceeds maxTtlMs (${config.maxTtlMs})`);
  }
  if (config.defaultLockDelayMs > config.maxLockDelayMs) {
    throw new Error(
      `lockfsm config: defaultLockDelayMs (${config.defaultLockDelayMs}) exceeds maxLockDelayMs (${config.maxLockDelayMs})`,
    );
  }
  return config;
}
