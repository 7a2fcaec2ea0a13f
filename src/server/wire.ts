// Translation between the client protocol (src/protocol/client-protocol.ts) and the lock
// machine's commands, results, events and views. Kept apart from the node so each side of
// the mapping can be read at a glance.
import type {
  Command,
  ElectionInfo,
  LockInfo as MachineLockInfo,
  MachineEvent,
  Result,
} from '../lockfsm/types.js';
import type {
  ElectionLeader,
  LockInfo,
  Request,
  ServerEvent,
  WireError,
} from '../protocol/client-protocol.js';

export type WriteRequest = Extract<
  Request,
  { op: 'openSession' | 'closeSession' | 'acquire' | 'release' | 'cancelWait' | 'campaign' | 'proclaim' | 'resign' | 'put' | 'delete' | 'beginOp' | 'completeOp' }
>;

export type Answer = { ok: true; result: unknown } | { ok: false; error: WireError };

export function fail(code: WireError['code'], message: string, extra: Partial<WireError> = {}): Answer {
  return { ok: false, error: { code, message, ...extra } };
}

function seqFields(r: { session: number; seq: number; ackedSeq?: number }) {
  return { session: r.session, seq: r.seq, ...(r.ackedSeq !== undefined ? { ackedSeq: r.ackedSeq } : {}) };
}

/** The command a write request proposes. `now` is the leader's wall clock (ledger retention);
 *  `owner` the token name an opened session belongs to (null when clients are not authenticated). */
export function commandFor(r: WriteRequest, defaultTtlMs: number, now: number, owner: string | null = null): Command {
  switch (r.op) {
    case 'openSession':
      return {
        type: 'openSession',
        ttlMs: r.ttlMs ?? defaultTtlMs,
        ...(r.label !== undefined ? { label: r.label } : {}),
        ...(owner !== null ? { owner } : {}),
      };
    case 'closeSession':
      return { type: 'closeSession', ...seqFields(r) };
    case 'acquire':
      return {
        type: 'acquire',
        ...seqFields(r),
        name: r.name,
        mode: r.mode,
        wait: r.wait,
        ...(r.limit !== undefined ? { limit: r.limit } : {}),
        ...(r.lockDelayMs !== undefined ? { lockDelayMs: r.lockDelayMs } : {}),
      };
    case 'release':
      return { type: 'release', ...seqFields(r), name: r.name, token: r.token };
    case 'cancelWait':
      return { type: 'cancelWait', ...seqFields(r), name: r.name };
    case 'campaign':
      return { type: 'campaign', ...seqFields(r), election: r.election, value: r.value };
    case 'proclaim':
      return { type: 'proclaim', ...seqFields(r), election: r.election, token: r.token, value: r.value };
    case 'resign':
      return { type: 'resign', ...seqFields(r), election: r.election, token: r.token };
    case 'put':
      return {
        type: 'put',
        ...seqFields(r),
        key: r.key,
        value: r.value,
        ...(r.fence ? { fence: r.fence } : {}),
        ...(r.ifRevision !== undefined ? { ifRevision: r.ifRevision } : {}),
      };
    case 'delete':
      return {
        type: 'delete',
        ...seqFields(r),
        key: r.key,
        ...(r.fence ? { fence: r.fence } : {}),
        ...(r.ifRevision !== undefined ? { ifRevision: r.ifRevision } : {}),
      };
    case 'beginOp':
      return { type: 'beginOp', ...seqFields(r), opKey: r.opKey, fence: r.fence, at: now, ...(r.retry ? { retry: true } : {}) };
    case 'completeOp':
      return { type: 'completeOp', ...seqFields(r), opKey: r.opKey, result: r.result, fence: r.fence, at: now };
  }
}

/** The wire answer for a machine result of the entry at `index`. */
export function answerFor(result: Result, index: number): Answer {
  switch (result.type) {
    case 'error':
      return fail(result.code, result.message, {
        ...(result.currentToken !== undefined ? { currentToken: result.currentToken } : {}),
        ...(result.currentRevision !== undefined ? { currentRevision: result.currentRevision } : {}),
      });
    case 'session':
      return { ok: true, result: { session: result.session, ttlMs: result.ttlMs } };
    case 'granted':
      return { ok: true, result: { status: 'granted', token: result.token, index } };
    case 'queued':
      return { ok: true, result: { status: 'queued', position: result.position, index } };
    case 'busy':
      return { ok: true, result: { status: 'busy', holders: result.holders, delayed: result.delayed, index } };
    case 'leader':
      return { ok: true, result: { status: 'leader', token: result.token, index } };
    case 'written':
      return { ok: true, result: { revision: result.revision, index } };
    case 'deleted':
      return { ok: true, result: { existed: result.existed, revision: result.revision, index } };
    case 'run':
    case 'retry':
      return { ok: true, result: { status: 'run', idempotencyKey: result.idempotencyKey, attempt: result.attempt, index } };
    case 'done':
      return { ok: true, result: { status: 'done', idempotencyKey: result.idempotencyKey, result: result.result, index } };
    case 'inDoubt':
      return {
        ok: true,
        result: { status: 'inDoubt', idempotencyKey: result.idempotencyKey, attempt: result.attempt, token: result.token, index },
      };
    case 'completed':
      return { ok: true, result: { idempotencyKey: result.idempotencyKey, index } };
    case 'ok':
    case 'pruned':
      return { ok: true, result: { index } };
  }
}

/** The client-facing event for a machine event, or null for leader-internal events. */
export function wireEvent(e: MachineEvent, index: number): ServerEvent | null {
  switch (e.type) {
    case 'granted':
      return { event: 'granted', index, session: e.session, name: e.name, token: e.token, mode: e.mode };
    case 'released':
      return { event: 'released', index, session: e.session, name: e.name, token: e.token, reason: e.reason };
    case 'sessionExpired':
      return { event: 'sessionExpired', index, session: e.session };
    case 'electionChanged':
      return { event: 'electionChanged', index, election: e.election, leader: e.leader, value: e.value, token: e.token };
    case 'kvChanged':
      return { event: 'kvChanged', index, key: e.key, value: e.value, revision: e.revision };
    default:
      return null;
  }
}

export function wireLock(l: MachineLockInfo): LockInfo {
  return {
    name: l.name,
    holders: l.holders.map((h) => ({ session: h.session, token: h.token, mode: h.mode })),
    waiters: l.waiters.map((w) => ({ session: w.session, mode: w.mode })),
    limit: l.limit,
    delayed: l.delayed,
  };
}

export function freeLock(name: string): LockInfo {
  return { name, holders: [], waiters: [], limit: null, delayed: false };
}

export function wireElection(name: string, e: ElectionInfo | null): ElectionLeader {
  return e
    ? { election: name, leader: e.leader, value: e.value, token: e.token }
    : { election: name, leader: null, value: null, token: null };
}
