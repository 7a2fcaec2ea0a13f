// A terse way to write histories by hand in tests. Each call appends one operation and
// returns it; ids count from 1. A window is [invokeMs, completeMs]; pass outcome
// 'unknown' (completeMs null) or 'fail' through `opts`.

import type { JsonValue, LockMode, Operation, Outcome } from '../checker/index.js';

export type Window = readonly [number, number | null];

interface Common {
  process?: string;
  outcome?: Outcome;
}

export class HistoryBuilder {
  readonly ops: Operation[] = [];
  private nextId = 1;

  private push(
    op: Operation['op'],
    session: string | undefined,
    args: Record<string, unknown>,
    [invokeMs, completeMs]: Window,
    result: unknown,
    opts: Common,
  ): Operation {
    const outcome = opts.outcome ?? 'ok';
    const record = {
      id: this.nextId++,
      process: opts.process ?? (session === undefined ? 'observer' : `p-${session}`),
      ...(session === undefined ? {} : { session }),
      op,
      args,
      invokeMs,
      completeMs: outcome === 'unknown' ? null : completeMs,
      outcome,
      ...(outcome === 'ok' && result !== undefined ? { result } : {}),
    } as unknown as Operation;
    this.ops.push(record);
    return record;
  }

  acquire(session: string, lock: string, token: number | null, w: Window, opts: Common & { mode?: LockMode; limit?: number } = {}): Operation {
    const args = { lock, mode: opts.mode ?? 'exclusive', ...(opts.limit === undefined ? {} : { limit: opts.limit }) };
    return this.push('acquire', session, args, w, token === null ? undefined : { token }, { ...opts, outcome: opts.outcome ?? (token === null ? 'unknown' : 'ok') });
  }

  tryAcquire(session: string, lock: string, token: number | false, w: Window, opts: Common & { mode?: LockMode; limit?: number } = {}): Operation {
    const args = { lock, mode: opts.mode ?? 'exclusive', ...(opts.limit === undefined ? {} : { limit: opts.limit }) };
    return this.push('tryAcquire', session, args, w, token === false ? { granted: false } : { granted: true, token }, opts);
  }

  release(session: string, lock: string, token: number, w: Window, opts: Common = {}): Operation {
    return this.push('release', session, { lock, token }, w, {}, opts);
  }

  read(lock: string, holders: readonly (readonly [string, number])[], w: Window, opts: Common = {}): Operation {
    return this.push('read', undefined, { lock }, w, { holders: holders.map(([session, token]) => ({ session, token })) }, opts);
  }

  expire(session: string, w: Window, opts: Common = {}): Operation {
    return this.push('sessionExpired', undefined, { session }, w, {}, { process: 'cluster', ...opts });
  }

  campaign(session: string, election: string, value: JsonValue, token: number | null, w: Window, opts: Common = {}): Operation {
    return this.push('campaign', session, { election, value }, w, token === null ? undefined : { token }, { ...opts, outcome: opts.outcome ?? (token === null ? 'unknown' : 'ok') });
  }

  proclaim(session: string, election: string, value: JsonValue, w: Window, opts: Common = {}): Operation {
    return this.push('proclaim', session, { election, value }, w, {}, opts);
  }

  resign(session: string, election: string, w: Window, opts: Common = {}): Operation {
    return this.push('resign', session, { election }, w, {}, opts);
  }

  leader(election: string, leader: { session: string; token: number; value: JsonValue } | null, w: Window, opts: Common = {}): Operation {
    return this.push('leader', undefined, { election }, w, { leader }, opts);
  }

  fencedWrite(session: string, lock: string, token: number, w: Window, rejectedBy?: number, opts: Common = {}): Operation {
    const result = rejectedBy === undefined ? {} : { rejected: true, fence: rejectedBy };
    return this.push('fencedWrite', session, { lock, token, value: `v${token}` }, w, result, opts);
  }
}
