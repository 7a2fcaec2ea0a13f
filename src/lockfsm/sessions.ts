// Sessions (leases) and their exactly-once bookkeeping (Raft thesis §6.3).
//
// A session is identified by the index of the entry that opened it. For each session the
// machine keeps the answers of the requests the client has not yet acknowledged
// (seq > ackedSeq) so that a retried request gets the first answer and changes nothing.
// Requests may arrive out of order (several in flight): any seq above the acknowledged
// horizon that has no stored answer is new.
//
// The answers are a small array, not a Map: it holds at most maxPendingResultsPerSession
// entries and usually one or two (clients acknowledge as they go), and an array costs far
// less memory per session and no rehashing as answers come and go.

import { invalidArgument, limitExceeded, machineError } from './errors.js';
import { commandDigest } from './digest.js';
import { fail, readArray, readEach, readIndex, readObject, readString, readUint } from './snapshot-reader.js';
import type { MachineConfig } from './config.js';
import type { CommandType, MachineError, Result, SessionCommand } from './types.js';
import type { SnapshotRows } from './snapshot.js';

export interface StoredAnswer {
  readonly seq: number;
  /** The command type that produced it: a seq reused for another command is refused. */
  readonly command: CommandType;
  /** commandDigest of the command: a seq reused for another command is refused, not
   *  answered. null for answers restored from a snapshot written before digests. */
  readonly digest: number | null;
  readonly result: Result;
}

/** What a session's names are of: locks it holds, locks it waits for, elections it leads or
 *  stands in, keys tied to it (ephemeral puts, deleted in the entry that ends it). */
export type NameKind = 'held' | 'waits' | 'elections' | 'ephemerals';

const NO_NAMES: ReadonlySet<string> = new Set();

/** The record's field that holds each kind of name. */
const NAME_FIELDS = { held: 'heldNames', waits: 'waitNames', elections: 'electionNames', ephemerals: 'ephemeralNames' } as const;

export class SessionRecord {
  /** Every seq <= ackedSeq has been answered and forgotten. */
  ackedSeq = 0;
  /** Answers of seq > ackedSeq, in the order the requests were applied. */
  readonly answers: StoredAnswer[] = [];
  // Each set of names exists only while it holds one: with four empty Sets an idle session
  // cost the machine 782 bytes of heap, without them 174 (bench/lockfsm-apply.ts, 200,000
  // open), and most sessions hold a lock or two at most.
  private heldNames: Set<string> | null = null;
  private waitNames: Set<string> | null = null;
  private electionNames: Set<string> | null = null;
  private ephemeralNames: Set<string> | null = null;

  constructor(
    readonly id: number,
    readonly ttlMs: number,
    readonly label: string | null,
    /** The principal that opened it (null: opened without authentication). */
    readonly owner: string | null,
  ) {}

  get held(): ReadonlySet<string> {
    return this.heldNames ?? NO_NAMES;
  }
  get waits(): ReadonlySet<string> {
    return this.waitNames ?? NO_NAMES;
  }
  get elections(): ReadonlySet<string> {
    return this.electionNames ?? NO_NAMES;
  }
  get ephemerals(): ReadonlySet<string> {
    return this.ephemeralNames ?? NO_NAMES;
  }

  add(kind: NameKind, name: string): void {
    const field = NAME_FIELDS[kind];
    (this[field] ??= new Set()).add(name);
  }

  /** Removes `name`; a set left empty is dropped. */
  drop(kind: NameKind, name: string): void {
    const field = NAME_FIELDS[kind];
    const names = this[field];
    if (names?.delete(name) && names.size === 0) this[field] = null;
  }
}

/** [seq, command, result, digest]: answers of snapshots written before digests have 3 fields. */
type AnswerSnapshot = [number, CommandType, Result, number] | [number, CommandType, Result];
type SessionSnapshot =
  | [number, number, number, readonly AnswerSnapshot[]]
  | [number, number, number, readonly AnswerSnapshot[], string]
  | [number, number, number, readonly AnswerSnapshot[], string | null, string];

const NO_ANSWERS: readonly AnswerSnapshot[] = Object.freeze([]);

function answerSnapshot(a: StoredAnswer): AnswerSnapshot {
  return a.digest === null ? [a.seq, a.command, a.result] : [a.seq, a.command, a.result, a.digest];
}

/** What the idempotency layer decides about a session command before it runs. */
export type Admission = { readonly kind: 'new' } | { readonly kind: 'answer'; readonly result: Result };

const NEW: Admission = { kind: 'new' };

export class SessionTable {
  private readonly byId = new Map<number, SessionRecord>();
  /** Open sessions per owner (owned sessions only). */
  private readonly byOwner = new Map<string, number>();
  private pending = 0;

  /** `settings`: the machine's current (replicated) settings, read at each use. */
  constructor(private readonly settings: () => MachineConfig) {}

  get size(): number {
    return this.byId.size;
  }

  /** Answers kept across all sessions. */
  get pendingResults(): number {
    return this.pending;
  }

  /** Open sessions of `owner`. */
  ownedBy(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }

  get(id: number): SessionRecord | undefined {
    return this.byId.get(id);
  }

  values(): IterableIterator<SessionRecord> {
    return this.byId.values();
  }

  open(id: number, ttlMs: number, label: string | null, owner: string | null): SessionRecord {
    const rec = new SessionRecord(id, ttlMs, label, owner);
    this.byId.set(id, rec);
    if (owner !== null) this.byOwner.set(owner, this.ownedBy(owner) + 1);
    return rec;
  }

  remove(rec: SessionRecord): void {
    this.pending -= rec.answers.length;
    this.byId.delete(rec.id);
    if (rec.owner !== null) {
      const left = this.ownedBy(rec.owner) - 1;
      if (left > 0) this.byOwner.set(rec.owner, left);
      else this.byOwner.delete(rec.owner);
    }
  }

  /**
   * Decides whether `cmd` is new, a retry (the stored answer), or refused. Applies the
   * command's ackedSeq first: forgetting acknowledged answers is what makes room.
   */
  admit(rec: SessionRecord, cmd: SessionCommand): Admission {
    if (cmd.seq <= rec.ackedSeq) {
      return {
        kind: 'answer',
        result: machineError(
          'STALE_SEQUENCE',
          `seq ${cmd.seq} of session ${rec.id} is at or below the acknowledged seq ${rec.ackedSeq}; its answer is forgotten`,
        ),
      };
    }
    // Before acknowledging anything: an ackedSeq far ahead would poison the session as much
    // as the seq (ackedSeq < seq, so bounding seq bounds both).
    const { maxSeqAdvance, maxPendingResultsPerSession, maxPendingResultBytesPerSession } = this.settings();
    const high = highestSeq(rec);
    if (cmd.seq > high + maxSeqAdvance) {
      return {
        kind: 'answer',
        result: invalidArgument(
          `seq ${cmd.seq} of session ${rec.id} is more than ${maxSeqAdvance} above its highest seq so far (${high}); number requests consecutively`,
        ),
      };
    }
    if (cmd.ackedSeq !== undefined && cmd.ackedSeq > rec.ackedSeq) this.acknowledge(rec, cmd.ackedSeq);
    const stored = findAnswer(rec, cmd.seq);
    if (stored !== undefined) {
      if (stored.command !== cmd.type) {
        return {
          kind: 'answer',
          result: invalidArgument(`seq ${cmd.seq} of session ${rec.id} was used by a ${stored.command}, not a ${cmd.type}`),
        };
      }
      // A retry must be the same command: another one must not learn the first one's answer.
      if (stored.digest !== null && stored.digest !== commandDigest(cmd)) {
        return {
          kind: 'answer',
          result: invalidArgument(`seq ${cmd.seq} of session ${rec.id} was used by a different ${cmd.type}; a retry must repeat the command exactly`),
        };
      }
      return { kind: 'answer', result: stored.result };
    }
    if (rec.answers.length >= maxPendingResultsPerSession) {
      return {
        kind: 'answer',
        result: limitExceeded(
          `session ${rec.id} has ${rec.answers.length} unacknowledged requests (limit ${maxPendingResultsPerSession}); send ackedSeq`,
        ),
      };
    }
    // A `done` answer carries its operation's result: without a byte bound one session that
    // never acknowledges could keep maxPendingResultsPerSession copies of a 64 KB result.
    const kept = keptBytes(rec);
    if (kept >= maxPendingResultBytesPerSession) {
      return {
        kind: 'answer',
        result: limitExceeded(
          `session ${rec.id} keeps ${kept} bytes of unacknowledged answers (limit ${maxPendingResultBytesPerSession}); send ackedSeq`,
        ),
      };
    }
    return NEW;
  }

  remember(rec: SessionRecord, cmd: SessionCommand, result: Result): void {
    rec.answers.push({ seq: cmd.seq, command: cmd.type, digest: commandDigest(cmd), result });
    this.pending++;
  }

  /** Snapshot form: [id, ttlMs, ackedSeq, [[seq, command, result], ...]] per session, the
   *  label (or null) as a fifth field and the owner as a sixth when there are any: snapshots
   *  written before labels or owners existed read as before. */
  toSnapshot(): SessionSnapshot[] {
    const rows = this.snapshotRows();
    return rows.slice(0, rows.length);
  }

  /**
   * The table as of now, its snapshot tuples built later a slice at a time: the records
   * (whose id, TTL, label and owner never change) with a copy of what does (ackedSeq, the
   * answers). At 300,000 sessions building every tuple at once took 130-400 ms of a loaded
   * node's loop (docs/benchmarks.md, "The snapshot stall"); this copy is a pass over the
   * records with no allocation for a session that keeps no answer, which most do not.
   */
  snapshotRows(): SnapshotRows<SessionSnapshot> {
    const recs = Array.from(this.byId.values());
    const acked = new Float64Array(recs.length);
    const answers = new Map<number, readonly AnswerSnapshot[]>();
    for (let i = 0; i < recs.length; i++) {
      const rec = recs[i]!;
      acked[i] = rec.ackedSeq;
      if (rec.answers.length > 0) answers.set(i, rec.answers.map(answerSnapshot));
    }
    return {
      length: recs.length,
      slice(from: number, to: number): SessionSnapshot[] {
        const out: SessionSnapshot[] = [];
        for (let i = from; i < to; i++) {
          const rec = recs[i]!;
          const kept = answers.get(i) ?? NO_ANSWERS;
          if (rec.owner !== null) out.push([rec.id, rec.ttlMs, acked[i]!, kept, rec.label, rec.owner]);
          else if (rec.label !== null) out.push([rec.id, rec.ttlMs, acked[i]!, kept, rec.label]);
          else out.push([rec.id, rec.ttlMs, acked[i]!, kept]);
        }
        return out;
      },
    };
  }

  /**
   * Restores sessions. Stored answers are replayed verbatim to retries, so they are checked
   * for shape only (an object with a string `type`, from a known command).
   */
  restore(data: unknown, appliedIndex: number, commandTypes: readonly CommandType[]): void {
    readEach(data, 'sessions', (item) => {
      const t = readArray(item, 'session');
      if (t.length < 4 || t.length > 6) fail(`session must have 4 to 6 fields, has ${t.length}`);
      const id = readIndex(t[0], appliedIndex, 'session id');
      if (this.byId.has(id)) fail(`session ${id} appears twice`);
      const ttlMs = readUint(t[1], 'ttlMs');
      const ackedSeq = readUint(t[2], 'ackedSeq');
      const answers: StoredAnswer[] = [];
      const items = readArray(t[3], 'answers');
      for (let j = 0; j < items.length; j++) {
        const at = readArray(items[j], 'answer');
        if (at.length !== 3 && at.length !== 4) fail(`answer must have 3 or 4 fields, has ${at.length}`);
        const seq = readIndex(at[0], Number.MAX_SAFE_INTEGER, 'answer seq');
        if (seq <= ackedSeq || answers.some((a) => a.seq === seq)) fail(`answer for seq ${seq} is stale or repeated`);
        const command = readString(at[1], 'answer command') as CommandType;
        if (!commandTypes.includes(command)) fail(`answer for unknown command ${JSON.stringify(command)}`);
        const result = readObject(at[2], 'answer');
        if (typeof result.type !== 'string') fail('answer has no type');
        const digest = at.length === 4 ? readUint(at[3], 'answer digest') : null;
        answers.push({ seq, command, digest, result: result as unknown as Result });
      }
      const label = t.length < 5 || (t.length === 6 && t[4] === null) ? null : readString(t[4], 'session label');
      const owner = t.length === 6 ? readString(t[5], 'session owner') : null;
      const rec = this.open(id, ttlMs, label, owner);
      rec.ackedSeq = ackedSeq;
      rec.answers.push(...answers);
      this.pending += answers.length;
    });
  }

  /** Forgets answers of seq <= ackedSeq, compacting the array in place (order kept). */
  private acknowledge(rec: SessionRecord, ackedSeq: number): void {
    rec.ackedSeq = ackedSeq;
    const answers = rec.answers;
    let kept = 0;
    for (let i = 0; i < answers.length; i++) {
      const a = answers[i]!;
      if (a.seq > ackedSeq) answers[kept++] = a;
    }
    this.pending -= answers.length - kept;
    answers.length = kept;
  }
}

/** The highest seq the session has seen: every admitted seq is remembered until acknowledged. */
function highestSeq(rec: SessionRecord): number {
  let high = rec.ackedSeq;
  for (let i = 0; i < rec.answers.length; i++) if (rec.answers[i]!.seq > high) high = rec.answers[i]!.seq;
  return high;
}

function findAnswer(rec: SessionRecord, seq: number): StoredAnswer | undefined {
  const answers = rec.answers;
  for (let i = 0; i < answers.length; i++) if (answers[i]!.seq === seq) return answers[i];
  return undefined;
}

/** Bytes the session's kept answers hold beyond their fixed size: the results of `done` answers. */
function keptBytes(rec: SessionRecord): number {
  let bytes = 0;
  for (let i = 0; i < rec.answers.length; i++) {
    const r = rec.answers[i]!.result;
    if (r.type === 'done') bytes += r.result.length;
  }
  return bytes;
}

/** What a session's end undoes (maxLocksPerSession bounds it): locks held and waited for,
 *  elections entered, keys tied to it. One entry ends a session, so this bounds that entry's work. */
export function sessionLoad(rec: SessionRecord): number {
  return rec.held.size + rec.waits.size + rec.elections.size + rec.ephemerals.size;
}

export function tooManyLocks(rec: SessionRecord, max: number): MachineError {
  return limitExceeded(`session ${rec.id} already holds, waits for, campaigns in or ties ${sessionLoad(rec)} locks, elections and keys (limit ${max})`);
}
