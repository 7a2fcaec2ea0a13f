// The orchestrator (bench/run.ts) and the client process (bench/worker.ts) talk over the
// fork IPC channel with these messages.
import type { ContendedResult, ContendedSpec } from '../workloads/contended.js';
import type { Disruption, FailoverResult, FailoverSpec } from '../workloads/failover.js';
import type { MemoryResult, MemorySpec } from '../workloads/memory.js';
import type { RaftResult, RaftSpec } from '../workloads/raft.js';
import type { SessionsResult, SessionsSpec } from '../workloads/sessions.js';
import type { UncontendedResult, UncontendedSpec } from '../workloads/uncontended.js';

export type WorkloadSpec = UncontendedSpec | ContendedSpec | SessionsSpec | FailoverSpec | RaftSpec | MemorySpec;
export type WorkloadResult = UncontendedResult | ContendedResult | SessionsResult | FailoverResult | RaftResult | MemoryResult;

export type ToWorker =
  | { readonly type: 'run'; readonly spec: WorkloadSpec }
  /** failover: a disruption happened; answer with `recovered`. */
  | { readonly type: 'disruption'; readonly disruption: Disruption }
  /** failover: no more disruptions; answer with `result`. */
  | { readonly type: 'finish' };

export type FromWorker =
  | { readonly type: 'log'; readonly line: string }
  /** failover: the clients are connected and cycling. */
  | { readonly type: 'ready' }
  | { readonly type: 'recovered'; readonly firstAcquireMs: number | null }
  | { readonly type: 'result'; readonly result: WorkloadResult }
  | { readonly type: 'failed'; readonly error: string };
