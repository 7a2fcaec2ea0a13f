// palisade/client: the SDK. Connect, take locks that carry fencing tokens, run elections,
// and keep small fenced state; FenceGuard is re-exported for the resources that check tokens.
export { LockClient, type LockClientOptions, type ReadOptions } from './client.js';
export { Lock, type AcquireOptions, type TryAcquireOptions, type LockPutOptions } from './lock.js';
export {
  Election,
  Leadership,
  type ElectionState,
  type ElectionObserver,
  type CampaignOptions,
} from './election.js';
export type {
  KvValue,
  KvChange,
  KvWatch,
  WatchOptions,
  WriteOptions,
  PutResult,
  DeleteResult,
  OnceOptions,
  OnceFn,
  InDoubtPolicy,
} from './kv.js';
export {
  PalisadeError,
  UnavailableError,
  TimeoutError,
  LockTimeoutError,
  SessionExpiredError,
  InvalidArgumentError,
  NotHolderError,
  FencedError,
  ConflictError,
  LockLostError,
  InDoubtError,
  PermissionDeniedError,
  UnauthenticatedError,
  ClientClosedError,
  type ClientErrorCode,
} from './errors.js';
export { systemClock, type Clock, type TimerHandle } from './clock.js';
export type { WebSocketLike, WebSocketConstructor } from './connection.js';
export type {
  Fence,
  Holder,
  KvEntry,
  LockInfo,
  LockMode,
  NodeStatus,
} from '../transport/client-protocol.js';
export { FenceGuard, MemoryFenceStore, StaleTokenError } from '../fence/index.js';
