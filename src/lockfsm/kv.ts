// A small key-value space for fenced writes. A key's revision is the index of the entry
// that last wrote it, so revisions only grow and `ifRevision` gives compare-and-set.
// Size is bounded (key bytes + value bytes over all keys, in total and per token: budget.ts)
// because every node keeps it all in memory and in every snapshot. A key is charged to the
// owner of the session that last wrote it.
//
// A key written `ephemeral` is tied to its writer's session (Consul's session-bound keys,
// ZooKeeper's ephemeral nodes, etcd's leases): it is deleted in the very entry that ends the
// session, by close, expiry or revoke, and watchers see the delete with that entry's index.
// A later write without `ephemeral` unties it; one with `ephemeral` ties it to the new writer.
//
// Every change is also recorded in the watch history (history.ts), with its revision.

import type { ApplyContext } from './context.js';
import { ByteBudget, type Freed } from './budget.js';
import type { MachineConfig } from './config.js';
import { machineError } from './errors.js';
import { WatchHistory } from './history.js';
import { sessionLoad, tooManyLocks, type SessionRecord } from './sessions.js';
import { fail, readArray, readBytes, readEach, readIndex, readNullableString, readString } from './snapshot-reader.js';
import { utf8Length } from './text.js';
import type { DeletedResult, KvEntry, MachineError, TxnCompare, TxnOp, TxnOpResult, TxnResult, WrittenResult } from './types.js';

interface Stored {
  readonly value: Uint8Array;
  readonly revision: number;
  /** Key bytes + value bytes, what counts toward the budget. */
  readonly bytes: number;
  /** Whose budget the bytes count towards: the owner of the session that wrote them. */
  readonly owner: string | null;
  /** The session the key is tied to (an ephemeral put), or null. */
  readonly session: SessionRecord | null;
}

/** [key, value, revision] in snapshots of version 1; [key, value, revision, owner] since,
 *  and [key, value, revision, owner, session] for a key tied to a session. */
type KvTuple = [string, Uint8Array, number, string | null] | [string, Uint8Array, number, string | null, number];

/** One write, as the store does it once its checks passed. */
interface PlannedWrite {
  readonly key: string;
  readonly old: Stored | undefined;
  /** null: a delete. */
  readonly value: Uint8Array | null;
  readonly ephemeral: boolean;
}

export class KvStore {
  private readonly byKey = new Map<string, Stored>();
  private readonly budget: ByteBudget;
  readonly history: WatchHistory;

  constructor(private readonly settings: () => MachineConfig) {
    this.budget = new ByteBudget('key-value space', { total: 'budgets.kvBytes', perOwner: 'budgets.kvBytesPerToken' }, () => {
      const s = settings();
      return { total: s.maxKvTotalBytes, perOwner: s.maxKvBytesPerOwner };
    });
    this.history = new WatchHistory(settings);
  }

  /** `at`: the cluster's time of the entry (the history's age). */
  put(ctx: ApplyContext, rec: SessionRecord, key: string, value: Uint8Array, ifRevision: number | undefined, ephemeral: boolean, at: number): WrittenResult | MachineError {
    const old = this.byKey.get(key);
    const mismatch = revisionMismatch(key, old, ifRevision);
    if (mismatch) return mismatch;
    const over = this.budget.check(rec.owner, utf8Length(key) + value.length, freedBy(old)) ?? this.tieProblem(rec, ephemeral && old?.session !== rec ? 1 : 0);
    if (over) return over;
    this.write(ctx, rec, { key, old, value, ephemeral }, at);
    return { type: 'written', revision: ctx.index };
  }

  delete(ctx: ApplyContext, key: string, ifRevision: number | undefined, at: number): DeletedResult | MachineError {
    const old = this.byKey.get(key);
    const mismatch = revisionMismatch(key, old, ifRevision);
    if (mismatch) return mismatch;
    if (old === undefined) return { type: 'deleted', existed: false, revision: 0 };
    this.remove(ctx, key, old, at);
    return { type: 'deleted', existed: true, revision: ctx.index };
  }

  /**
   * A transaction: every compare judged against the state before it (`holds` answers the
   * lock compares), then the branch they choose, all of it or nothing: a branch that does not
   * fit the budget is refused whole (LIMIT_EXCEEDED, nothing changed).
   */
  txn(
    ctx: ApplyContext,
    rec: SessionRecord,
    cmd: { readonly compare: readonly TxnCompare[]; readonly success: readonly TxnOp[]; readonly failure: readonly TxnOp[] },
    holds: (lock: string, token: number) => boolean,
    at: number,
  ): TxnResult | MachineError {
    const failed: number[] = [];
    cmd.compare.forEach((c, i) => {
      if (!this.compareHolds(c, holds)) failed.push(i);
    });
    const succeeded = failed.length === 0;
    const branch = succeeded ? cmd.success : cmd.failure;
    const plan: PlannedWrite[] = branch.map((op) => ({
      key: op.key,
      old: this.byKey.get(op.key),
      value: op.op === 'put' ? op.value : null,
      ephemeral: op.op === 'put' && op.ephemeral === true,
    }));
    let stored = 0;
    for (const w of plan) if (w.value !== null) stored += utf8Length(w.key) + w.value.length;
    const ties = plan.filter((w) => w.ephemeral && w.old?.session !== rec).length;
    const over = this.budget.checkBatch(rec.owner, stored, plan.flatMap((w) => freedBy(w.old) ?? [])) ?? this.tieProblem(rec, ties);
    if (over) return over;
    const results: TxnOpResult[] = plan.map((w) => {
      if (w.value !== null) {
        this.write(ctx, rec, w, at);
        return { op: 'put', revision: ctx.index };
      }
      if (w.old !== undefined) this.remove(ctx, w.key, w.old, at);
      return { op: 'delete', existed: w.old !== undefined };
    });
    return { type: 'txn', succeeded, failed, results, revision: ctx.index };
  }

  /** The session ends: its ephemeral keys go, in this entry (sorted: the order of events
   *  must not depend on the order the set was built in, which a restore changes). */
  dropSession(ctx: ApplyContext, rec: SessionRecord, at: number): void {
    for (const key of [...rec.ephemerals].sort()) this.remove(ctx, key, this.byKey.get(key)!, at);
  }

  get(key: string): KvEntry | null {
    const s = this.byKey.get(key);
    return s === undefined ? null : { key, value: s.value, revision: s.revision };
  }

  /** Keys in code-unit order. O(keys) per call. */
  range(prefix: string, limit: number): KvEntry[] {
    const keys: string[] = [];
    for (const key of this.byKey.keys()) if (key.startsWith(prefix)) keys.push(key);
    keys.sort();
    return keys.slice(0, Math.max(0, limit)).map((k) => this.get(k)!);
  }

  get size(): number {
    return this.byKey.size;
  }

  get bytes(): number {
    return this.budget.bytes;
  }

  toSnapshot(): KvTuple[] {
    const out: KvTuple[] = [];
    for (const [key, s] of this.byKey) {
      out.push(s.session === null ? [key, s.value, s.revision, s.owner] : [key, s.value, s.revision, s.owner, s.session.id]);
    }
    return out;
  }

  restore(data: unknown, appliedIndex: number, sessions: (id: number) => SessionRecord | undefined): void {
    readEach(data, 'kv', (item) => {
      const t = readArray(item, 'entry');
      if (t.length < 3 || t.length > 5) fail(`entry must have 3 to 5 fields, has ${t.length}`);
      const key = readString(t[0], 'key');
      if (this.byKey.has(key)) fail(`key ${JSON.stringify(key)} appears twice`);
      const value = readBytes(t[1], 'value');
      const bytes = utf8Length(key) + value.length;
      const owner = t.length >= 4 ? readNullableString(t[3], 'owner') : null;
      let session: SessionRecord | null = null;
      if (t.length === 5) {
        const id = readIndex(t[4], appliedIndex, 'session');
        session = sessions(id) ?? fail(`key ${JSON.stringify(key)} is tied to session ${id}, which is not open`);
        session.add('ephemerals', key);
      }
      this.byKey.set(key, { value, revision: readIndex(t[2], appliedIndex, 'revision'), bytes, owner, session });
      this.budget.charge(owner, bytes);
    });
  }

  /** Keys tied to a session count with its locks (sessionLoad): its end deletes them all in
   *  one entry, so they are bounded as its locks are (maxLocksPerSession). */
  private tieProblem(rec: SessionRecord, newTies: number): MachineError | null {
    const { maxLocksPerSession } = this.settings();
    return newTies > 0 && sessionLoad(rec) + newTies > maxLocksPerSession ? tooManyLocks(rec, maxLocksPerSession) : null;
  }

  private compareHolds(c: TxnCompare, holds: (lock: string, token: number) => boolean): boolean {
    switch (c.target) {
      case 'lock':
        return holds(c.lock, c.token);
      case 'absent':
        return !this.byKey.has(c.key);
      case 'revision': {
        const current = this.byKey.get(c.key)?.revision ?? 0;
        switch (c.op) {
          case 'eq':
            return current === c.revision;
          case 'ne':
            return current !== c.revision;
          case 'gt':
            return current > c.revision;
          case 'lt':
            return current < c.revision;
        }
      }
    }
  }

  /** Stores a put that passed its checks: the budget moves from the old writer to the new. */
  private write(ctx: ApplyContext, rec: SessionRecord, w: PlannedWrite, at: number): void {
    const value = w.value!;
    const bytes = utf8Length(w.key) + value.length;
    if (w.old !== undefined) {
      this.budget.refund(w.old.owner, w.old.bytes);
      w.old.session?.drop('ephemerals', w.key);
    }
    const session = w.ephemeral ? rec : null;
    session?.add('ephemerals', w.key);
    this.byKey.set(w.key, { value, revision: ctx.index, bytes, owner: rec.owner, session });
    this.budget.charge(rec.owner, bytes);
    this.changed(ctx, w.key, value, at);
  }

  private remove(ctx: ApplyContext, key: string, old: Stored, at: number): void {
    this.byKey.delete(key);
    this.budget.refund(old.owner, old.bytes);
    old.session?.drop('ephemerals', key);
    this.changed(ctx, key, null, at);
  }

  private changed(ctx: ApplyContext, key: string, value: Uint8Array | null, at: number): void {
    ctx.events.push({ type: 'kvChanged', key, value, revision: ctx.index });
    this.history.record(ctx.index, key, value, at);
  }
}

function freedBy(old: Stored | undefined): Freed | undefined {
  return old === undefined ? undefined : { owner: old.owner, bytes: old.bytes };
}

function revisionMismatch(key: string, old: Stored | undefined, ifRevision: number | undefined): MachineError | null {
  if (ifRevision === undefined) return null;
  const current = old?.revision ?? 0;
  if (current === ifRevision) return null;
  return {
    ...machineError('CONFLICT', `key ${JSON.stringify(key)} is at revision ${current}, not ${ifRevision}`),
    currentRevision: current,
  };
}
