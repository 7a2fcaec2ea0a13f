// How much failure a cluster can still take, in words an operator reads at a glance. Used by
// `palisade status`, `palisade cluster` and (in the same words) the status page.

export type Danger = 'ok' | 'degraded' | 'down';

export interface FaultTolerance {
  readonly up: number;
  readonly total: number;
  /** Votes needed to elect a leader and commit a write. */
  readonly quorum: number;
  /** Further failures the cluster survives (0 when one more stops writes; -1 without quorum). */
  readonly spare: number;
  readonly danger: Danger;
  readonly text: string;
}

/** `up` of `total` voters answering. */
export function faultTolerance(up: number, total: number): FaultTolerance {
  const quorum = Math.floor(total / 2) + 1;
  const spare = up - quorum;
  const failures = (n: number) => `${n} failure${n === 1 ? '' : 's'}`;
  if (spare < 0) {
    return { up, total, quorum, spare: -1, danger: 'down', text: `${up} of ${total} up: no quorum (${quorum} needed), no leader can be elected and writes stop` };
  }
  if (spare === 0) {
    const text = up === total ? `${up} of ${total} up: survives no failure` : `${up} of ${total} up: one more failure stops writes`;
    return { up, total, quorum, spare, danger: 'degraded', text };
  }
  return { up, total, quorum, spare, danger: up === total ? 'ok' : 'degraded', text: `${up} of ${total} up: survives ${failures(spare)}` };
}
