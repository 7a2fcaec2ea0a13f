// The history of a run, as it happens: operations from every client process (paired
// invocation and completion), session ends, every fault the nemesis injects and notes from
// the workers. Written as JSON lines: operation lines are the checker's format
// (checker/history.ts); fault and note lines carry an "event" field instead of "op".
import { readFile, writeFile } from 'node:fs/promises';
import { parseOperation, type Operation } from './checker/index.js';
import type { Completion, Invocation } from './protocol.js';

/** An operation record plus the error that ended it (for people; the checker ignores it). */
export type RecordedOperation = Operation & { error?: string };

export interface FaultRecord {
  readonly event: 'fault';
  readonly kind: string;
  readonly phase: 'start' | 'end';
  readonly atMs: number;
  /** Targets, partition halves, cut edges. */
  readonly detail: string;
  /** Whether the fault struck the leader (for a partition: the leader is on the cut-off side). */
  readonly role?: 'leader' | 'follower';
}

export interface NoteRecord {
  readonly event: 'note';
  readonly process: string;
  readonly atMs: number;
  readonly text: string;
}

interface SessionRecord {
  readonly process: string;
  readonly openedMs: number;
  expiryFromMs: number | null;
  why: string | null;
}

export class HistoryRecorder {
  private readonly pending = new Map<string, Invocation>();
  private readonly done: RecordedOperation[] = [];
  private readonly sessions = new Map<number, SessionRecord>();
  readonly faults: FaultRecord[] = [];
  readonly notes: NoteRecord[] = [];
  /** Records that did not fit the history format: a harness bug, reported as such. */
  readonly malformed: string[] = [];

  invoke(invocation: Invocation): void {
    this.pending.set(invocation.id as string, invocation);
  }

  complete(c: Completion): void {
    const invocation = this.pending.get(c.id);
    if (invocation === undefined) {
      this.malformed.push(`completion of unknown operation ${c.id}`);
      return;
    }
    this.pending.delete(c.id);
    const raw = {
      ...invocation,
      ...(c.session === undefined ? {} : { session: c.session }),
      outcome: c.outcome,
      completeMs: Math.max(c.completeMs, invocation.invokeMs),
      ...(c.result === undefined ? {} : { result: c.result }),
      ...(c.error === undefined ? {} : { error: c.error }),
    };
    this.add(raw);
  }

  /** An operation the harness itself ran (probe and final reads). */
  record(op: RecordedOperation): void {
    this.add(op);
  }

  sessionOpened(process: string, session: number, atMs: number): void {
    const known = this.sessions.get(session);
    if (known === undefined) this.sessions.set(session, { process, openedMs: atMs, expiryFromMs: null, why: null });
  }

  sessionEnded(process: string, session: number, expiryFromMs: number, why: string): void {
    const s = this.sessions.get(session) ?? { process, openedMs: expiryFromMs, expiryFromMs: null, why: null };
    s.expiryFromMs = s.expiryFromMs === null ? expiryFromMs : Math.min(s.expiryFromMs, expiryFromMs);
    s.why = why;
    this.sessions.set(session, s);
  }

  fault(kind: string, phase: 'start' | 'end', atMs: number, detail: string, role?: 'leader' | 'follower'): void {
    this.faults.push({ event: 'fault', kind, phase, atMs, detail, ...(role === undefined ? {} : { role }) });
  }

  note(process: string, atMs: number, text: string): void {
    this.notes.push({ event: 'note', process, atMs, text });
  }

  /** Completed operations so far (for live decisions, e.g. who holds what). */
  get completed(): readonly RecordedOperation[] {
    return this.done;
  }

  /**
   * The history to check: completed operations; invocations that never completed (their
   * process was killed or hung) as unknown; and one 'sessionExpired' per session, unknown,
   * from the moment the cluster may have dropped it (its opening when the worker never said).
   */
  operations(): RecordedOperation[] {
    const ops = [...this.done];
    for (const invocation of this.pending.values()) {
      this.add({ ...invocation, outcome: 'unknown', completeMs: null, error: 'never completed' } as RecordedOperation, ops);
    }
    for (const [session, s] of [...this.sessions.entries()].sort(([a], [b]) => a - b)) {
      ops.push({
        id: `${s.process}:end-of-session-${session}`,
        process: `${s.process}/lease`,
        op: 'sessionExpired',
        args: { session },
        invokeMs: s.expiryFromMs ?? s.openedMs,
        completeMs: null,
        outcome: 'unknown',
        ...(s.why === null ? { error: 'the worker never reported the end of this session' } : {}),
      });
    }
    return ops.sort((a, b) => a.invokeMs - b.invokeMs);
  }

  async writeJsonl(path: string, ops: readonly RecordedOperation[]): Promise<void> {
    const events: (RecordedOperation | FaultRecord | NoteRecord)[] = [...ops, ...this.faults, ...this.notes];
    const at = (e: RecordedOperation | FaultRecord | NoteRecord): number => ('op' in e ? e.invokeMs : e.atMs);
    events.sort((a, b) => at(a) - at(b));
    await writeFile(path, events.map((e) => JSON.stringify(e)).join('\n') + '\n', 'utf8');
  }

  private add(raw: unknown, into: RecordedOperation[] = this.done): void {
    const problems: string[] = [];
    const op = parseOperation(raw, 'recorded operation', problems);
    if (op === undefined) {
      this.malformed.push(...problems);
      return;
    }
    into.push(op as RecordedOperation);
  }
}

/** Reads a run's JSON-lines file back: operations for the checker, and the faults. */
export async function readRunHistory(path: string): Promise<{ ops: RecordedOperation[]; faults: FaultRecord[]; notes: NoteRecord[] }> {
  const ops: RecordedOperation[] = [];
  const faults: FaultRecord[] = [];
  const notes: NoteRecord[] = [];
  const problems: string[] = [];
  (await readFile(path, 'utf8')).split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const raw: unknown = JSON.parse(line);
    if (typeof raw === 'object' && raw !== null && 'event' in raw) {
      const e = raw as FaultRecord | NoteRecord;
      if (e.event === 'fault') faults.push(e);
      else notes.push(e);
      return;
    }
    const op = parseOperation(raw, `line ${i + 1}`, problems);
    if (op !== undefined) ops.push(op as RecordedOperation);
  });
  if (problems.length > 0) throw new Error(`malformed history ${path}: ${problems.slice(0, 5).join('; ')}`);
  return { ops, faults, notes };
}
