// Linearizability checker for Palisade histories: the public surface for the chaos harness.

export {
  OP_TYPES,
  HistoryFormatError,
  canonicalJson,
  formatHistoryJsonl,
  historyProblems,
  parseHistoryJsonl,
  parseOperation,
  readHistoryJsonl,
  sessionKey,
  sessionOf,
  validateHistory,
  writeHistoryJsonl,
} from './history.js';
export type {
  AcquireOp,
  CampaignOp,
  FencedWriteOp,
  HolderView,
  JsonValue,
  LeaderOp,
  LockMode,
  OpId,
  OpType,
  Operation,
  Outcome,
  ProcessId,
  ProclaimOp,
  ReadOp,
  ReleaseOp,
  ResignOp,
  SessionExpiredOp,
  SessionId,
  TryAcquireOp,
} from './history.js';
export {
  INITIAL_FENCE_STATE,
  INITIAL_LOCK_STATE,
  describeLockState,
  fenceModel,
  lockModel,
  makeFenceState,
  makeLockState,
  stepFence,
  stepLock,
} from './model.js';
export type { FenceModelOp, FenceState, Holder, LockModelOp, LockState, Model, PendingView, StepResult } from './model.js';
export { searchLinearization } from './search.js';
export type { Diagnosis, SearchBudget, SearchOp, SearchOptions, SearchOutcome } from './search.js';
export { compileObject, objectKey, objectOf, partitionHistory, recordedView, toFenceModelOp, toLockModelOp } from './partition.js';
export type { CompiledObject, ObjectHistory, ObjectKind, ObjectRef, Treatment, ViewOp } from './partition.js';
export { checkInvariants } from './invariants.js';
export type { InvariantName, InvariantViolation } from './invariants.js';
export { shrinkFailure, truncatedView, windowView } from './shrink.js';
export type { ShrinkBudget, ShrinkResult } from './shrink.js';
export { check } from './check.js';
export type { CheckOptions, CheckResult, CheckStats, InvalidResult, UnknownResult, ValidResult } from './check.js';
export { formatOperations, formatReport, formatSummary } from './report.js';
