// The SDK's transaction: compares and two branches of writes, applied by the cluster in one
// entry (docs/protocol.md, `txn`). A lock compare may name a Lock handle: the compare is
// then "this client's session holds that lock with the handle's token", the fence of a
// write made one compare among others; when it is the compare that failed, the handle is
// lost (as a fenced write's refusal loses it).
import type { TxnCompare, TxnOp } from '../protocol/client-protocol.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { isRecord } from '../protocol/results.js';
import { FencedError, InvalidArgumentError } from './errors.js';
import type { FenceHolder, KvValue } from './kv.js';

export type TxnCompareInput = TxnCompare | { readonly target: 'lock'; readonly lock: FenceHolder };

export type TxnOpInput =
  | { readonly op: 'put'; readonly key: string; readonly value: KvValue; readonly ephemeral?: boolean }
  | { readonly op: 'delete'; readonly key: string };

export interface TxnRequest {
  /** Every one must hold for `success` to apply (none: it applies). */
  readonly compare?: readonly TxnCompareInput[];
  readonly success?: readonly TxnOpInput[];
  /** Applied instead when a compare does not hold. */
  readonly failure?: readonly TxnOpInput[];
}

export interface TxnOptions {
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface TxnOutcome {
  readonly succeeded: boolean;
  /** Positions of the compares that did not hold. */
  readonly failed: readonly number[];
  /** One per write of the branch that applied: a put's revision, a delete's `existed`. */
  readonly results: readonly ({ readonly op: 'put'; readonly revision: number } | { readonly op: 'delete'; readonly existed: boolean })[];
  /** The entry's index: every change of the branch has it as its revision. */
  readonly revision: number;
}

const encoder = new TextEncoder();

function isHolder(x: unknown): x is FenceHolder {
  return isRecord(x) && typeof (x as { assertHeld?: unknown }).assertHeld === 'function';
}

function wireCompare(c: TxnCompareInput): TxnCompare {
  if (c.target === 'lock' && isHolder(c.lock)) {
    c.lock.assertHeld();
    return { target: 'lock', lock: c.lock.name, token: c.lock.token };
  }
  return c as TxnCompare;
}

function wireOp(op: TxnOpInput): TxnOp {
  if (op.op === 'delete') return { op: 'delete', key: op.key };
  const value = typeof op.value === 'string' ? encoder.encode(op.value) : op.value;
  return { op: 'put', key: op.key, value, ...(op.ephemeral ? { ephemeral: true } : {}) };
}

export async function runTxn(core: ClientCore, txn: TxnRequest, options: TxnOptions = {}): Promise<TxnOutcome> {
  if (typeof txn !== 'object' || txn === null) throw new InvalidArgumentError('txn must be an object {compare, success, failure}');
  const compareIn = txn.compare ?? [];
  const compare = compareIn.map(wireCompare);
  const success = (txn.success ?? []).map(wireOp);
  const failure = (txn.failure ?? []).map(wireOp);
  const deadline = options.timeoutMs === undefined ? defaultDeadline(core) : core.clock.now() + options.timeoutMs;
  const result = await core.sessions.sequenced(() => ({ op: 'txn', compare, success, failure }), {
    deadline,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  // The SDK's outcome leaves out the entry's index (the revision is what a caller compares).
  const outcome: TxnOutcome = { succeeded: result.succeeded, failed: result.failed, results: result.results, revision: result.revision };
  // A handle whose compare failed holds a token the cluster no longer honours.
  for (const i of outcome.failed) {
    const c = compareIn[i];
    if (c?.target === 'lock' && isHolder(c.lock)) c.lock.fencedOut(new FencedError(`txn compare ${i}: the lock is not held with token ${c.lock.token}`, null));
  }
  return outcome;
}
