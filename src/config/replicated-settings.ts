// The settings a cluster holds as replicated state (src/lockfsm/config.ts), under the names
// an operator uses: the config file's keys, which `palisade config get|set` take too. A
// node's file gives only the values a new cluster starts with; after that they change only
// through `palisade config set` (a committed entry), and a node whose file disagrees says so
// (`palisade status`, /readyz warnings). Everything else in the file is the node's own: how it
// listens, times its heartbeats, limits its clients.
import { DEFAULT_MACHINE_CONFIG, type MachineConfig, type SettingName } from '../lockfsm/config.js';

export interface ReplicatedSetting {
  /** The key as the file and the CLI spell it. */
  readonly key: string;
  /** The lock machine's name for it. */
  readonly setting: SettingName;
}

/** Every setting an operator may change, in the order docs and `config get` list them. */
export const REPLICATED_SETTINGS: readonly ReplicatedSetting[] = [
  { key: 'sessions.minTtlMs', setting: 'minTtlMs' },
  { key: 'sessions.maxTtlMs', setting: 'maxTtlMs' },
  { key: 'sessions.lockDelayMs', setting: 'defaultLockDelayMs' },
  { key: 'sessions.maxSessions', setting: 'maxSessions' },
  { key: 'sessions.maxSessionsPerToken', setting: 'maxSessionsPerOwner' },
  { key: 'ledger.retentionMs', setting: 'ledgerRetentionMs' },
  { key: 'ledger.abandonedAfterMs', setting: 'ledgerAbandonedAfterMs' },
  { key: 'budgets.kvBytes', setting: 'maxKvTotalBytes' },
  { key: 'budgets.kvBytesPerToken', setting: 'maxKvBytesPerOwner' },
  { key: 'budgets.ledgerBytes', setting: 'maxLedgerBytes' },
  { key: 'budgets.ledgerBytesPerToken', setting: 'maxLedgerBytesPerOwner' },
  { key: 'budgets.electionBytes', setting: 'maxElectionBytes' },
  { key: 'budgets.electionBytesPerToken', setting: 'maxElectionBytesPerOwner' },
  { key: 'budgets.answerBytesPerSession', setting: 'maxPendingResultBytesPerSession' },
  { key: 'txn.maxOps', setting: 'maxTxnOps' },
  { key: 'watch.historyEntries', setting: 'watchHistoryEntries' },
  { key: 'watch.historyBytes', setting: 'watchHistoryBytes' },
  { key: 'watch.historyMaxAgeMs', setting: 'watchHistoryMaxAgeMs' },
];

const BY_KEY = new Map(REPLICATED_SETTINGS.map((s) => [s.key, s]));

export function replicatedSetting(key: string): ReplicatedSetting | undefined {
  return BY_KEY.get(key);
}

/** The key nearest to a mistyped one (case, a letter or two), or null. */
export function nearestSettingKey(key: string): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(key.length / 4)) + 1;
  for (const s of REPLICATED_SETTINGS) {
    const d = editDistance(key.toLowerCase(), s.key.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [s.key, d];
  }
  return best;
}

/** Levenshtein distance (small strings: keys). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** The operator's name of a machine setting (the machine's own name for the fixed ones). */
export function keyOf(setting: SettingName): string {
  return REPLICATED_SETTINGS.find((s) => s.setting === setting)?.key ?? setting;
}

/** The operator's view of the machine's settings: { 'sessions.lockDelayMs': 15000, ... }. */
export function settingsByKey(settings: MachineConfig): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of REPLICATED_SETTINGS) out[s.key] = settings[s.setting];
  return out;
}

/** Where this node's file and the cluster disagree: one line each, for status and /readyz. */
export function fileDisagreements(file: MachineConfig, cluster: MachineConfig): string[] {
  return REPLICATED_SETTINGS.filter((s) => file[s.setting] !== cluster[s.setting]).map(
    (s) =>
      `${s.key} is ${file[s.setting]} in this node's file but ${cluster[s.setting]} in the cluster, which is what applies ` +
      `(change it with: palisade config set ${s.key} VALUE; or make the file agree)`,
  );
}

/** The defaults, by key (docs and tests). */
export const DEFAULT_SETTINGS_BY_KEY: Readonly<Record<string, number>> = Object.freeze(settingsByKey(DEFAULT_MACHINE_CONFIG));
