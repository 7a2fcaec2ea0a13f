// What the harness and its client processes (worker.ts) say to each other over the Node IPC
// channel, and the clock they share.
//
// Time: every process of a run stamps events with runClock(originAbsMs): milliseconds since
// the run began, from performance.timeOrigin + performance.now(). Each term is monotonic
// within a process; timeOrigin is read once per process from the system clock, so two
// processes agree to well under a millisecond. The harness measures the disagreement when
// a worker starts (clockProbe) and every window a worker records is widened by a slack that
// covers it, so a window is never narrower than the truth.
import type { FencedWriteOp, Operation, Outcome, SessionId } from './checker/index.js';

export function absoluteNowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** A clock reading milliseconds since `originAbsMs` (an absoluteNowMs() reading). */
export function runClock(originAbsMs: number): () => number {
  return () => absoluteNowMs() - originAbsMs;
}

/** The locks, semaphore and election the workload contends on. */
export interface WorkloadShape {
  /** Locks taken exclusively, each guarding a fenced register in the harness. */
  readonly exclusiveLocks: readonly string[];
  /** A lock taken shared with a limit (a semaphore), sometimes exclusively. */
  readonly semaphore: { readonly name: string; readonly limit: number };
  readonly election: string;
}

export const WORKLOAD: WorkloadShape = {
  exclusiveLocks: ['L0', 'L1'],
  semaphore: { name: 'S0', limit: 2 },
  election: 'e0',
};

/** Every lock name the workload touches. */
export function workloadLocks(shape: WorkloadShape = WORKLOAD): string[] {
  return [...shape.exclusiveLocks, shape.semaphore.name];
}

export interface WorkerConfig {
  /** The worker's process id in the history, e.g. "w1". */
  readonly process: string;
  /** Seed of the worker's own PRNG (derived from the run's seed). */
  readonly seed: number;
  readonly endpoints: readonly string[];
  readonly ttlMs: number;
  readonly originAbsMs: number;
  /** Widening applied to every recorded window (ms). */
  readonly clockSlackMs: number;
  readonly shape: WorkloadShape;
  /**
   * Overrides the SDK's lease safety margin. Only the harness's self-test sets it (negative:
   * clients believe in their leases past the server's deadline, a bug the run must catch).
   */
  readonly safetyMarginMs?: number;
}

/** An operation as invoked: its record minus what only the completion knows. */
export type Invocation = Operation extends infer O ? (O extends Operation ? Omit<O, 'completeMs' | 'outcome' | 'result'> : never) : never;

export type OperationResult = NonNullable<Operation['result']>;

export type FencedWriteResult = NonNullable<FencedWriteOp['result']>;

export type HarnessToWorker =
  | { readonly type: 'start'; readonly config: WorkerConfig }
  | { readonly type: 'clockProbe'; readonly probe: number }
  /** Finish the current action, let go of everything, close the client and report. */
  | { readonly type: 'stop' }
  | { readonly type: 'fencedWriteResult'; readonly request: number; readonly result: FencedWriteResult };

export type WorkerToHarness =
  /** The worker listens: messages sent before this could be lost. */
  | { readonly type: 'boot' }
  | { readonly type: 'clockReply'; readonly probe: number; readonly absMs: number }
  | { readonly type: 'ready' }
  | { readonly type: 'invoke'; readonly invocation: Invocation }
  | ({ readonly type: 'complete' } & Completion)
  /** A write to the fenced register guarding `lock`; the harness applies it on receipt. */
  | { readonly type: 'fencedWrite'; readonly request: number; readonly lock: string; readonly token: number; readonly value: string }
  | { readonly type: 'sessionOpened'; readonly session: number; readonly atMs: number }
  /**
   * The worker stopped vouching for `session`. The cluster may have dropped it (and with it
   * every lock it held) at any time from `expiryFromMs` on: the last moment the SDK still
   * believed in the lease, or earlier when an operation whose outcome is unknown may have
   * made the SDK take a grant back on its own.
   */
  | { readonly type: 'sessionEnded'; readonly session: number; readonly expiryFromMs: number; readonly why: string }
  /** What the worker holds now (the nemesis pauses holders to stage stale writes). */
  | { readonly type: 'holding'; readonly lock: string | null }
  | { readonly type: 'note'; readonly atMs: number; readonly text: string }
  | { readonly type: 'stopped' };

/** How an invoked operation ended, as the worker reports it. */
export interface Completion {
  readonly id: string;
  readonly outcome: Outcome;
  readonly completeMs: number;
  readonly result?: OperationResult;
  /** The session the operation turned out to act for, when not the one it was invoked with. */
  readonly session?: SessionId;
  /** The error, for the report (not read by the checker). */
  readonly error?: string;
}
