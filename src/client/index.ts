// palisade/client: the SDK. Connect, take locks that carry fencing tokens, run elections,
// and keep small fenced state; FenceGuard is re-exported for the resources that check tokens.
//
//   const client = await LockClient.connect({ endpoints: ['ws://10.0.0.1:7001', 'ws://10.0.0.2:7001'] });
//   await client.withLock('reports/daily', { waitMs: 5_000 }, async (lock) => {
//     await storage.write(data, { fencingToken: lock.token, signal: lock.signal });
//   });
//   await client.close();
//
// Timing: one session per client, TTL `ttlMs` (default 15 s), kept alive every TTL/3. A
// lock's `signal` aborts at the client's safe deadline = send time of the last acknowledged
// keepalive + TTL × (1 − maxClockDrift, default 1 %) − margin (default max(50 ms, 5 % TTL)),
// so the client stops believing before the cluster can have expired the session. Timing is
// politeness; the token, checked by the resource, is safety.
export { LockClient, type ClientTlsOptions, type LockClientOptions, type ReadOptions } from './client.js';
export { Lock, type AcquireOptions, type TryAcquireOptions, type LockPutOptions } from './lock.js';
export {
  Election,
  Leadership,
  type ElectionState,
  type ElectionObserver,
  type CampaignOptions,
} from './election.js';
export type { KvChange, KvWatch, WatchOptions } from './kv-watch.js';
export type { TxnCompareInput, TxnOpInput, TxnRequest, TxnOptions, TxnOutcome } from './txn.js';
export { ClientAdmin, type SessionsQuery, type SessionView } from './admin.js';
export type {
  KvValue,
  PutOptions,
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
  CompactedError,
  LockLostError,
  InDoubtError,
  PermissionDeniedError,
  UnauthenticatedError,
  ClientClosedError,
  TokenRegressionError,
  type ClientErrorCode,
} from './errors.js';
export type { TrustViolation, TrustViolationKind } from './trust.js';
export { systemClock, type Clock, type TimerHandle } from './clock.js';
export type { WebSocketLike, WebSocketConstructor } from './connection.js';
export type {
  TxnCompare,
  TxnOp,
  Fence,
  Holder,
  KvEntry,
  LockInfo,
  LockMode,
  NodeStatus,
} from '../protocol/client-protocol.js';
export { FenceGuard, MemoryFenceStore, StaleTokenError } from '../fence/index.js';
