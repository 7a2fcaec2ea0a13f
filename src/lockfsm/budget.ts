// A byte budget of one replicated table (key-value space, ledger, elections): a total for
// the table and a share per owner, the token name a session was opened with. Every node
// keeps every table in memory and in every snapshot, so what one tenant writes costs every
// node; without a share per owner one token could fill a table and refuse every other
// tenant's writes (LIMIT_EXCEEDED for all). Sessions opened without authentication have no
// owner: their bytes count towards the total only (there are no tenants to keep apart).
//
// Both bounds are settings (config.ts), read at each check: a lowered bound refuses growth
// from then on and never takes back what is stored.

import { limitExceeded } from './errors.js';
import type { MachineError } from './types.js';

export interface BudgetBounds {
  readonly total: number;
  readonly perOwner: number;
}

/** What a write gives back: the bytes of what it replaces, and whose they were. */
export interface Freed {
  readonly owner: string | null;
  readonly bytes: number;
}

const NOTHING_FREED: Freed = Object.freeze({ owner: null, bytes: 0 });

export class ByteBudget {
  private total = 0;
  private readonly byOwner = new Map<string, number>();

  constructor(
    /** The table's name in refusals ("key-value space"). */
    private readonly table: string,
    /** The setting names, for the refusal's hint. */
    private readonly settingNames: { readonly total: string; readonly perOwner: string },
    private readonly bounds: () => BudgetBounds,
  ) {}

  get bytes(): number {
    return this.total;
  }

  ownerBytes(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }

  /** LIMIT_EXCEEDED when storing `bytes` for `owner` in place of `freed` would grow the
   *  table past its total or the owner past its share; null when it fits. Shrinking always fits. */
  check(owner: string | null, bytes: number, freed: Freed = NOTHING_FREED): MachineError | null {
    return this.checkBatch(owner, bytes, [freed]);
  }

  /** The same for several writes at once (a transaction's branch): `bytes` stored in all
   *  for `owner`, in place of everything in `freed`. Judged as one change, so a branch that
   *  frees as much as it stores fits however full the table is. */
  checkBatch(owner: string | null, bytes: number, freed: readonly Freed[]): MachineError | null {
    const { total, perOwner } = this.bounds();
    let freedTotal = 0;
    let freedOwn = 0;
    for (const f of freed) {
      freedTotal += f.bytes;
      if (f.owner !== null && f.owner === owner) freedOwn += f.bytes;
    }
    const newTotal = this.total - freedTotal + bytes;
    if (newTotal > this.total && newTotal > total) {
      return limitExceeded(`the ${this.table} would hold ${newTotal} bytes, over the cluster's limit of ${total} (${this.settingNames.total})`);
    }
    if (owner !== null) {
      const had = this.ownerBytes(owner);
      const next = had - freedOwn + bytes;
      if (next > had && next > perOwner) {
        return limitExceeded(
          `token "${owner}" would hold ${next} bytes of the ${this.table}, over the limit per token of ${perOwner} (${this.settingNames.perOwner})`,
        );
      }
    }
    return null;
  }

  charge(owner: string | null, bytes: number): void {
    this.total += bytes;
    if (owner !== null) this.byOwner.set(owner, this.ownerBytes(owner) + bytes);
  }

  refund(owner: string | null, bytes: number): void {
    this.total -= bytes;
    if (owner === null) return;
    const left = this.ownerBytes(owner) - bytes;
    if (left > 0) this.byOwner.set(owner, left);
    else this.byOwner.delete(owner);
  }
}
