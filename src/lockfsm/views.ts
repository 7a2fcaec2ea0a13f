// The lock machine's read-only views: what the server serves after ReadIndex (locks,
// sessions, elections, keys, the ledger). Plain data, as the rest of types.ts.

import type { Holder, LockMode } from './vocabulary.js';

export interface WaiterInfo {
  readonly session: number;
  readonly mode: LockMode;
  /** 1 = next in line. */
  readonly position: number;
}

export interface LockDelayInfo {
  /** Index of the entry that started the delay (pass it back in lockDelayElapsed). */
  readonly since: number;
  readonly delayMs: number;
}

/** A lock as the machine sees it (src/protocol's LockInfo is what clients are shown). */
export interface MachineLockInfo {
  readonly name: string;
  /** Mode of the current holders, null when nobody holds it. */
  readonly mode: LockMode | null;
  /** Semaphore limit of the shared parties present, null when unlimited or none. */
  readonly limit: number | null;
  readonly holders: readonly Holder[];
  readonly waiters: readonly WaiterInfo[];
  readonly delayed: boolean;
  readonly lockDelay: LockDelayInfo | null;
}

export interface SessionLockInfo {
  readonly name: string;
  readonly token: number;
  readonly mode: LockMode;
}

export interface SessionWaitInfo {
  readonly name: string;
  readonly mode: LockMode;
}

export interface SessionInfo {
  readonly id: number;
  readonly ttlMs: number;
  readonly label: string | null;
  /** The token name that opened it; null when it was opened without authentication. */
  readonly owner: string | null;
  /** Locks held, by name. */
  readonly locks: readonly SessionLockInfo[];
  /** Locks waited for, by name. */
  readonly waits: readonly SessionWaitInfo[];
  /** Elections the session leads or stands in, by name. */
  readonly elections: readonly string[];
  /** Keys tied to the session (ephemeral puts), by name. */
  readonly ephemeralKeys: readonly string[];
  /** Answers kept for retries (seq > ackedSeq). */
  readonly pendingResults: number;
  /** Highest seq whose answer has been forgotten. */
  readonly ackedSeq: number;
}

/** What a new leader needs to run lease timers: no lock lists. */
export interface SessionLease {
  readonly session: number;
  readonly ttlMs: number;
  readonly label: string | null;
}

export interface ElectionInfo {
  readonly election: string;
  readonly leader: number | null;
  readonly value: string | null;
  /** The leader's epoch: index of the entry that made it leader. */
  readonly token: number | null;
  /** Queued candidates, next first. */
  readonly candidates: readonly number[];
}

export interface PendingLockDelay {
  readonly name: string;
  readonly delayMs: number;
  readonly since: number;
}

export type OpState = 'running' | 'done';

export interface OpInfo {
  readonly opKey: string;
  readonly idempotencyKey: string;
  /** The lock whose holders may act on this operation (from its first beginOp). */
  readonly lock: string;
  readonly state: OpState;
  readonly attempt: number;
  /** Token and session of the latest attempt. */
  readonly token: number;
  readonly session: number;
  /** Leader time (ms) the latest attempt began. */
  readonly beganAt: number;
  readonly result: Uint8Array | null;
  readonly completedAt: number | null;
}

/** Same fields as PruneOpsCommand: what the leader would propose. */
export interface PruneCriteria {
  readonly olderThan: number;
  readonly abandonedOlderThan?: number;
  readonly max?: number;
}

export interface MachineStats {
  readonly appliedIndex: number;
  readonly sessions: number;
  /** Lock records: held, waited for, or in lock-delay. */
  readonly locks: number;
  readonly holders: number;
  readonly waiters: number;
  readonly locksInDelay: number;
  readonly elections: number;
  readonly candidates: number;
  readonly kvKeys: number;
  readonly kvBytes: number;
  readonly ops: number;
  readonly opsRunning: number;
  readonly ledgerBytes: number;
  readonly electionBytes: number;
  readonly pendingResults: number;
  readonly historyEntries: number;
  readonly historyBytes: number;
}

/** A change of the key-value space as the watch history keeps it: value null = deleted,
 *  revision = index of the entry that made it (several changes may share one). */
export interface KvChange {
  readonly key: string;
  readonly value: Uint8Array | null;
  readonly revision: number;
}

/** What the history holds after a revision: the changes, or that some of them were
 *  dropped (`compactedThrough`: a watch may resume from this revision or a later one). */
export type HistoryRead =
  /** `more`: ask again from `through`, the last revision looked at in full. */
  | { readonly type: 'changes'; readonly changes: readonly KvChange[]; readonly more: boolean; readonly through?: number }
  | { readonly type: 'compacted'; readonly compactedThrough: number };
