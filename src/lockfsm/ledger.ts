// The operation ledger (idempotency keys) for resources that cannot check a fencing token.
//
// A lock holder about to act on such a resource first records the operation (beginOp),
// passes the idempotency key to the resource, then records the outcome (completeOp). A
// later holder who finds an attempt begun and never completed learns it is in doubt: it
// may have happened. It can then record its own attempt (beginOp with retry) under the
// same idempotency key, so the resource, deduplicating by that key, does it at most once.
//
// - `run` is answered once per opKey (the first attempt); later attempts answer `retry`.
// - The idempotency key is `${opKey}@${index of the first beginOp}`: deterministic, and
//   unique even if the op is pruned and begun again later.
// - Every beginOp/completeOp is fenced (checked by the machine before it gets here), and an
//   op is bound to the lock of its first beginOp, so only that lock's current holder acts.
// - completeOp is accepted only from the holder (token and session) of the latest attempt:
//   a holder who lost the lock is fenced, and a newer holder must record its attempt first.
//
// The machine has no clock, so the leader stamps its wall-clock ms into beginOp/completeOp
// (`at`) and into pruneOps (`olderThan`). Entries are kept in order of their stamp's entry
// (not of the stamp itself, which may go back after a leader change); pruning walks from
// the oldest and stops at the first entry not old enough, so an entry is never dropped
// before its retention, though one may outlive it behind a newer-stamped one.

import type { ApplyContext } from './context.js';
import { conflict, limitExceeded } from './errors.js';
import {
  fail,
  readEach,
  readIndex,
  readNullableBytes,
  readNullableUint,
  readString,
  readTuple,
  readUint,
} from './snapshot-reader.js';
import type {
  MachineBeginOpResult,
  Fence,
  MachineError,
  OpCompletedResult,
  OpInfo,
  PruneCriteria,
  PrunedResult,
} from './types.js';

interface OpRecord {
  readonly opKey: string;
  readonly idempotencyKey: string;
  readonly lock: string;
  attempt: number;
  /** Holder of the latest attempt. */
  token: number;
  session: number;
  beganAt: number;
  result: Uint8Array | null;
  completedAt: number | null;
}

/** [opKey, idempotencyKey, lock, attempt, token, session, beganAt, result, completedAt] */
type OpTuple = [string, string, string, number, number, number, number, Uint8Array | null, number | null];

export class OpLedger {
  /** Ops never completed, in order of their latest attempt. */
  private readonly running = new Map<string, OpRecord>();
  /** Completed ops, in order of completion. */
  private readonly done = new Map<string, OpRecord>();

  constructor(private readonly maxEntries: number) {}

  begin(ctx: ApplyContext, session: number, opKey: string, fence: Fence, retry: boolean, at: number): MachineBeginOpResult {
    const op = this.running.get(opKey) ?? this.done.get(opKey);
    if (op === undefined) {
      if (this.size >= this.maxEntries) {
        return limitExceeded(`the operation ledger holds ${this.size} operations (limit ${this.maxEntries})`);
      }
      const idempotencyKey = `${opKey}@${ctx.index}`;
      this.running.set(opKey, {
        opKey,
        idempotencyKey,
        lock: fence.lock,
        attempt: 1,
        token: fence.token,
        session,
        beganAt: at,
        result: null,
        completedAt: null,
      });
      return { type: 'run', idempotencyKey, attempt: 1 };
    }
    const wrongLock = checkLock(op, fence);
    if (wrongLock) return wrongLock;
    if (op.result !== null) return { type: 'done', idempotencyKey: op.idempotencyKey, result: op.result };
    if (!retry) return { type: 'inDoubt', idempotencyKey: op.idempotencyKey, attempt: op.attempt, token: op.token };
    op.attempt++;
    op.token = fence.token;
    op.session = session;
    op.beganAt = at;
    this.running.delete(opKey); // move to the back: the order follows the latest attempt
    this.running.set(opKey, op);
    return { type: 'retry', idempotencyKey: op.idempotencyKey, attempt: op.attempt };
  }

  complete(session: number, opKey: string, fence: Fence, result: Uint8Array, at: number): OpCompletedResult | MachineError {
    const op = this.running.get(opKey) ?? this.done.get(opKey);
    if (op === undefined) return conflict(`no attempt of operation ${JSON.stringify(opKey)} has begun`);
    const wrongLock = checkLock(op, fence);
    if (wrongLock) return wrongLock;
    if (op.result !== null) return conflict(`operation ${JSON.stringify(opKey)} is already completed`);
    if (op.token !== fence.token || op.session !== session) {
      return conflict(
        `the latest attempt of operation ${JSON.stringify(opKey)} belongs to session ${op.session} with token ${op.token}; ` +
          'begin it again with retry first',
      );
    }
    op.result = result;
    op.completedAt = at;
    this.running.delete(opKey);
    this.done.set(opKey, op);
    return { type: 'completed', idempotencyKey: op.idempotencyKey };
  }

  prune(criteria: PruneCriteria): PrunedResult {
    return { type: 'pruned', count: this.walkPrunable(criteria, true) };
  }

  /** How many entries pruneOps with these criteria would drop: lets the leader skip no-op proposals. */
  countPrunable(criteria: PruneCriteria): number {
    return this.walkPrunable(criteria, false);
  }

  private walkPrunable(criteria: PruneCriteria, remove: boolean): number {
    const max = criteria.max ?? Number.POSITIVE_INFINITY;
    let count = 0;
    for (const [key, op] of this.done) {
      if (count >= max || op.completedAt! >= criteria.olderThan) break;
      if (remove) this.done.delete(key);
      count++;
    }
    if (criteria.abandonedOlderThan !== undefined) {
      for (const [key, op] of this.running) {
        if (count >= max || op.beganAt >= criteria.abandonedOlderThan) break;
        if (remove) this.running.delete(key);
        count++;
      }
    }
    return count;
  }

  info(opKey: string): OpInfo | null {
    const op = this.running.get(opKey) ?? this.done.get(opKey);
    if (op === undefined) return null;
    return {
      opKey,
      idempotencyKey: op.idempotencyKey,
      lock: op.lock,
      state: op.result === null ? 'running' : 'done',
      attempt: op.attempt,
      token: op.token,
      session: op.session,
      beganAt: op.beganAt,
      result: op.result,
      completedAt: op.completedAt,
    };
  }

  get size(): number {
    return this.running.size + this.done.size;
  }

  get runningCount(): number {
    return this.running.size;
  }

  toSnapshot(): { running: OpTuple[]; done: OpTuple[] } {
    const tuple = (op: OpRecord): OpTuple => [
      op.opKey,
      op.idempotencyKey,
      op.lock,
      op.attempt,
      op.token,
      op.session,
      op.beganAt,
      op.result,
      op.completedAt,
    ];
    return { running: [...this.running.values()].map(tuple), done: [...this.done.values()].map(tuple) };
  }

  restore(running: unknown, done: unknown, appliedIndex: number): void {
    const read = (item: unknown): OpRecord => {
      const t = readTuple(item, 9, 'operation');
      const opKey = readString(t[0], 'opKey');
      if (this.running.has(opKey) || this.done.has(opKey)) fail(`operation ${JSON.stringify(opKey)} appears twice`);
      return {
        opKey,
        idempotencyKey: readString(t[1], 'idempotencyKey'),
        lock: readString(t[2], 'lock'),
        attempt: readIndex(t[3], Number.MAX_SAFE_INTEGER, 'attempt'),
        token: readIndex(t[4], appliedIndex, 'token'),
        session: readIndex(t[5], appliedIndex, 'session'),
        beganAt: readUint(t[6], 'beganAt'),
        result: readNullableBytes(t[7], 'result'),
        completedAt: readNullableUint(t[8], 'completedAt'),
      };
    };
    readEach(running, 'ledger.running', (item) => {
      const op = read(item);
      if (op.result !== null || op.completedAt !== null) fail('a running operation has a result');
      this.running.set(op.opKey, op);
    });
    readEach(done, 'ledger.done', (item) => {
      const op = read(item);
      if (op.result === null || op.completedAt === null) fail('a done operation has no result');
      this.done.set(op.opKey, op);
    });
  }
}

function checkLock(op: OpRecord, fence: Fence): MachineError | null {
  if (op.lock === fence.lock) return null;
  return conflict(
    `operation ${JSON.stringify(op.opKey)} is guarded by lock ${JSON.stringify(op.lock)}, not ${JSON.stringify(fence.lock)}`,
  );
}
