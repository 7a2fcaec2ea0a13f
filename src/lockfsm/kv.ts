// A small key-value space for fenced writes. A key's revision is the index of the entry
// that last wrote it, so revisions only grow and `ifRevision` gives compare-and-set.
// Size is bounded (key bytes + value bytes over all keys, in total and per token: budget.ts)
// because every node keeps it all in memory and in every snapshot. A key is charged to the
// owner of the session that last wrote it.

import type { ApplyContext } from './context.js';
import { ByteBudget } from './budget.js';
import type { MachineConfig } from './config.js';
import { machineError } from './errors.js';
import { fail, readArray, readBytes, readEach, readIndex, readNullableString, readString } from './snapshot-reader.js';
import { utf8Length } from './text.js';
import type { DeletedResult, KvEntry, MachineError, WrittenResult } from './types.js';

interface Stored {
  readonly value: Uint8Array;
  readonly revision: number;
  /** Key bytes + value bytes, what counts toward the budget. */
  readonly bytes: number;
  /** Whose budget the bytes count towards: the owner of the session that wrote them. */
  readonly owner: string | null;
}

/** [key, value, revision] in snapshots of version 1; [key, value, revision, owner] since. */
type KvTuple = [string, Uint8Array, number, string | null];

export class KvStore {
  private readonly byKey = new Map<string, Stored>();
  private readonly budget: ByteBudget;

  constructor(settings: () => MachineConfig) {
    this.budget = new ByteBudget('key-value space', { total: 'budgets.kvBytes', perOwner: 'budgets.kvBytesPerToken' }, () => {
      const s = settings();
      return { total: s.maxKvTotalBytes, perOwner: s.maxKvBytesPerOwner };
    });
  }

  put(ctx: ApplyContext, owner: string | null, key: string, value: Uint8Array, ifRevision: number | undefined): WrittenResult | MachineError {
    const old = this.byKey.get(key);
    const mismatch = revisionMismatch(key, old, ifRevision);
    if (mismatch) return mismatch;
    const bytes = utf8Length(key) + value.length;
    const over = this.budget.check(owner, bytes, old ?? undefined);
    if (over) return over;
    if (old !== undefined) this.budget.refund(old.owner, old.bytes);
    this.byKey.set(key, { value, revision: ctx.index, bytes, owner });
    this.budget.charge(owner, bytes);
    ctx.events.push({ type: 'kvChanged', key, value, revision: ctx.index });
    return { type: 'written', revision: ctx.index };
  }

  delete(ctx: ApplyContext, key: string, ifRevision: number | undefined): DeletedResult | MachineError {
    const old = this.byKey.get(key);
    const mismatch = revisionMismatch(key, old, ifRevision);
    if (mismatch) return mismatch;
    if (old === undefined) return { type: 'deleted', existed: false, revision: 0 };
    this.byKey.delete(key);
    this.budget.refund(old.owner, old.bytes);
    ctx.events.push({ type: 'kvChanged', key, value: null, revision: ctx.index });
    return { type: 'deleted', existed: true, revision: ctx.index };
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
    for (const [key, s] of this.byKey) out.push([key, s.value, s.revision, s.owner]);
    return out;
  }

  restore(data: unknown, appliedIndex: number): void {
    readEach(data, 'kv', (item) => {
      const t = readArray(item, 'entry');
      if (t.length !== 3 && t.length !== 4) fail(`entry must have 3 or 4 fields, has ${t.length}`);
      const key = readString(t[0], 'key');
      if (this.byKey.has(key)) fail(`key ${JSON.stringify(key)} appears twice`);
      const value = readBytes(t[1], 'value');
      const bytes = utf8Length(key) + value.length;
      const owner = t.length === 4 ? readNullableString(t[3], 'owner') : null;
      this.byKey.set(key, { value, revision: readIndex(t[2], appliedIndex, 'revision'), bytes, owner });
      this.budget.charge(owner, bytes);
    });
  }
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
