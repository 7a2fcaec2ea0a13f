// Random workloads for property tests. fast-check generates abstract steps made of small
// integers (so failures shrink well); the Workload resolves each step into a concrete
// command against what has happened so far (which sessions exist, which tokens were seen)
// and records the concrete log, so it can be replayed on another machine.

import fc from 'fast-check';
import { Packr, Unpackr } from 'msgpackr';
import { isDeepStrictEqual } from 'node:util';
import {
  DEFAULT_MACHINE_CONFIG,
  LockMachine,
  type Applied,
  type Command,
  type Fence,
  type MachineConfig,
  type Result,
  type SessionCommand,
  type TxnCompare,
  type TxnOp,
} from '../../src/lockfsm/index.js';
import { InvariantChecker, type Universe } from './checker.js';

const snapshotReader = new Unpackr({ mapsAsObjects: true });
/** Plain msgpack, not encodeCommand: invalid commands must reach the log too. */
const entryWriter = new Packr({ useRecords: false });

export const UNIVERSE: Universe = {
  locks: ['a', 'b', 'c'],
  elections: ['e0', 'e1'],
  keys: ['k0', 'k1'],
  opKeys: ['o0', 'o1'],
};

/** Small bounds so that every limit is actually reached in short runs. */
export const WORKLOAD_CONFIG: MachineConfig = {
  ...DEFAULT_MACHINE_CONFIG,
  defaultLockDelayMs: 100,
  maxPendingResultsPerSession: 6,
  maxLocksPerSession: 4,
  maxValueBytes: 8,
  maxKvTotalBytes: 20,
  maxLedgerEntries: 3,
  maxTxnOps: 3,
  watchHistoryEntries: 5,
};

/** 0 own/current token, 1 an older token, 2 an arbitrary number, 3 another holder's token. */
type TokenPick = 0 | 1 | 2 | 3;

export type Step =
  | { k: 'open' }
  | { k: 'close'; s: number; ack: number }
  | { k: 'expire'; s: number }
  | { k: 'revoke'; s: number }
  | { k: 'acquire'; s: number; n: number; shared: boolean; limit: number; wait: boolean; delay: number; ack: number; fence: number }
  | { k: 'release'; s: number; n: number; tok: TokenPick; ack: number }
  | { k: 'cancel'; s: number; n: number; ack: number }
  | { k: 'delayEnd'; n: number; since: number }
  | { k: 'retry'; h: number }
  | { k: 'campaign'; s: number; e: number }
  | { k: 'proclaim'; s: number; e: number; tok: TokenPick }
  | { k: 'resign'; s: number; e: number; tok: TokenPick | 4 }
  | { k: 'put'; s: number; key: number; size: number; fence: number; ifRev: number; ack: number; eph: boolean }
  | { k: 'txn'; s: number; cmp: number[]; ok: number[]; bad: number[]; fence: number }
  | { k: 'delete'; s: number; key: number; fence: number; ifRev: number }
  | { k: 'begin'; s: number; op: number; n: number; tok: TokenPick; retry: boolean }
  | { k: 'complete'; s: number; op: number; n: number; tok: TokenPick; r: number }
  | { k: 'prune'; age: number; abandoned: boolean }
  | { k: 'clockBack' };

const s = fc.nat(7);
const n = fc.nat(2);
const ack = fc.nat(3);
const tok = fc.constantFrom<TokenPick>(0, 0, 0, 1, 2, 3);
/** 0..3: no fence; 4+: fence on lock (v % 3) with token pick. */
const fence = fc.nat(9);

/** [weight, step] pairs of the lock workload. */
const lockSteps: [number, fc.Arbitrary<Step>][] = [
  [4, fc.constant<Step>({ k: 'open' })],
  [1, fc.record({ k: fc.constant('close' as const), s, ack })],
  [1, fc.record({ k: fc.constant('expire' as const), s })],
  [1, fc.record({ k: fc.constant('revoke' as const), s })],
  [
    10,
    fc.record({
      k: fc.constant('acquire' as const),
      s,
      n,
      shared: fc.boolean(),
      limit: fc.nat(3),
      wait: fc.boolean(),
      delay: fc.nat(2),
      ack,
      fence: fc.nat(15), // fewer fenced acquires than other writes
    }),
  ],
  [6, fc.record({ k: fc.constant('release' as const), s, n, tok, ack })],
  [2, fc.record({ k: fc.constant('cancel' as const), s, n, ack })],
  [2, fc.record({ k: fc.constant('delayEnd' as const), n, since: fc.nat(2) })],
  [3, fc.record({ k: fc.constant('retry' as const), h: fc.nat(1000) })],
];

const otherSteps: [number, fc.Arbitrary<Step>][] = [
  [2, fc.record({ k: fc.constant('campaign' as const), s, e: fc.nat(1) })],
  [1, fc.record({ k: fc.constant('proclaim' as const), s, e: fc.nat(1), tok })],
  [1, fc.record({ k: fc.constant('resign' as const), s, e: fc.nat(1), tok: fc.constantFrom<TokenPick | 4>(0, 0, 1, 4) })],
  [2, fc.record({ k: fc.constant('put' as const), s, key: fc.nat(1), size: fc.nat(10), fence, ifRev: fc.nat(3), ack, eph: fc.boolean() })],
  [
    2,
    fc.record({
      k: fc.constant('txn' as const),
      s,
      // each number picks a compare (or write) kind and its key/lock; see txnCompare/txnOp
      cmp: fc.array(fc.nat(11), { maxLength: 3 }),
      ok: fc.array(fc.nat(7), { maxLength: 4 }),
      bad: fc.array(fc.nat(7), { maxLength: 2 }),
      fence,
    }),
  ],
  [1, fc.record({ k: fc.constant('delete' as const), s, key: fc.nat(1), fence, ifRev: fc.nat(3) })],
  [2, fc.record({ k: fc.constant('begin' as const), s, op: fc.nat(1), n, tok, retry: fc.boolean() })],
  [2, fc.record({ k: fc.constant('complete' as const), s, op: fc.nat(1), n, tok, r: fc.nat(255) })],
  [1, fc.record({ k: fc.constant('prune' as const), age: fc.nat(3), abandoned: fc.boolean() })],
  [1, fc.constant<Step>({ k: 'clockBack' })],
];

/** A mixed workload; `otherBias` > 1 draws elections, kv and ledger steps more often. */
export function steps(maxLength: number, otherBias = 1): fc.Arbitrary<Step[]> {
  const weighted = [
    ...lockSteps.map(([weight, arbitrary]) => ({ arbitrary, weight })),
    ...otherSteps.map(([weight, arbitrary]) => ({ arbitrary, weight: weight * otherBias })),
  ];
  return fc.array(fc.oneof(...weighted), { minLength: 1, maxLength, size: 'max' });
}

const START: readonly Step[] = [{ k: 'open' }, { k: 'open' }, { k: 'open' }];

export interface LogEntry {
  readonly index: number;
  readonly cmd: Command;
  readonly applied: Applied;
}

export class Workload {
  readonly m: LockMachine;
  readonly checker: InvariantChecker;
  readonly log: LogEntry[] = [];
  private index = 0;
  private clock = 1_000_000;
  private readonly sessions: number[] = [];
  private readonly seqs = new Map<number, number>();
  private readonly sent: { cmd: SessionCommand; result: Result }[] = [];
  private readonly grants = new Map<string, number[]>();

  /** With `localFile`: the machine starts with those settings (a node's file) and the log
   *  starts, as a leader makes every new log start, with a configure entry seeding `config`. */
  constructor(
    private readonly viaBytes: boolean,
    config: MachineConfig = WORKLOAD_CONFIG,
    localFile?: MachineConfig,
  ) {
    this.m = new LockMachine(localFile ?? config);
    this.checker = new InvariantChecker(UNIVERSE, config.defaultLockDelayMs);
    if (localFile !== undefined) {
      const cmd: Command = { type: 'configure', settings: config, initial: true };
      this.checker.check(this.m, this.index + 1, cmd, this.apply(cmd), true);
    }
  }

  /** Runs the steps after opening three sessions (so most steps have someone to act for). */
  run(all: readonly Step[]): void {
    for (const step of [...START, ...all]) this.step(step);
  }

  step(step: Step): void {
    if (step.k === 'retry') {
      if (this.sent.length === 0) return;
      const original = this.sent[step.h % this.sent.length]!;
      const before = this.stateWithoutIndex();
      const applied = this.apply(original.cmd);
      const replayed = isDeepStrictEqual(applied.result, original.result);
      const refused =
        applied.result.type === 'error' && ['STALE_SEQUENCE', 'UNKNOWN_SESSION'].includes(applied.result.code);
      // A refused original (answer not kept) may legitimately run now, as a new request.
      const wasNotKept = original.result.type === 'error' && original.result.code === 'LIMIT_EXCEEDED';
      if (!wasNotKept && !replayed && !refused) {
        throw new Error(`retry of ${JSON.stringify(original.cmd)} answered ${JSON.stringify(applied.result)}, first ${JSON.stringify(original.result)}`);
      }
      if (replayed || refused) {
        const after = this.stateWithoutIndex();
        if (!isDeepStrictEqual(before, after)) throw new Error(`a retry changed the state: ${JSON.stringify(original.cmd)}`);
      }
      this.checker.check(this.m, this.index, original.cmd, applied, !replayed && !refused);
      return;
    }
    const cmd = this.resolve(step);
    const applied = this.apply(cmd);
    if ('seq' in cmd) this.sent.push({ cmd, result: applied.result });
    this.checker.check(this.m, this.index, cmd, applied, true);
  }

  private apply(cmd: Command): Applied {
    const index = ++this.index;
    const applied = this.viaBytes ? this.m.applyRaw(index, entryWriter.pack(cmd)) : this.m.apply(index, cmd);
    for (const e of applied.events) {
      if (e.type === 'granted') this.grants.set(e.name, [...(this.grants.get(e.name) ?? []), e.token]);
      if (e.type === 'sessionOpened') this.sessions.push(e.session);
    }
    this.log.push({ index, cmd, applied });
    return applied;
  }

  /** The snapshot minus appliedIndex: what a retry must leave untouched. */
  private stateWithoutIndex(): unknown {
    const body = snapshotReader.unpack(this.m.snapshot()) as Record<string, unknown>;
    delete body.appliedIndex;
    return body;
  }

  /** Mostly an open session; sometimes any session ever opened (maybe ended), or none. */
  private session(i: number): number {
    const open = [...this.m.sessionLeases()].map((l) => l.session);
    if (i < 6 && open.length > 0) return open[i % open.length]!;
    if (i === 6 && this.sessions.length > 0) return this.sessions[this.index % this.sessions.length]!;
    return open.length > 0 && i === 7 ? open[0]! : 999;
  }

  /** session/seq/ackedSeq; without an ack pick, every third request acknowledges seq - 2. */
  private scoped(sessionPick: number, ackPick?: number): { session: number; seq: number; ackedSeq?: number } {
    const session = this.session(sessionPick);
    const seq = (this.seqs.get(session) ?? 0) + 1;
    this.seqs.set(session, seq);
    const pick = ackPick ?? (seq % 3 === 0 ? 2 : 0);
    const ackedSeq = pick === 1 ? seq - 1 : pick === 2 ? seq - 2 : undefined;
    return ackedSeq !== undefined && ackedSeq >= 0 ? { session, seq, ackedSeq } : { session, seq };
  }

  private token(lock: string, session: number, pick: TokenPick): number {
    const info = this.m.lock(lock);
    const mine = info?.holders.find((h) => h.session === session)?.token;
    const seen = this.grants.get(lock) ?? [];
    switch (pick) {
      case 0:
        return mine ?? seen[seen.length - 1] ?? 1;
      case 1:
        return seen.length > 1 ? seen[seen.length - 2]! : 1;
      case 2:
        return (this.index % 17) + 1;
      case 3:
        return info?.holders.find((h) => h.session !== session)?.token ?? mine ?? 1;
    }
  }

  /** pick 0..3: no fence; 4..9: a fence, mostly on a lock the session holds. */
  private fence(pick: number, session: number): Fence | undefined {
    if (pick < 4) return undefined;
    const tokenPick = ([0, 0, 1, 3] as const)[pick % 4]!;
    const lock = this.lockFor(session, pick, tokenPick);
    return { lock, token: this.token(lock, session, tokenPick) };
  }

  /** With the own-token pick, a lock the session holds (when it holds any). */
  lockFor(session: number, n: number, tokenPick: TokenPick): string {
    const held = this.m.session(session)?.locks ?? [];
    return tokenPick === 0 && held.length > 0 ? held[n % held.length]!.name : UNIVERSE.locks[n % 3]!;
  }

  private epoch(election: string, pick: TokenPick): number {
    const info = this.m.election(election);
    return pick === 0 ? (info?.token ?? 1) : pick === 1 ? Math.max(1, (info?.token ?? 2) - 1) : (this.index % 13) + 1;
  }

  private resolve(step: Exclude<Step, { k: 'retry' }>): Command {
    this.clock += 10;
    switch (step.k) {
      case 'open':
        return { type: 'openSession', ttlMs: 5000 };
      case 'close':
        return { type: 'closeSession', ...this.scoped(step.s, step.ack) };
      case 'expire':
        return { type: 'expireSession', session: this.session(step.s) };
      case 'revoke':
        return { type: 'revokeSession', session: this.session(step.s), reason: `r${this.index}` };
      case 'acquire': {
        const base = this.scoped(step.s, step.ack);
        const fence = this.fence(step.fence, base.session);
        return {
          type: 'acquire',
          ...base,
          name: UNIVERSE.locks[step.n]!,
          mode: step.shared ? 'shared' : 'exclusive',
          wait: step.wait,
          ...(step.shared && step.limit > 0 ? { limit: step.limit } : {}),
          ...(step.delay === 2 ? {} : { lockDelayMs: step.delay * 50 }),
          ...(fence ? { fence } : {}),
        };
      }
      case 'release': {
        const base = this.scoped(step.s, step.ack);
        // mostly a lock the session holds, so releases succeed often enough to matter
        const name = this.lockFor(base.session, step.n, step.tok);
        return { type: 'release', ...base, name, token: this.token(name, base.session, step.tok) };
      }
      case 'cancel': {
        const base = this.scoped(step.s, step.ack);
        const waits = this.m.session(base.session)?.waits ?? [];
        const name = step.n < 2 && waits.length > 0 ? waits[step.n % waits.length]!.name : UNIVERSE.locks[step.n]!;
        return { type: 'cancelWait', ...base, name };
      }
      case 'delayEnd': {
        const delayed = [...this.m.pendingLockDelays()];
        const name = step.n < 2 && delayed.length > 0 ? delayed[step.n % delayed.length]!.name : UNIVERSE.locks[step.n]!;
        const since = this.m.lock(name)?.lockDelay?.since;
        if (step.since === 2 || since === undefined) return { type: 'lockDelayElapsed', name };
        return { type: 'lockDelayElapsed', name, since: step.since === 0 ? since : Math.max(1, since - 1) };
      }
      case 'campaign':
        return { type: 'campaign', ...this.scoped(step.s), election: UNIVERSE.elections[step.e]!, value: `v${this.index}` };
      case 'proclaim': {
        const election = UNIVERSE.elections[step.e]!;
        return { type: 'proclaim', ...this.scoped(step.s), election, token: this.epoch(election, step.tok), value: `p${this.index}` };
      }
      case 'resign': {
        const election = UNIVERSE.elections[step.e]!;
        const base = this.scoped(step.s);
        return step.tok === 4
          ? { type: 'resign', ...base, election }
          : { type: 'resign', ...base, election, token: this.epoch(election, step.tok) };
      }
      case 'put': {
        const base = this.scoped(step.s, step.ack);
        const fence = this.fence(step.fence, base.session);
        const key = UNIVERSE.keys[step.key]!;
        return {
          type: 'put',
          ...base,
          key,
          value: new Uint8Array(step.size).fill(this.index & 0xff),
          ...(fence ? { fence } : {}),
          ...this.ifRevision(key, step.ifRev),
          ...(step.eph ? { ephemeral: true } : {}),
        };
      }
      case 'txn': {
        const base = this.scoped(step.s);
        const fence = this.fence(step.fence, base.session);
        return {
          type: 'txn',
          ...base,
          compare: step.cmp.map((c) => this.txnCompare(c, base.session)),
          success: this.txnOps(step.ok),
          failure: this.txnOps(step.bad),
          ...(fence ? { fence } : {}),
        };
      }
      case 'delete': {
        const base = this.scoped(step.s);
        const fence = this.fence(step.fence, base.session);
        const key = UNIVERSE.keys[step.key]!;
        return { type: 'delete', ...base, key, ...(fence ? { fence } : {}), ...this.ifRevision(key, step.ifRev) };
      }
      case 'begin': {
        const base = this.scoped(step.s);
        const lock = this.opLock(UNIVERSE.opKeys[step.op]!, base.session, step.n, step.tok);
        return {
          type: 'beginOp',
          ...base,
          opKey: UNIVERSE.opKeys[step.op]!,
          fence: { lock, token: this.token(lock, base.session, step.tok) },
          at: this.clock,
          ...(step.retry ? { retry: true } : {}),
        };
      }
      case 'complete': {
        const base = this.scoped(step.s);
        const lock = this.opLock(UNIVERSE.opKeys[step.op]!, base.session, step.n, step.tok);
        return {
          type: 'completeOp',
          ...base,
          opKey: UNIVERSE.opKeys[step.op]!,
          fence: { lock, token: this.token(lock, base.session, step.tok) },
          result: new Uint8Array([step.r, this.index & 0xff]),
          at: this.clock,
        };
      }
      case 'prune':
        return {
          type: 'pruneOps',
          olderThan: this.clock - step.age * 100,
          ...(step.abandoned ? { abandonedOlderThan: this.clock - step.age * 200 } : {}),
        };
      case 'clockBack':
        this.clock -= 500; // a new leader whose wall clock is behind
        return { type: 'pruneOps', olderThan: 0, max: 0 };
    }
  }

  /** 0-3 the key's revision (eq now, eq other, gt, lt), 4-5 absent, 6-11 a lock compare. */
  private txnCompare(pick: number, session: number): TxnCompare {
    const key = UNIVERSE.keys[pick % 2]!;
    const current = this.m.kvGet(key)?.revision ?? 0;
    if (pick < 4) {
      const op = (['eq', 'eq', 'gt', 'lt'] as const)[pick]!;
      return { target: 'revision', key, op, revision: pick === 1 ? current + 1 : Math.max(0, current - (pick === 2 ? 1 : -1)) };
    }
    if (pick < 6) return { target: 'absent', key };
    const tokenPick = ([0, 0, 0, 1, 2, 3] as const)[pick - 6]!;
    const lock = this.lockFor(session, pick, tokenPick);
    return { target: 'lock', lock, token: this.token(lock, session, tokenPick) };
  }

  /** A branch: each pick a put (small, sometimes ephemeral) or delete of a key; a key repeated
   *  (which the machine refuses) now and then. */
  private txnOps(picks: readonly number[]): TxnOp[] {
    return picks.map((p): TxnOp => {
      const key = UNIVERSE.keys[p % 2]!;
      if (p < 2) return { op: 'delete', key };
      return { op: 'put', key, value: new Uint8Array(p).fill(this.index & 0xff), ...(p >= 6 ? { ephemeral: true } : {}) };
    });
  }

  /** The op's own lock when it has one (own-token pick), else a lock as for fences. */
  private opLock(opKey: string, session: number, n: number, tokenPick: TokenPick): string {
    const bound = this.m.op(opKey)?.lock;
    return tokenPick === 0 && bound !== undefined && n !== 2 ? bound : this.lockFor(session, n, tokenPick);
  }

  private ifRevision(key: string, pick: number): { ifRevision?: number } {
    if (pick === 0 || pick === 1) return {};
    const current = this.m.kvGet(key)?.revision ?? 0;
    return { ifRevision: pick === 2 ? current : current + 1 };
  }
}
