// A small driver for unit tests: numbers entries, numbers each session's requests, and
// keeps the last Applied so tests read like the scenario they describe.

import {
  LockMachine,
  DEFAULT_MACHINE_CONFIG,
  type Applied,
  type Command,
  type Fence,
  type LockMode,
  type MachineConfig,
  type Result,
  type ResultFor,
} from '../../src/lockfsm/index.js';

export const TEST_CONFIG: MachineConfig = { ...DEFAULT_MACHINE_CONFIG, defaultLockDelayMs: 0 };

export class Driver {
  readonly m: LockMachine;
  index = 0;
  private readonly seqs = new Map<number, number>();

  constructor(config: MachineConfig = TEST_CONFIG) {
    this.m = new LockMachine(config);
  }

  apply<C extends Command>(cmd: C): Applied<ResultFor<C>> {
    return this.m.apply(++this.index, cmd);
  }

  /** Next seq of `session` (1, 2, ...). */
  seq(session: number): number {
    const next = (this.seqs.get(session) ?? 0) + 1;
    this.seqs.set(session, next);
    return next;
  }

  open(ttlMs = 10_000): number {
    const r = this.apply({ type: 'openSession', ttlMs });
    if (r.result.type !== 'session') throw new Error(`open failed: ${JSON.stringify(r.result)}`);
    return r.result.session;
  }

  acquire(
    session: number,
    name: string,
    opts: { mode?: LockMode; wait?: boolean; limit?: number; lockDelayMs?: number; fence?: Fence } = {},
  ) {
    return this.apply({
      type: 'acquire',
      session,
      seq: this.seq(session),
      name,
      mode: opts.mode ?? 'exclusive',
      wait: opts.wait ?? true,
      ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
      ...(opts.lockDelayMs !== undefined ? { lockDelayMs: opts.lockDelayMs } : {}),
      ...(opts.fence !== undefined ? { fence: opts.fence } : {}),
    });
  }

  release(session: number, name: string, token: number) {
    return this.apply({ type: 'release', session, seq: this.seq(session), name, token });
  }

  cancelWait(session: number, name: string) {
    return this.apply({ type: 'cancelWait', session, seq: this.seq(session), name });
  }

  close(session: number) {
    return this.apply({ type: 'closeSession', session, seq: this.seq(session) });
  }

  expire(session: number) {
    return this.apply({ type: 'expireSession', session });
  }

  /** Token of a granted result, or a thrown error naming what came instead. */
  static token(result: Result): number {
    if (result.type !== 'granted' && result.type !== 'leader') throw new Error(`not granted: ${JSON.stringify(result)}`);
    return result.token;
  }

  holders(name: string): [number, number, LockMode][] {
    return (this.m.lock(name)?.holders ?? []).map((h) => [h.session, h.token, h.mode]);
  }

  waiters(name: string): number[] {
    return (this.m.lock(name)?.waiters ?? []).map((w) => w.session);
  }
}

export const bytes = (...b: number[]): Uint8Array => new Uint8Array(b);
