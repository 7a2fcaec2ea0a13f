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
// The machine has no clock, so the leader stamps the cluster's time (machine.ts, "cluster
// time": never behind an earlier stamp, advanced by the leader's monotonic clock, so a step
// of any wall clock does not age anything) into beginOp/completeOp (`at`) and into pruneOps.
// Entries are kept in order of their stamp's entry; pruning walks from the oldest and stops
// at the first entry not old enough, so an entry is never dropped before its retention.
//
// The ledger's bytes (opKey and result, plus RECORD_OVERHEAD_BYTES per operation) count
// towards a byte budget, in total and per owner (budget.ts): an operation is charged to the
// owner of the session that first began it.

import type { ApplyContext } from './context.js';
import { ByteBudget } from './budget.js';
import { RECORD_OVERHEAD_BYTES, type MachineConfig } from './config.js';
import { conflict, limitExceeded } from './errors.js';
import {
  fail,
  readEach,
  readIndex,
  readArray,
  readNullableBytes,
  readNullableString,
  readNullableUint,
  readString,
  readUint,
} from './snapshot-reader.js';
import { utf8Length } from './text.js';
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
  /** Whose budget the operation counts towards (the owner of the session that began it). */
  readonly owner: string | null;
}

/** [opKey, idempotencyKey, lock, attempt, token, session, beganAt, result, completedAt, owner]
 *  (snapshots of version 1 have no owner). */
type OpTuple = [string, string, string, number, number, number, number, Uint8Array | null, number | null, string | null];

/** What an operation costs the budget: its opKey, its result once it has one, and its record. */
function opBytes(op: { readonly opKey: string; readonly result: Uint8Array | null }): number {
  return RECORD_OVERHEAD_BYTES + utf8Length(op.opKey) + (op.result?.length ?? 0);
}

export class OpLedger {
  /** Ops never completed, in order of their latest attempt. */
  private readonly running = new Map<string, OpRecord>();
  /** Completed ops, in order of completion. */
  private readonly done = new Map<string, OpRecord>();

  private readonly budget: ByteBudget;

  constructor(private readonly settings: () => MachineConfig) {
    this.budget = new ByteBudget('operation ledger', { total: 'budgets.ledgerBytes', perOwner: 'budgets.ledgerBytesPerToken' }, () => {
      const s = settings();
      return { total: s.maxLedgerBytes, perOwner: s.maxLedgerBytesPerOwner };
    });
  }

  /** Bytes the ledger holds (what its budget counts). */
  get bytes(): number {
    return this.budget.bytes;
  }

  /** `owner`: the owner of session `session` (whose budget a new operation counts towards). */
  begin(ctx: ApplyContext, session: number, owner: string | null, opKey: string, fence: Fence, retry: boolean, at: number): MachineBeginOpResult {
    const op = this.running.get(opKey) ?? this.done.get(opKey);
    if (op === undefined) {
      const { maxLedgerEntries } = this.settings();
      if (this.size >= maxLedgerEntries) {
        return limitExceeded(`the operation ledger holds ${this.size} operations (limit ${maxLedgerEntries})`);
      }
      const bytes = opBytes({ opKey, result: null });
      const over = this.budget.check(owner, bytes);
      if (over) return over;
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
        owner,
      });
      this.budget.charge(owner, bytes);
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
    // The result is charged to the operation's owner, within its share like any growth.
    const over = this.budget.check(op.owner, result.length);
    if (over) return over;
    this.budget.charge(op.owner, result.length);
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
      if (remove) this.drop(this.done, key, op);
      count++;
    }
    if (criteria.abandonedOlderThan !== undefined) {
      for (const [key, op] of this.running) {
        if (count >= max || op.beganAt >= criteria.abandonedOlderThan) break;
        if (remove) this.drop(this.running, key, op);
        count++;
      }
    }
    return count;
  }

  private drop(from: Map<string, OpRecord>, key: string, op: OpRecord): void {
    from.delete(key);
    this.budget.refund(op.owner, opBytes(op));
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
      op.owner,
    ];
    return { running: [...this.running.values()].map(tuple), done: [...this.done.values()].map(tuple) };
  }

  restore(running: unknown, done: unknown, appliedIndex: number): void {
    const read = (item: unknown): OpRecord => {
      const t = readArray(item, 'operation');
      if (t.length !== 9 && t.length !== 10) fail(`operation must have 9 or 10 fields, has ${t.length}`);
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
        owner: t.length === 10 ? readNullableString(t[9], 'owner') : null,
      };
    };
    readEach(running, 'ledger.running', (item) => {
      const op = read(item);
      if (op.result !== null || op.completedAt !== null) fail('a running operation has a result');
      this.running.set(op.opKey, op);
      this.budget.charge(op.owner, opBytes(op));
    });
    readEach(done, 'ledger.done', (item) => {
      const op = read(item);
      if (op.result === null || op.completedAt === null) fail('a done operation has no result');
      this.done.set(op.opKey, op);
      this.budget.charge(op.owner, opBytes(op));
    });
  }
}

function checkLock(op: OpRecord, fence: Fence): MachineError | null {
  if (op.lock === fence.lock) return null;
  return conflict(
    `operation ${JSON.stringify(op.opKey)} is guarded by lock ${JSON.stringify(op.lock)}, not ${JSON.stringify(fence.lock)}`,
  );
}
