// The real lock machine on every simulated node, and the application-level checks over it:
//  - every node that applies index i answers the same result and events (compared in full);
//  - on every node after every entry: at most one exclusive holder per lock, never exclusive
//    with shared, shared holders within their limit, grant tokens strictly increasing;
//  - the history of first applications goes through the lockfsm InvariantChecker (FIFO,
//    fences, lock-delays, the ledger, the machine's reads against the history);
//  - a retried (session, seq) gets its first answer back and changes nothing;
//  - every snapshot a node takes, restores or ends with equals, byte for byte, the snapshot
//    of a reference machine that applied every entry from the first (never restored).
import { isDeepStrictEqual } from 'node:util';
import { Unpackr } from 'msgpackr';
import { decodeCommand, LockMachine, type Applied, type Command, type MachineConfig, type Result } from '../../src/lockfsm/index.js';
import type { Entry, NodeId } from '../../src/raft/index.js';
import { InvariantChecker } from '../lockfsm/checker.js';
import type { SimMachine, SimMachines } from './cluster.js';
import { LOCK_UNIVERSE, type LockClients } from './lock-workload.js';

const snapshotReader = new Unpackr({ mapsAsObjects: true });
const text = new TextEncoder();
const NEWLINE = 0x0a;

/** A stable text of what an entry answered: result and events, byte arrays in hex. */
export function outputText(a: Applied): string {
  return JSON.stringify(a, (_k, v: unknown) => (v instanceof Uint8Array ? `0x${Buffer.from(v).toString('hex')}` : v));
}

function mix(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The machine's state minus appliedIndex: what a replayed or refused retry must leave alone. */
function stateWithoutIndex(m: LockMachine): unknown {
  const body = snapshotReader.unpack(m.snapshot()) as Record<string, unknown>;
  delete body.appliedIndex;
  return body;
}

function refusedRetry(r: Result): boolean {
  return r.type === 'error' && (r.code === 'STALE_SEQUENCE' || r.code === 'UNKNOWN_SESSION');
}

export interface LockCheckStats {
  commands: number;
  retriesReplayed: number;
  retriesRefused: number;
  snapshotsCompared: number;
  referenceRebuilds: number;
}

interface PendingCompare {
  node: NodeId;
  index: number;
  bytes: Uint8Array;
  how: string;
}

export class LockCheck {
  /** Where violations go: the simulator's checker, so that they name seed and step. */
  fail: (msg: string) => never = (msg) => {
    throw new Error(msg);
  };
  readonly stats: LockCheckStats = { commands: 0, retriesReplayed: 0, retriesRefused: 0, snapshotsCompared: 0, referenceRebuilds: 0 };
  /** The committed log as first applied: an entry's bytes, or null for a no-op or conf change. */
  private readonly log: (Uint8Array | null)[] = [null];
  /** What index i answered on the first node to apply it. */
  private readonly outputs: string[] = [''];
  private readonly history: InvariantChecker;
  /** First answer of each "session:seq". */
  private readonly answers = new Map<string, Result>();
  /** Applied every entry from index 1 and was never restored; advanced only when asked. */
  private reference: LockMachine;
  private readonly referenceAt = new Map<number, Uint8Array>();
  private pending: PendingCompare[] = [];

  constructor(
    readonly config: MachineConfig,
    private readonly clients: LockClients,
  ) {
    this.history = new InvariantChecker(LOCK_UNIVERSE, config.defaultLockDelayMs);
    this.reference = new LockMachine(config);
  }

  /** The factory the simulator builds each node's machine with. */
  machines(): SimMachines {
    return {
      create: (node) => new LockNodeMachine(node, this, new LockMachine(this.nodeConfig(node)), 0),
      restore: (node, data) => LockNodeMachine.restore(node, this, data, this.nodeConfig(node)),
    };
  }

  /** The bounds `node` runs with: the same everywhere (the tests of the checks break that). */
  nodeConfig(_node: NodeId): MachineConfig {
    return this.config;
  }

  /** Index of the highest entry any node applied. */
  get lastApplied(): number {
    return this.log.length - 1;
  }

  onSkip(node: NodeId, index: number): void {
    if (index === this.log.length) {
      this.log.push(null);
      this.outputs.push('skip');
    } else if (index > this.log.length) {
      this.fail(`${node} applied ${index} before anyone applied ${this.log.length}`);
    } else if (this.log[index] !== null) {
      this.fail(`${node} skipped ${index}, which another node applied as a command`);
    }
  }

  /** Before `node` applies a command: the state to compare with if it turns out a retry. */
  before(index: number, m: LockMachine, data: Uint8Array): unknown {
    if (index !== this.log.length) return undefined;
    const cmd = decodeCommand(data, this.config);
    if (cmd.type === 'error' || !('seq' in cmd) || !this.answers.has(`${cmd.session}:${cmd.seq}`)) return undefined;
    return stateWithoutIndex(m);
  }

  onApply(node: NodeId, m: LockMachine, index: number, data: Uint8Array, applied: Applied, out: string, before: unknown): void {
    if (index < this.log.length) {
      // Another node applied it first: the same entry must give the same answer.
      const first = this.log[index];
      if (first === null || first === undefined || Buffer.compare(first, data) !== 0) {
        this.fail(`State Machine Safety: ${node} applied another entry at ${index}`);
      }
      if (this.outputs[index] !== out) {
        this.fail(`State Machine Safety (application): ${node} answered at ${index}\n  ${out}\n  but another node answered\n  ${this.outputs[index]}`);
      }
      return;
    }
    if (index > this.log.length) this.fail(`${node} applied ${index} before anyone applied ${this.log.length}`);
    this.log.push(data);
    this.outputs.push(out);
    this.onFirstApply(node, m, index, data, applied, before);
  }

  /** The first application of an entry: the history the invariant checker follows. */
  private onFirstApply(node: NodeId, m: LockMachine, index: number, data: Uint8Array, applied: Applied, before: unknown): void {
    const cmd = decodeCommand(data, this.config);
    if (cmd.type === 'error') {
      // Not a command (the simulator's liveness probe): answered with an error, nothing changes.
      if (applied.result.type !== 'error' || applied.events.length > 0) this.fail(`${node}: bad bytes at ${index} changed something`);
      return;
    }
    this.stats.commands++;
    const fresh = this.classifyRetry(node, m, index, cmd, applied, before);
    try {
      this.history.check(m, index, cmd, applied, fresh);
    } catch (err) {
      this.fail(`lock invariant at ${index} on ${node}: ${err instanceof Error ? err.message : String(err)}\n  command ${JSON.stringify(cmd)}\n  answer ${outputText(applied)}`);
    }
    this.clients.learn(applied);
    this.clients.learnCancel(cmd, applied);
  }

  /** False when the answer is a stored or refused one (nothing may change). */
  private classifyRetry(node: NodeId, m: LockMachine, index: number, cmd: Command, applied: Applied, before: unknown): boolean {
    if (!('seq' in cmd)) return true;
    const key = `${cmd.session}:${cmd.seq}`;
    const original = this.answers.get(key);
    const refused = refusedRetry(applied.result);
    if (original === undefined) {
      this.answers.set(key, applied.result);
      return !refused;
    }
    const replayed = isDeepStrictEqual(applied.result, original);
    // An answer that was never kept (over the pending-answer bound) may run now, as new.
    const notKept = original.type === 'error' && original.code === 'LIMIT_EXCEEDED';
    if (!replayed && !refused && !notKept) {
      this.fail(`Exactly-once: ${node} answered the retry of ${key} at ${index} with ${JSON.stringify(applied.result)}, first ${JSON.stringify(original)}`);
    }
    if (replayed || refused) {
      if (replayed) this.stats.retriesReplayed++;
      else this.stats.retriesRefused++;
      if (before !== undefined && !isDeepStrictEqual(before, stateWithoutIndex(m))) {
        this.fail(`Exactly-once: the retry of ${key} at ${index} on ${node} changed the state`);
      }
      return false;
    }
    this.answers.set(key, applied.result);
    return true;
  }

  /** Every node after every entry: the lock invariants on its own reads. */
  checkLocks(node: NodeId, m: LockMachine, index: number): void {
    for (const name of LOCK_UNIVERSE.locks) {
      const info = m.lock(name);
      if (!info) continue;
      const exclusive = info.holders.filter((h) => h.mode === 'exclusive').length;
      if (exclusive > 1) this.fail(`${node}: ${exclusive} exclusive holders of ${name} after ${index}`);
      if (exclusive === 1 && info.holders.length > 1) this.fail(`${node}: ${name} held exclusive and shared after ${index}`);
      if (info.limit !== null && info.holders.length > info.limit) {
        this.fail(`${node}: ${info.holders.length} shared holders of ${name} over its limit ${info.limit} after ${index}`);
      }
    }
  }

  /** A snapshot `node` holds at `index`: compared with the reference's (in batches, in index order). */
  compareSnapshot(node: NodeId, index: number, bytes: Uint8Array, how: string): void {
    this.pending.push({ node, index, bytes, how });
    if (this.pending.length >= 24) this.flush();
  }

  /** Runs the pending snapshot comparisons; the reference moves forward only, rebuilt when asked for the past. */
  flush(): void {
    const batch = this.pending.sort((a, b) => a.index - b.index);
    this.pending = [];
    for (const p of batch) {
      let ref = this.referenceAt.get(p.index);
      if (ref === undefined) {
        if (p.index > this.lastApplied) this.fail(`${p.node} holds a snapshot at ${p.index}, beyond every applied entry (${this.lastApplied})`);
        if (p.index < this.reference.appliedIndex) {
          this.reference = new LockMachine(this.config);
          this.stats.referenceRebuilds++;
        }
        for (let i = this.reference.appliedIndex + 1; i <= p.index; i++) {
          const data = this.log[i];
          if (data === null || data === undefined) this.reference.skip(i);
          else this.reference.applyRaw(i, data);
        }
        ref = this.reference.snapshot();
        this.referenceAt.set(p.index, ref);
      }
      this.stats.snapshotsCompared++;
      if (Buffer.compare(ref, p.bytes) !== 0) {
        this.fail(`Snapshot: ${p.node}'s machine ${p.how} at ${p.index} differs from one that applied every entry`);
      }
    }
  }
}

/** One node's LockMachine, with a running hash of its answers (the simulator's digest). */
export class LockNodeMachine implements SimMachine {
  /** The last grant token per lock seen on this node (tokens only grow). */
  private readonly lastToken = new Map<string, number>();

  constructor(
    readonly node: NodeId,
    private readonly check: LockCheck,
    readonly m: LockMachine,
    private hash: number,
  ) {}

  get index(): number {
    return this.m.appliedIndex;
  }

  /** Data is `<hash>\n` then the lockfsm snapshot: the hash lets a restored node keep its digest. */
  static restore(node: NodeId, check: LockCheck, data: Uint8Array, config: MachineConfig): LockNodeMachine {
    const nl = data.indexOf(NEWLINE);
    const hash = Number(new TextDecoder().decode(data.subarray(0, nl)));
    const bytes = data.subarray(nl + 1);
    const m = LockMachine.restore(bytes, config);
    const back = m.snapshot();
    if (Buffer.compare(back, bytes) !== 0) check.fail(`Snapshot: ${node} restored at ${m.appliedIndex} and snapshots other bytes`);
    check.compareSnapshot(node, m.appliedIndex, bytes, 'restored');
    const restored = new LockNodeMachine(node, check, m, hash);
    for (const l of m.locks()) for (const h of l.holders) restored.lastToken.set(l.name, Math.max(h.token, restored.lastToken.get(l.name) ?? 0));
    return restored;
  }

  apply(e: Entry): void {
    if (e.type !== 'normal' || e.data.length === 0) {
      // A leader's no-op or a membership change: the machine only moves its index.
      this.m.skip(e.index);
      this.hash = mix(this.hash, `${e.index}|skip`);
      this.check.onSkip(this.node, e.index);
      return;
    }
    const before = this.check.before(e.index, this.m, e.data);
    const applied = this.m.applyRaw(e.index, e.data);
    const out = outputText(applied);
    this.hash = mix(this.hash, `${e.index}|${out}`);
    this.check.onApply(this.node, this.m, e.index, e.data, applied, out, before);
    for (const ev of applied.events) {
      if (ev.type !== 'granted') continue;
      const last = this.lastToken.get(ev.name) ?? 0;
      // One entry may grant several shared holders, all with the entry's index as token.
      if (ev.token < last || (ev.token === last && last !== e.index)) this.check.fail(`${this.node}: token of ${ev.name} went from ${last} to ${ev.token} at ${e.index}`);
      this.lastToken.set(ev.name, ev.token);
    }
    this.check.checkLocks(this.node, this.m, e.index);
  }

  digest(): string {
    return this.hash.toString(16);
  }

  serialize(): Uint8Array {
    const bytes = this.m.snapshot();
    this.check.compareSnapshot(this.node, this.m.appliedIndex, bytes, 'snapshotted');
    const head = text.encode(`${this.hash}\n`);
    const out = new Uint8Array(head.length + bytes.length);
    out.set(head);
    out.set(bytes, head.length);
    return out;
  }
}
