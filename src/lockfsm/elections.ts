// Elections: a named exclusive lock whose holder is the leader, with a value it publishes.
// Kept in their own table so an election and a lock of the same name never meet.
//
// campaign = acquire-and-wait (FIFO candidates), resign = release, and a session's close
// or expiry lets the next candidate lead. The leader's token is its epoch: the index of
// the entry that made it leader, so epochs only grow. Elections have no lock-delay: the
// epoch already fences a deposed leader, and failover should be prompt.
//
// Each seat (the leader's and each candidate's) holds the election's name and a value, and
// counts towards the elections' byte budget, in total and per owner (budget.ts).

import type { ApplyContext } from './context.js';
import { ByteBudget } from './budget.js';
import { RECORD_OVERHEAD_BYTES, type MachineConfig } from './config.js';
import { conflict, withToken } from './errors.js';
import { sessionLoad, tooManyLocks, type SessionRecord } from './sessions.js';
import { fail, readArray, readEach, readIndex, readString, readTuple } from './snapshot-reader.js';
import { utf8Length } from './text.js';
import type { MachineCampaignResult, ElectionInfo, MachineError, OkResult } from './types.js';

const OK: OkResult = Object.freeze({ type: 'ok' });

interface Leadership {
  readonly session: SessionRecord;
  readonly token: number;
  value: string;
}

class ElectionRecord {
  leader: Leadership | null = null;
  /** Candidates in arrival order, each with the value it will publish when it leads. */
  readonly candidates = new Map<number, { readonly session: SessionRecord; readonly value: string }>();
  constructor(readonly name: string) {}
}

/** Snapshot form: [name, leaderSession, token, value, [[candidate, value], ...]]. */
type ElectionTuple = [string, number | null, number | null, string | null, [number, string][]];

export class ElectionTable {
  private readonly byName = new Map<string, ElectionRecord>();
  private candidateCount = 0;

  private readonly budget: ByteBudget;

  constructor(private readonly settings: () => MachineConfig) {
    this.budget = new ByteBudget('elections', { total: 'budgets.electionBytes', perOwner: 'budgets.electionBytesPerToken' }, () => {
      const s = settings();
      return { total: s.maxElectionBytes, perOwner: s.maxElectionBytesPerOwner };
    });
  }

  /** Bytes the seats hold (what the budget counts). */
  get bytes(): number {
    return this.budget.bytes;
  }

  campaign(ctx: ApplyContext, rec: SessionRecord, name: string, value: string): MachineCampaignResult {
    let e = this.byName.get(name);
    if (e !== undefined) {
      // Campaigning again answers the standing leadership or place, as acquire does.
      if (e.leader?.session === rec) return { type: 'leader', token: e.leader.token };
      if (e.candidates.has(rec.id)) return { type: 'queued', position: positionOf(e, rec.id) };
    }
    const { maxLocksPerSession } = this.settings();
    if (sessionLoad(rec) >= maxLocksPerSession) return tooManyLocks(rec, maxLocksPerSession);
    const bytes = seatBytes(name, value);
    const over = this.budget.check(rec.owner, bytes);
    if (over) return over;
    this.budget.charge(rec.owner, bytes);
    if (e === undefined) {
      e = new ElectionRecord(name);
      this.byName.set(name, e);
    }
    rec.add('elections', name);
    if (e.leader === null) {
      this.lead(ctx, e, rec, value);
      return { type: 'leader', token: ctx.index };
    }
    e.candidates.set(rec.id, { session: rec, value });
    this.candidateCount++;
    return { type: 'queued', position: e.candidates.size };
  }

  proclaim(ctx: ApplyContext, rec: SessionRecord, name: string, token: number, value: string): OkResult | MachineError {
    const e = this.byName.get(name);
    const notLeader = this.checkLeader(e, rec, name, token);
    if (notLeader) return notLeader;
    const leader = e!.leader!;
    const freed = { owner: rec.owner, bytes: seatBytes(name, leader.value) };
    const over = this.budget.check(rec.owner, seatBytes(name, value), freed);
    if (over) return over;
    this.budget.refund(rec.owner, freed.bytes);
    this.budget.charge(rec.owner, seatBytes(name, value));
    leader.value = value;
    emitChange(ctx, e!);
    return OK;
  }

  /** With a token: the leader steps down. Without: a queued candidate withdraws. */
  resign(ctx: ApplyContext, rec: SessionRecord, name: string, token: number | undefined): OkResult | MachineError {
    const e = this.byName.get(name);
    if (token === undefined) {
      if (e === undefined || !e.candidates.has(rec.id)) {
        return conflict(`session ${rec.id} is not a queued candidate of election ${JSON.stringify(name)}`);
      }
      this.leaveLine(e, rec);
      return OK;
    }
    const notLeader = this.checkLeader(e, rec, name, token);
    if (notLeader) return notLeader;
    this.stepDown(ctx, e!);
    return OK;
  }

  dropSession(ctx: ApplyContext, rec: SessionRecord): void {
    for (const name of [...rec.elections].sort()) {
      const e = this.byName.get(name)!;
      if (e.leader?.session === rec) this.stepDown(ctx, e);
      else this.leaveLine(e, rec);
    }
  }

  // ---- reads ---------------------------------------------------------------------------

  get size(): number {
    return this.byName.size;
  }

  get candidates(): number {
    return this.candidateCount;
  }

  info(name: string): ElectionInfo | null {
    const e = this.byName.get(name);
    if (e === undefined) return null;
    return {
      election: name,
      leader: e.leader?.session.id ?? null,
      value: e.leader?.value ?? null,
      token: e.leader?.token ?? null,
      candidates: [...e.candidates.keys()],
    };
  }

  list(prefix: string, limit: number): ElectionInfo[] {
    const names: string[] = [];
    for (const name of this.byName.keys()) if (name.startsWith(prefix)) names.push(name);
    names.sort();
    return names.slice(0, Math.max(0, limit)).map((n) => this.info(n)!);
  }

  // ---- internals -----------------------------------------------------------------------

  private checkLeader(e: ElectionRecord | undefined, rec: SessionRecord, name: string, token: number): MachineError | null {
    const leader = e?.leader ?? null;
    if (leader === null || leader.session !== rec || leader.token !== token) {
      return withToken(
        'NOT_HOLDER',
        `session ${rec.id} does not lead election ${JSON.stringify(name)} with token ${token}`,
        leader?.token ?? null,
      );
    }
    return null;
  }

  private lead(ctx: ApplyContext, e: ElectionRecord, rec: SessionRecord, value: string): void {
    e.leader = { session: rec, token: ctx.index, value };
    emitChange(ctx, e);
  }

  /** A queued candidate leaves (resign without a token, or its session ended). */
  private leaveLine(e: ElectionRecord, rec: SessionRecord): void {
    const seat = e.candidates.get(rec.id)!;
    e.candidates.delete(rec.id);
    this.candidateCount--;
    rec.drop('elections', e.name);
    this.budget.refund(rec.owner, seatBytes(e.name, seat.value));
  }

  /** The leader leaves: the first candidate leads with this entry's index as its epoch (its
   *  seat, already charged, moves with it). */
  private stepDown(ctx: ApplyContext, e: ElectionRecord): void {
    const leaving = e.leader!;
    this.budget.refund(leaving.session.owner, seatBytes(e.name, leaving.value));
    leaving.session.drop('elections', e.name);
    e.leader = null;
    const next = e.candidates.values().next();
    if (next.done) {
      emitChange(ctx, e);
      this.byName.delete(e.name);
      return;
    }
    e.candidates.delete(next.value.session.id);
    this.candidateCount--;
    this.lead(ctx, e, next.value.session, next.value.value);
  }

  // ---- snapshot ------------------------------------------------------------------------

  toSnapshot(): ElectionTuple[] {
    const out: ElectionTuple[] = [];
    for (const e of this.byName.values()) {
      out.push([
        e.name,
        e.leader?.session.id ?? null,
        e.leader?.token ?? null,
        e.leader?.value ?? null,
        [...e.candidates.values()].map((c): [number, string] => [c.session.id, c.value]),
      ]);
    }
    return out;
  }

  restore(data: unknown, sessions: (id: number) => SessionRecord | undefined, appliedIndex: number): void {
    readEach(data, 'elections', (item) => this.restoreElection(item, sessions, appliedIndex));
  }

  private restoreElection(item: unknown, sessions: (id: number) => SessionRecord | undefined, appliedIndex: number): void {
    const sessionOf = (v: unknown, what: string): SessionRecord => {
      const id = readIndex(v, appliedIndex, what);
      return sessions(id) ?? fail(`${what} ${id} is not a session of the snapshot`);
    };
    const t = readTuple(item, 5, 'election');
    const name = readString(t[0], 'election name');
    if (this.byName.has(name)) fail(`election ${JSON.stringify(name)} appears twice`);
    if (t[1] === null) fail(`election ${JSON.stringify(name)} has no leader`); // leaderless ones are dropped
    const e = new ElectionRecord(name);
    const leader = sessionOf(t[1], 'leader');
    e.leader = { session: leader, token: readIndex(t[2], appliedIndex, 'leader token'), value: readString(t[3], 'value') };
    const candidates = readArray(t[4], 'candidates');
    for (let j = 0; j < candidates.length; j++) {
      const ct = readTuple(candidates[j], 2, 'candidate');
      const rec = sessionOf(ct[0], 'candidate');
      if (rec === leader || e.candidates.has(rec.id)) fail(`session ${rec.id} appears twice`);
      e.candidates.set(rec.id, { session: rec, value: readString(ct[1], 'candidate value') });
    }
    this.byName.set(name, e);
    leader.add('elections', name);
    this.budget.charge(leader.owner, seatBytes(name, e.leader.value));
    for (const c of e.candidates.values()) {
      c.session.add('elections', name);
      this.budget.charge(c.session.owner, seatBytes(name, c.value));
    }
    this.candidateCount += e.candidates.size;
  }
}

function emitChange(ctx: ApplyContext, e: ElectionRecord): void {
  ctx.events.push({
    type: 'electionChanged',
    election: e.name,
    leader: e.leader?.session.id ?? null,
    value: e.leader?.value ?? null,
    token: e.leader?.token ?? null,
  });
}

function positionOf(e: ElectionRecord, session: number): number {
  let position = 1;
  for (const id of e.candidates.keys()) {
    if (id === session) return position;
    position++;
  }
  return position;
}

/** What a seat costs the budget: the election's name, the value it publishes, and the record. */
function seatBytes(name: string, value: string): number {
  return RECORD_OVERHEAD_BYTES + utf8Length(name) + utf8Length(value);
}
