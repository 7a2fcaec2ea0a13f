// The settings of the lock state machine: every bound that decides what an entry does.
// They are replicated state (docs/lockfsm.md, "Settings"): the machine holds them, they
// change only through a committed `configure` entry, and apply never reads a node's own
// file. Two nodes whose files disagree still apply every entry alike, because the values
// that decide come from the log. A node's file gives only the values its first leader seeds
// the cluster with (`configure` with `initial`, which applies only to a cluster never
// configured).

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
  /** The same sum over the keys one token's sessions last wrote (ownerless sessions: not counted). */
  readonly maxKvBytesPerOwner: number;
  /** Sum of opKey + result bytes (and RECORD_OVERHEAD_BYTES per operation) over the ledger. */
  readonly maxLedgerBytes: number;
  readonly maxLedgerBytesPerOwner: number;
  /** Sum of name + value bytes (and RECORD_OVERHEAD_BYTES per seat) over election leaders and candidates. */
  readonly maxElectionBytes: number;
  readonly maxElectionBytesPerOwner: number;
  /** Answers kept per session for seq > ackedSeq; a new request beyond it is refused. */
  readonly maxPendingResultsPerSession: number;
  /** Bytes of the answers one session keeps (a `done` answer carries its op's result). */
  readonly maxPendingResultBytesPerSession: number;
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
  /** How long the ledger keeps a completed operation, in cluster time (pruneOps). */
  readonly ledgerRetentionMs: number;
  /** How long the ledger keeps an operation whose last attempt never completed. */
  readonly ledgerAbandonedAfterMs: number;
  /** A transaction's bound: at most this many compares, and this many operations in each
   *  of its branches (every key of a branch distinct). */
  readonly maxTxnOps: number;
  /** The watch history (history.ts): changes kept for watches that resume from a revision.
   *  At most this many changes ... */
  readonly watchHistoryEntries: number;
  /** ... of at most this many bytes (key + value + RECORD_OVERHEAD_BYTES each) ... */
  readonly watchHistoryBytes: number;
  /** ... and none older than this, in cluster time, than the newest change. */
  readonly watchHistoryMaxAgeMs: number;
}

export type SettingName = keyof MachineConfig;

/** What a record costs a byte budget beyond its bytes: the map entry and object around them. */
export const RECORD_OVERHEAD_BYTES = 64;

const MiB = 1024 * 1024;
const DAY_MS = 86_400_000;

export const DEFAULT_MACHINE_CONFIG: MachineConfig = Object.freeze({
  minTtlMs: 1_000,
  maxTtlMs: 3_600_000,
  defaultLockDelayMs: 15_000,
  maxLockDelayMs: 60_000,
  maxNameLength: 256,
  maxKeyBytes: 1_024,
  maxValueBytes: 65_536,
  maxKvTotalBytes: 64 * MiB,
  maxKvBytesPerOwner: 16 * MiB,
  maxLedgerBytes: 64 * MiB,
  maxLedgerBytesPerOwner: 16 * MiB,
  maxElectionBytes: 16 * MiB,
  maxElectionBytesPerOwner: 4 * MiB,
  maxPendingResultsPerSession: 128,
  maxPendingResultBytesPerSession: 1 * MiB,
  maxLocksPerSession: 10_000,
  maxLedgerEntries: 100_000,
  maxSeqAdvance: 1_000_000,
  maxSessions: 100_000,
  maxSessionsPerOwner: 10_000,
  ledgerRetentionMs: 7 * DAY_MS,
  ledgerAbandonedAfterMs: 30 * DAY_MS,
  maxTxnOps: 16,
  watchHistoryEntries: 100_000,
  watchHistoryBytes: 16 * MiB,
  watchHistoryMaxAgeMs: 3_600_000,
});

/** Every setting, in the one order a `configure` entry encodes them in. */
export const SETTING_NAMES: readonly SettingName[] = Object.freeze(Object.keys(DEFAULT_MACHINE_CONFIG) as SettingName[]);

/** Settings that may not be 0 (a bound of 0 would refuse everything, or means nothing). */
const POSITIVE: ReadonlySet<SettingName> = new Set<SettingName>([
  'minTtlMs',
  'maxNameLength',
  'maxKeyBytes',
  'maxPendingResultsPerSession',
  'maxPendingResultBytesPerSession',
  'maxLocksPerSession',
  'maxLedgerEntries',
  'maxSeqAdvance',
  'maxSessions',
  'maxSessionsPerOwner',
  'ledgerRetentionMs',
  'ledgerAbandonedAfterMs',
  'maxTxnOps',
]);

/** Pairs [lower, upper] that must stay ordered. */
const ORDERED: readonly (readonly [SettingName, SettingName])[] = [
  ['minTtlMs', 'maxTtlMs'],
  ['defaultLockDelayMs', 'maxLockDelayMs'],
];
// (A share per owner above its table's total is allowed: the total then bounds first.)

/** What is wrong with `config` as a whole, or null. Never throws (apply uses it). */
export function settingsProblem(config: Readonly<Record<string, unknown>>): string | null {
  for (const name of SETTING_NAMES) {
    const v = config[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) return `${name} must be a non-negative safe integer, got ${String(v)}`;
    if (v === 0 && POSITIVE.has(name)) return `${name} must be at least 1`;
  }
  for (const [lower, upper] of ORDERED) {
    if ((config[lower] as number) > (config[upper] as number)) {
      return `${lower} (${String(config[lower])}) exceeds ${upper} (${String(config[upper])})`;
    }
  }
  return null;
}

/** The same settings, keyed in SETTING_NAMES order: snapshots encode the object as it is,
 *  and replicas must encode the same state to the same bytes. */
export function canonicalSettings(config: MachineConfig): MachineConfig {
  const out: Record<string, number> = {};
  for (const name of SETTING_NAMES) out[name] = config[name];
  return Object.freeze(out) as unknown as MachineConfig;
}

/** Throws on a config no node should run with (a start-up error, not a command error). */
export function checkMachineConfig(config: MachineConfig): MachineConfig {
  const problem = settingsProblem(config as unknown as Readonly<Record<string, unknown>>);
  if (problem !== null) throw new Error(`lockfsm config: ${problem}`);
  return config;
}

/** The settings in which `a` and `b` differ, in SETTING_NAMES order. */
export function settingsDiff(a: MachineConfig, b: MachineConfig): SettingName[] {
  return SETTING_NAMES.filter((name) => a[name] !== b[name]);
}
