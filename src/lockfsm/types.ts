// The vocabulary of the lock state machine: the commands the Raft log carries, the result
// each one gives its proposer, the events every node pushes to its clients, and the
// read-only views the server serves after ReadIndex. Plain data only, so that the codec
// (msgpackr) and the transport can carry every value as is.
//
// Numbers are JS numbers: log indexes, session ids and tokens are all Raft log indexes,
// which stay far below 2^53.

import type { MachineConfig, SettingName } from './config.js';
import type { Fence, Holder, KvEntry, LockMode, TxnCompare, TxnOp } from './vocabulary.js';

// The words the client protocol shares with the machine are defined in vocabulary.ts.
export type { Fence, Holder, KvEntry, LockMode, TxnCompare, TxnOp };
// The read views are in views.ts; importers of types.ts see them here too.
export type * from './views.js';

/**
 * Fields of every command a client sends for a session (Raft thesis §6.3). `seq` numbers the
 * session's requests from 1; a retry re-sends the same seq. `ackedSeq` says the client has
 * received the answers of every seq <= ackedSeq, so the machine may forget them; it must be
 * lower than `seq`. `fence` makes the command apply only while the session holds `fence.lock`
 * with exactly `fence.token`.
 */
export interface SessionScoped {
  readonly session: number;
  readonly seq: number;
  readonly ackedSeq?: number;
  readonly fence?: Fence;
}

// ---- commands ----------------------------------------------------------------------------

export interface OpenSessionCommand {
  readonly type: 'openSession';
  readonly ttlMs: number;
  /** Who opened it, for people reading lock tables (host and pid, a service name). */
  readonly label?: string;
  /** The principal (token name) that opened it, stamped by the node that received the
   *  request when clients authenticate; only that principal may use the session. */
  readonly owner?: string;
}

/** A session label is for display: short, and refused (not cut) when longer. */
export const SESSION_LABEL_MAX_BYTES = 128;

/** The longest reason an operator may give for a revoke (it travels in the entry). */
export const REVOKE_REASON_MAX_BYTES = 256;

export interface CloseSessionCommand extends SessionScoped {
  readonly type: 'closeSession';
}

/** Proposed by the leader when a session's lease ran out on its clock. */
export interface ExpireSessionCommand {
  readonly type: 'expireSession';
  readonly session: number;
}

/** Proposed for an operator (an admin token): ends the session exactly as an expiry does
 *  (lock-delay applies, its ephemeral keys go), told as `sessionExpired` with reason
 *  `revoke`. `reason` is the operator's words; `by` the admin token's name that asked
 *  (stamped by the node that admitted the request; absent when clients are not authenticated). */
export interface RevokeSessionCommand {
  readonly type: 'revokeSession';
  readonly session: number;
  readonly reason?: string;
  readonly by?: string;
}

export interface AcquireCommand extends SessionScoped {
  readonly type: 'acquire';
  readonly name: string;
  readonly mode: LockMode;
  /** Shared only: at most `limit` holders at once (a counting semaphore). */
  readonly limit?: number;
  /** Queue behind the current holders (true) or answer `busy` (false). */
  readonly wait: boolean;
  /** How long the lock stays unavailable if this holder's session expires while holding it. */
  readonly lockDelayMs?: number;
}

export interface ReleaseCommand extends SessionScoped {
  readonly type: 'release';
  readonly name: string;
  readonly token: number;
}

export interface CancelWaitCommand extends SessionScoped {
  readonly type: 'cancelWait';
  readonly name: string;
}

/**
 * Proposed by the leader when a lock-delay timer fires. `since` is the `since` of the
 * lockDelayStarted event that armed the timer; with it a late proposal from an old timer
 * cannot end a newer delay. Without it, whatever delay is current ends.
 */
export interface LockDelayElapsedCommand {
  readonly type: 'lockDelayElapsed';
  readonly name: string;
  readonly since?: number;
}

export interface CampaignCommand extends SessionScoped {
  readonly type: 'campaign';
  readonly election: string;
  readonly value: string;
}

export interface ProclaimCommand extends SessionScoped {
  readonly type: 'proclaim';
  readonly election: string;
  readonly token: number;
  readonly value: string;
}

/** With `token`: the leader steps down. Without: a queued candidate withdraws. */
export interface ResignCommand extends SessionScoped {
  readonly type: 'resign';
  readonly election: string;
  readonly token?: number;
}

export interface PutCommand extends SessionScoped {
  readonly type: 'put';
  readonly key: string;
  readonly value: Uint8Array;
  /** Apply only if the key's revision is this (0 = the key must not exist). */
  readonly ifRevision?: number;
  /** Tie the key to the writing session: it is deleted in the entry that ends the session
   *  (close, expiry or revoke). A later put without it makes the key outlive its writer. */
  readonly ephemeral?: boolean;
}

export interface DeleteCommand extends SessionScoped {
  readonly type: 'delete';
  readonly key: string;
  /** Apply only if the key's revision is this (0 = the key must not exist). */
  readonly ifRevision?: number;
}

/**
 * A small transaction (etcd's Txn): if every compare holds, the `success` writes apply, else
 * the `failure` writes; all in this one entry, so every change carries its index as revision
 * and a watcher sees them together. At most maxTxnOps compares and writes per branch, each
 * key at most once per branch. A branch whose writes do not fit the budgets applies nothing.
 */
export interface TxnCommand extends SessionScoped {
  readonly type: 'txn';
  readonly compare: readonly TxnCompare[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
}

/**
 * Starts (or asks about) an operation of the idempotency-key ledger. `at` is the cluster's
 * time in ms (machine.ts, "cluster time"), stamped into the command by the leader that
 * proposes it: the machine has no clock, and the ledger needs a time to age abandoned
 * attempts out (see PruneOpsCommand).
 */
export interface BeginOpCommand extends SessionScoped {
  readonly type: 'beginOp';
  readonly opKey: string;
  readonly fence: Fence;
  /** After `inDoubt`: record a new attempt by this holder under the same idempotency key. */
  readonly retry?: boolean;
  readonly at: number;
}

/** `at`: the cluster's time in ms when the leader proposed the command (for retention). */
export interface CompleteOpCommand extends SessionScoped {
  readonly type: 'completeOp';
  readonly opKey: string;
  readonly result: Uint8Array;
  readonly fence: Fence;
  readonly at: number;
}

/**
 * Proposed by the leader to enforce ledger retention and to carry the cluster's time
 * forward. With `at` (the cluster's time, as stamped into beginOp/completeOp): drops
 * completed operations older than the cluster's `ledgerRetentionMs` setting at `at`, and
 * operations never completed whose last attempt began more than `ledgerAbandonedAfterMs`
 * before it. Entries written before settings were replicated carry the cut-offs themselves
 * (`olderThan`, `abandonedOlderThan`) instead. `max` bounds the work of one entry.
 */
export interface PruneOpsCommand {
  readonly type: 'pruneOps';
  readonly at?: number;
  readonly olderThan?: number;
  readonly abandonedOlderThan?: number;
  readonly max?: number;
}

/**
 * Changes the cluster's settings (config.ts): an administrator's `palisade config set`, or,
 * with `initial`, the seed a leader proposes from its file when the machine was never
 * configured (it applies only then: the first seed to commit wins and later ones change
 * nothing, so nodes with different files agree on the one that committed).
 */
export interface ConfigureCommand {
  readonly type: 'configure';
  readonly settings: Readonly<Partial<MachineConfig>>;
  readonly initial?: boolean;
}

/**
 * Proposed by the leader now and then: changes nothing, but every node computes a digest of
 * its state as of this entry, and nodes compare them (server/snapshots/state-digests.ts):
 * replicas that applied the same entries must hold the same state.
 */
export interface CheckpointCommand {
  readonly type: 'checkpoint';
}

export type Command =
  | OpenSessionCommand
  | CloseSessionCommand
  | ExpireSessionCommand
  | RevokeSessionCommand
  | AcquireCommand
  | ReleaseCommand
  | CancelWaitCommand
  | LockDelayElapsedCommand
  | CampaignCommand
  | ProclaimCommand
  | ResignCommand
  | PutCommand
  | DeleteCommand
  | TxnCommand
  | BeginOpCommand
  | CompleteOpCommand
  | PruneOpsCommand
  | ConfigureCommand
  | CheckpointCommand;

export type CommandType = Command['type'];

/** Commands that carry session/seq and go through the idempotency layer. */
export type SessionCommand = Extract<Command, SessionScoped>;

// ---- results -----------------------------------------------------------------------------

/**
 * Error codes, the same strings as the client protocol's so the server can pass them on.
 * - INVALID_ARGUMENT: malformed command or a field out of range (names, TTLs, seq ...).
 * - UNKNOWN_SESSION:  no such session (never opened, closed or expired).
 * - NOT_HOLDER:       release/proclaim/resign by a session that does not hold it with that token.
 * - FENCED:           the command's fence does not hold right now; nothing changed.
 * - STALE_SEQUENCE:   seq at or below what the client acknowledged; its answer is forgotten.
 * - LIMIT_EXCEEDED:   a configured size or count bound (value bytes, pending results ...).
 * - CONFLICT:         the state forbids it: mode or semaphore-limit mismatch, revision
 *                     mismatch, not waiting, op already completed, stale lock-delay end ...
 */
export type MachineErrorCode =
  | 'INVALID_ARGUMENT'
  | 'UNKNOWN_SESSION'
  | 'NOT_HOLDER'
  | 'FENCED'
  | 'STALE_SEQUENCE'
  | 'LIMIT_EXCEEDED'
  | 'CONFLICT';

export interface MachineError {
  readonly type: 'error';
  readonly code: MachineErrorCode;
  readonly message: string;
  /** FENCED, NOT_HOLDER, and CONFLICT on locks: the lock's current token, null when free. */
  readonly currentToken?: number | null;
  /** CONFLICT on ifRevision: the key's revision now (0 = absent). */
  readonly currentRevision?: number;
}

export interface SessionOpenedResult {
  readonly type: 'session';
  readonly session: number;
  readonly ttlMs: number;
}

export interface OkResult {
  readonly type: 'ok';
}

export interface GrantedResult {
  readonly type: 'granted';
  readonly token: number;
  readonly mode: LockMode;
}

/** position: 1 = first in line. */
export interface QueuedResult {
  readonly type: 'queued';
  readonly position: number;
}

/** `holders` lists at most BUSY_HOLDERS_SHOWN holders; `holderCount` counts them all. */
export interface BusyResult {
  readonly type: 'busy';
  readonly holders: readonly Holder[];
  readonly holderCount: number;
  /** True when the lock is held back by lock-delay (possibly with nobody holding it). */
  readonly delayed: boolean;
}

export interface LeaderResult {
  readonly type: 'leader';
  readonly token: number;
}

export interface WrittenResult {
  readonly type: 'written';
  readonly revision: number;
}

/** revision: the index of the delete when the key existed, else 0. */
export interface DeletedResult {
  readonly type: 'deleted';
  readonly existed: boolean;
  readonly revision: number;
}

/** First attempt of this operation: run it, passing idempotencyKey to the resource. */
export interface OpRunResult {
  readonly type: 'run';
  readonly idempotencyKey: string;
  readonly attempt: number;
}

/** A new attempt of an in-doubt operation, recorded for this holder, same idempotencyKey. */
export interface OpRetryResult {
  readonly type: 'retry';
  readonly idempotencyKey: string;
  readonly attempt: number;
}

export interface OpDoneResult {
  readonly type: 'done';
  readonly idempotencyKey: string;
  readonly result: Uint8Array;
}

/** An attempt began (by `token`) and never completed: it may or may not have happened. */
export interface OpInDoubtResult {
  readonly type: 'inDoubt';
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly token: number;
}

export interface OpCompletedResult {
  readonly type: 'completed';
  readonly idempotencyKey: string;
}

/** One write of a transaction's branch, in order: a put's new revision (the entry's index),
 *  or whether a delete found the key. */
export type TxnOpResult = { readonly op: 'put'; readonly revision: number } | { readonly op: 'delete'; readonly existed: boolean };

export interface TxnResult {
  readonly type: 'txn';
  /** Whether every compare held (the success branch ran). */
  readonly succeeded: boolean;
  /** Positions (from 0) of the compares that did not hold. */
  readonly failed: readonly number[];
  readonly results: readonly TxnOpResult[];
  /** The index of the entry that applied it: every change of its branch has this revision
   *  (a retry's answer still says the first entry's). */
  readonly revision: number;
}

export interface PrunedResult {
  readonly type: 'pruned';
  readonly count: number;
}

export interface CheckpointResult {
  readonly type: 'checkpoint';
}

/** The settings after a configure entry, and which of them it changed (none: a seed that
 *  came after the first, or values equal to the current ones). */
export interface SettingsResult {
  readonly type: 'settings';
  readonly settings: MachineConfig;
  readonly changed: readonly SettingName[];
}

// Machine*: the machine's form of a concept the protocol has too, in another shape
// (src/protocol's AcquireResult is tagged by `status` and carries the entry index).
export type MachineAcquireResult = GrantedResult | QueuedResult | BusyResult | MachineError;
export type MachineCampaignResult = LeaderResult | QueuedResult | MachineError;
export type MachineBeginOpResult = OpRunResult | OpRetryResult | OpDoneResult | OpInDoubtResult | MachineError;

export type Result =
  | SessionOpenedResult
  | OkResult
  | GrantedResult
  | QueuedResult
  | BusyResult
  | LeaderResult
  | WrittenResult
  | DeletedResult
  | OpRunResult
  | OpRetryResult
  | OpDoneResult
  | OpInDoubtResult
  | OpCompletedResult
  | PrunedResult
  | TxnResult
  | SettingsResult
  | CheckpointResult
  | MachineError;

/** What each command can answer (a replayed answer has the same shape as the first). */
export interface ResultByCommand {
  openSession: SessionOpenedResult | MachineError;
  closeSession: OkResult | MachineError;
  expireSession: OkResult | MachineError;
  revokeSession: OkResult | MachineError;
  acquire: MachineAcquireResult;
  release: OkResult | MachineError;
  cancelWait: OkResult | MachineError;
  lockDelayElapsed: OkResult | MachineError;
  campaign: MachineCampaignResult;
  proclaim: OkResult | MachineError;
  resign: OkResult | MachineError;
  put: WrittenResult | MachineError;
  delete: DeletedResult | MachineError;
  txn: TxnResult | MachineError;
  beginOp: MachineBeginOpResult;
  completeOp: OpCompletedResult | MachineError;
  pruneOps: PrunedResult | MachineError;
  configure: SettingsResult | MachineError;
  checkpoint: CheckpointResult | MachineError;
}

export type ResultFor<C extends Command> = ResultByCommand[C['type']];

// ---- events ------------------------------------------------------------------------------

/** The leader starts the session's lease timer (ttlMs) on this. */
export interface SessionOpenedEvent {
  readonly type: 'sessionOpened';
  readonly session: number;
  readonly ttlMs: number;
  readonly label: string | null;
}

export interface SessionClosedEvent {
  readonly type: 'sessionClosed';
  readonly session: number;
}

export interface SessionExpiredEvent {
  readonly type: 'sessionExpired';
  readonly session: number;
  /** `expire`: its lease ran out; `revoke`: an operator ended it (revokeSession). */
  readonly reason: 'expire' | 'revoke';
  /** A revoke's words and who asked, when given. */
  readonly detail?: string;
  readonly by?: string;
}

export interface LockGrantedEvent {
  readonly type: 'granted';
  readonly session: number;
  readonly name: string;
  readonly token: number;
  readonly mode: LockMode;
}

export interface LockQueuedEvent {
  readonly type: 'queued';
  readonly session: number;
  readonly name: string;
  readonly position: number;
}

export type ReleaseReason = 'release' | 'close' | 'expire';

export interface LockReleasedEvent {
  readonly type: 'released';
  readonly session: number;
  readonly name: string;
  readonly token: number;
  readonly reason: ReleaseReason;
}

/** The leader arms a timer of delayMs and then proposes lockDelayElapsed{name, since}. */
export interface LockDelayStartedEvent {
  readonly type: 'lockDelayStarted';
  readonly name: string;
  readonly delayMs: number;
  readonly since: number;
}

export interface LockDelayEndedEvent {
  readonly type: 'lockDelayEnded';
  readonly name: string;
  readonly since: number;
}

export interface ElectionChangedEvent {
  readonly type: 'electionChanged';
  readonly election: string;
  readonly leader: number | null;
  readonly value: string | null;
  readonly token: number | null;
}

/** value null = deleted. revision = index of the write. */
export interface KvChangedEvent {
  readonly type: 'kvChanged';
  readonly key: string;
  readonly value: Uint8Array | null;
  readonly revision: number;
}

/** The cluster's settings changed (every node re-reads what its timers take from them). */
export interface SettingsChangedEvent {
  readonly type: 'settingsChanged';
  readonly changed: readonly SettingName[];
}

export type MachineEvent =
  | SessionOpenedEvent
  | SessionClosedEvent
  | SessionExpiredEvent
  | LockGrantedEvent
  | LockQueuedEvent
  | LockReleasedEvent
  | LockDelayStartedEvent
  | LockDelayEndedEvent
  | ElectionChangedEvent
  | KvChangedEvent
  | SettingsChangedEvent;

/** What apply returns. Treat it as read-only: results are kept for retries. */
export interface Applied<R extends Result = Result> {
  readonly result: R;
  readonly events: MachineEvent[];
}
