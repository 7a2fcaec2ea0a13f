// The clients of the lock service in the Raft simulator: each proposal is a random lock
// command, encoded with encodeCommand, resolved against what the cluster has told them so
// far (the sessions, grants, waits, lock-delays and election epochs of the first node to
// apply each entry: session ids and tokens are log indexes, known only once applied).
// About one proposal in eight re-sends an earlier one byte for byte: the same (session, seq)
// again, the way a client retries after a timeout, to exercise the exactly-once layer
// under the simulator's lost, duplicated and reordered deliveries.
import { isDeepStrictEqual } from 'node:util';
import {
  DEFAULT_MACHINE_CONFIG,
  encodeCommand,
  type Applied,
  type Command,
  type Fence,
  type MachineConfig,
} from '../../src/lockfsm/index.js';
import type { Universe } from '../lockfsm/checker.js';
import type { Prng } from '../support/prng.js';

/** The names every command draws from: few, so that clients contend. */
export const LOCK_UNIVERSE: Universe = {
  locks: ['a', 'b', 'c'],
  elections: ['e0', 'e1'],
  keys: ['k0', 'k1'],
  opKeys: ['o0', 'o1'],
};

/** Small bounds, so that the limits are reached within a short run. */
export const LOCK_SIM_CONFIG: MachineConfig = {
  ...DEFAULT_MACHINE_CONFIG,
  defaultLockDelayMs: 100,
  maxPendingResultsPerSession: 8,
  maxLocksPerSession: 4,
  maxValueBytes: 8,
  maxKvTotalBytes: 24,
  maxLedgerEntries: 3,
};

type Kind =
  | 'open'
  | 'close'
  | 'expire'
  | 'acquire'
  | 'release'
  | 'cancel'
  | 'delayEnd'
  | 'campaign'
  | 'resign'
  | 'put'
  | 'begin'
  | 'complete'
  | 'prune'
  | 'retry';

/** Relative weights of the kinds of proposal. */
const MIX: readonly [Kind, number][] = [
  ['open', 3],
  ['close', 1],
  ['expire', 1],
  ['acquire', 12],
  ['release', 8],
  ['cancel', 2],
  ['delayEnd', 2],
  ['campaign', 2],
  ['resign', 2],
  ['put', 2],
  ['begin', 2],
  ['complete', 2],
  ['prune', 1],
  ['retry', 6],
];
const MIX_TOTAL = MIX.reduce((a, [, w]) => a + w, 0);

/** How many earlier session commands a client may retry. */
const RETRY_WINDOW = 48;

export class LockClients {
  /** Sessions the cluster opened and has not ended, and those it ended. */
  private readonly open = new Set<number>();
  private readonly ended: number[] = [];
  private readonly seqs = new Map<number, number>();
  /** session -> lock -> token of its grant. */
  private readonly holds = new Map<number, Map<string, number>>();
  private readonly waits = new Map<number, Set<string>>();
  /** Every token each lock was granted with, oldest first. */
  private readonly grants = new Map<string, number[]>();
  /** Locks in lock-delay, with the `since` of the delay. */
  private readonly delays = new Map<string, number>();
  private readonly epochs = new Map<string, { session: number; token: number }>();
  private readonly sent: Uint8Array[] = [];
  /** The proposing leader's wall clock for the ledger's `at` stamps. */
  private clock = 1_000_000;
  proposed = 0;
  retries = 0;

  constructor(private readonly config: MachineConfig = LOCK_SIM_CONFIG) {}

  /** The bytes of the next proposal. */
  next(rng: Prng): Uint8Array {
    this.proposed++;
    this.clock += rng.range(0, 20);
    const kind = this.open.size === 0 && !rng.chance(0.1) ? 'open' : this.kind(rng);
    if (kind === 'retry' && this.sent.length > 0) {
      this.retries++;
      return rng.pick(this.sent);
    }
    const cmd = this.command(kind === 'retry' ? 'acquire' : kind, rng);
    const bytes = encodeCommand(cmd, this.config);
    if ('seq' in cmd) {
      this.sent.push(bytes);
      if (this.sent.length > RETRY_WINDOW) this.sent.shift();
    }
    return bytes;
  }

  /** What the first node to apply an entry answered: the clients learn ids and tokens. */
  learn(applied: Applied): void {
    for (const e of applied.events) {
      switch (e.type) {
        case 'sessionOpened':
          this.open.add(e.session);
          break;
        case 'sessionClosed':
        case 'sessionExpired':
          this.open.delete(e.session);
          this.ended.push(e.session);
          this.holds.delete(e.session);
          this.waits.delete(e.session);
          break;
        case 'granted': {
          this.map(this.holds, e.session).set(e.name, e.token);
          this.waits.get(e.session)?.delete(e.name);
          const seen = this.grants.get(e.name) ?? [];
          seen.push(e.token);
          if (seen.length > 8) seen.shift();
          this.grants.set(e.name, seen);
          break;
        }
        case 'queued':
          this.set(this.waits, e.session).add(e.name);
          break;
        case 'released':
          this.holds.get(e.session)?.delete(e.name);
          break;
        case 'lockDelayStarted':
          this.delays.set(e.name, e.since);
          break;
        case 'lockDelayEnded':
          this.delays.delete(e.name);
          break;
        case 'electionChanged':
          if (e.leader === null || e.token === null) this.epochs.delete(e.election);
          else this.epochs.set(e.election, { session: e.leader, token: e.token });
          break;
        case 'kvChanged':
          break;
      }
    }
  }

  /** A cancelled wait leaves no event; the clients drop it when the cancel succeeds. */
  learnCancel(cmd: Command, applied: Applied): void {
    if (cmd.type === 'cancelWait' && isDeepStrictEqual(applied.result, { type: 'ok' })) this.waits.get(cmd.session)?.delete(cmd.name);
  }

  private kind(rng: Prng): Kind {
    let x = rng.int(MIX_TOTAL);
    for (const [k, w] of MIX) {
      if (x < w) return k;
      x -= w;
    }
    return 'acquire';
  }

  private map(m: Map<number, Map<string, number>>, s: number): Map<string, number> {
    let v = m.get(s);
    if (!v) m.set(s, (v = new Map()));
    return v;
  }

  private set(m: Map<number, Set<string>>, s: number): Set<string> {
    let v = m.get(s);
    if (!v) m.set(s, (v = new Set()));
    return v;
  }

  /** Mostly an open session; now and then one that ended, or one that never existed. */
  private session(rng: Prng): number {
    const x = rng.float();
    if (x < 0.9 && this.open.size > 0) return rng.pick([...this.open]);
    if (x < 0.97 && this.ended.length > 0) return rng.pick(this.ended);
    return 999_999;
  }

  /** session, seq and (every third request) an acknowledgement of seq - 2. */
  private scoped(rng: Prng): { session: number; seq: number; ackedSeq?: number } {
    const session = this.session(rng);
    const seq = (this.seqs.get(session) ?? 0) + 1;
    this.seqs.set(session, seq);
    if (seq > 2 && (seq % 3 === 0 || rng.chance(0.1))) return { session, seq, ackedSeq: seq - 2 };
    return { session, seq };
  }

  /** Mostly a lock the session holds with its token; else another holder's, an old or a made-up token. */
  private heldLock(session: number, rng: Prng): Fence {
    const held = [...(this.holds.get(session) ?? new Map<string, number>())];
    if (held.length > 0 && rng.chance(0.75)) {
      const [lock, token] = rng.pick(held);
      return { lock, token };
    }
    const lock = rng.pick(LOCK_UNIVERSE.locks);
    const seen = this.grants.get(lock) ?? [];
    return { lock, token: seen.length > 0 && rng.chance(0.7) ? rng.pick(seen) : rng.range(1, 500) };
  }

  private command(kind: Exclude<Kind, 'retry'>, rng: Prng): Command {
    switch (kind) {
      case 'open':
        return { type: 'openSession', ttlMs: 5_000 };
      case 'close':
        return { type: 'closeSession', ...this.scoped(rng) };
      case 'expire':
        return { type: 'expireSession', session: this.session(rng) };
      case 'acquire': {
        const base = this.scoped(rng);
        const shared = rng.chance(0.4);
        const delay = rng.pick([undefined, 0, 50]);
        return {
          type: 'acquire',
          ...base,
          name: rng.pick(LOCK_UNIVERSE.locks),
          mode: shared ? 'shared' : 'exclusive',
          wait: rng.chance(0.6),
          ...(shared && rng.chance(0.7) ? { limit: rng.range(1, 3) } : {}),
          ...(delay === undefined ? {} : { lockDelayMs: delay }),
          ...(rng.chance(0.1) ? { fence: this.heldLock(base.session, rng) } : {}),
        };
      }
      case 'release': {
        const base = this.scoped(rng);
        const { lock, token } = this.heldLock(base.session, rng);
        return { type: 'release', ...base, name: lock, token };
      }
      case 'cancel': {
        const base = this.scoped(rng);
        const waits = [...(this.waits.get(base.session) ?? [])];
        const name = waits.length > 0 && rng.chance(0.8) ? rng.pick(waits) : rng.pick(LOCK_UNIVERSE.locks);
        return { type: 'cancelWait', ...base, name };
      }
      case 'delayEnd': {
        const delayed = [...this.delays];
        if (delayed.length === 0 || rng.chance(0.2)) return { type: 'lockDelayElapsed', name: rng.pick(LOCK_UNIVERSE.locks) };
        const [name, since] = rng.pick(delayed);
        // Mostly the current delay; sometimes a late timer of an older one.
        return { type: 'lockDelayElapsed', name, since: rng.chance(0.8) ? since : Math.max(1, since - rng.range(1, 5)) };
      }
      case 'campaign':
        return { type: 'campaign', ...this.scoped(rng), election: rng.pick(LOCK_UNIVERSE.elections), value: `v${this.proposed}` };
      case 'resign': {
        const base = this.scoped(rng);
        const election = rng.pick(LOCK_UNIVERSE.elections);
        const epoch = this.epochs.get(election);
        if (rng.chance(0.3)) return { type: 'resign', ...base, election };
        return { type: 'resign', ...base, election, token: epoch && rng.chance(0.8) ? epoch.token : rng.range(1, 500) };
      }
      case 'put': {
        const base = this.scoped(rng);
        return {
          type: 'put',
          ...base,
          key: rng.pick(LOCK_UNIVERSE.keys),
          value: new Uint8Array(rng.range(0, 6)).fill(this.proposed & 0xff),
          fence: this.heldLock(base.session, rng),
        };
      }
      case 'begin': {
        const base = this.scoped(rng);
        return {
          type: 'beginOp',
          ...base,
          opKey: rng.pick(LOCK_UNIVERSE.opKeys),
          fence: this.heldLock(base.session, rng),
          at: this.clock,
          ...(rng.chance(0.3) ? { retry: true } : {}),
        };
      }
      case 'complete': {
        const base = this.scoped(rng);
        return {
          type: 'completeOp',
          ...base,
          opKey: rng.pick(LOCK_UNIVERSE.opKeys),
          fence: this.heldLock(base.session, rng),
          result: new Uint8Array([rng.int(256), this.proposed & 0xff]),
          at: this.clock,
        };
      }
      case 'prune':
        return { type: 'pruneOps', olderThan: this.clock - rng.range(0, 400), ...(rng.chance(0.5) ? { abandonedOlderThan: this.clock - 800 } : {}) };
    }
  }
}
