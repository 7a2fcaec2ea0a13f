// Translation between the client protocol (src/protocol/client-protocol.ts) and the lock
// machine's commands, results, events and views. Kept apart from the node so each side of
// the mapping can be read at a glance.
import type {
  Command,
  ElectionInfo,
  MachineError,
  MachineLockInfo,
  MachineEvent,
  Result,
} from '../../lockfsm/types.js';
import type { ElectionLeader, LockInfo, ServerEvent, WireError } from '../../protocol/client-protocol.js';
import type { Answer, ResultOf, WriteOp, WriteRequest } from '../../protocol/ops.js';
import type { MachineConfig } from '../../lockfsm/config.js';
import { REPLICATED_SETTINGS, keyOf as keyOfSetting, nearestSettingKey, replicatedSetting, settingsByKey } from '../../config/replicated-settings.js';

/** A refusal: an answer to any op. */
export function fail(code: WireError['code'], message: string, extra: Partial<WireError> = {}): Answer<never> {
  return { ok: false, error: { code, message, ...extra } };
}

/** The one refusal of a session that is not open, or not the asker's (session-owner.ts):
 *  word for word the lock machine's (lockfsm/errors.ts), so the two cannot be told apart. */
export function sessionNotOpen(session: number): WireError {
  return { code: 'UNKNOWN_SESSION', message: `session ${session} is not open (never opened, closed or expired)` };
}

/** A keepalive's answer when the leader keeps no lease for its session. */
export function unknownSession(session: number): Answer<never> {
  const e = sessionNotOpen(session);
  return fail(e.code, e.message);
}

function seqFields(r: { session: number; seq: number; ackedSeq?: number }) {
  return { session: r.session, seq: r.seq, ...(r.ackedSeq !== undefined ? { ackedSeq: r.ackedSeq } : {}) };
}

/** The command a write request proposes. `stamp` gives the cluster's time, for the ledger's
 *  commands (leases/cluster-clock.ts); `owner` the token name of the client that sent it
 *  (null when clients are not authenticated): whom an opened session belongs to, and who
 *  revoked one. */
export function commandFor(r: WriteRequest, defaultTtlMs: number, stamp: () => number, owner: string | null = null): Command {
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
        ...(r.ephemeral ? { ephemeral: true } : {}),
      };
    case 'txn':
      return { type: 'txn', ...seqFields(r), compare: r.compare, success: r.success, failure: r.failure, ...(r.fence ? { fence: r.fence } : {}) };
    case 'revokeSession':
      return { type: 'revokeSession', session: r.session, reason: r.reason, ...(owner !== null ? { by: owner } : {}) };
    case 'delete':
      return {
        type: 'delete',
        ...seqFields(r),
        key: r.key,
        ...(r.fence ? { fence: r.fence } : {}),
        ...(r.ifRevision !== undefined ? { ifRevision: r.ifRevision } : {}),
      };
    case 'beginOp':
      return { type: 'beginOp', ...seqFields(r), opKey: r.opKey, fence: r.fence, at: stamp(), ...(r.retry ? { retry: true } : {}) };
    case 'completeOp':
      return { type: 'completeOp', ...seqFields(r), opKey: r.opKey, result: r.result, fence: r.fence, at: stamp() };
    case 'configure':
      return { type: 'configure', settings: machineSettings(r.settings) };
  }
}

/** A request's settings by the operator's keys, as the machine's settings; a key that is no
 *  setting is refused (INVALID_ARGUMENT, with the nearest key). */
function machineSettings(byKey: Readonly<Record<string, number>>): Partial<MachineConfig> {
  const out: Partial<Record<keyof MachineConfig, number>> = {};
  for (const [key, value] of Object.entries(byKey)) {
    const s = replicatedSetting(key);
    if (s === undefined) throw new UnknownSetting(key);
    out[s.setting] = value;
  }
  return out;
}

/** Thrown by commandFor for a configure request naming no setting (answered INVALID_ARGUMENT). */
export class UnknownSetting extends Error {
  constructor(readonly key: string) {
    const near = nearestSettingKey(key);
    super(`${JSON.stringify(key)} is not a cluster setting${near ? ` (did you mean ${near}?)` : ''}; the settings are ${REPLICATED_SETTINGS.map((s) => s.key).join(', ')}`);
  }
}

/** The wire answer to a machine error (a command refused before or when it was applied). */
export function machineFail(e: MachineError): Answer<never> {
  return fail(e.code, e.message, {
    ...(e.currentToken !== undefined ? { currentToken: e.currentToken } : {}),
    ...(e.currentRevision !== undefined ? { currentRevision: e.currentRevision } : {}),
  });
}

type Success = Exclude<Result, MachineError>;

/** For each write op, its wire result from the machine's result for the entry at `index`;
 *  null for a result that op never gives (lockfsm ResultByCommand says which it gives). */
const WIRE_RESULTS: { readonly [O in WriteOp]: (r: Success, index: number) => ResultOf<O> | null } = {
  openSession: (r) => (r.type === 'session' ? { session: r.session, ttlMs: r.ttlMs } : null),
  closeSession: indexed,
  acquire: (r, index) => {
    switch (r.type) {
      case 'granted':
        return { status: 'granted', token: r.token, index };
      case 'queued':
        return { status: 'queued', position: r.position, index };
      case 'busy':
        return { status: 'busy', holders: r.holders, delayed: r.delayed, index };
      default:
        return null;
    }
  },
  release: indexed,
  cancelWait: indexed,
  campaign: (r, index) => {
    if (r.type === 'leader') return { status: 'leader', token: r.token, index };
    return r.type === 'queued' ? { status: 'queued', position: r.position, index } : null;
  },
  proclaim: indexed,
  resign: indexed,
  put: (r, index) => (r.type === 'written' ? { revision: r.revision, index } : null),
  delete: (r, index) => (r.type === 'deleted' ? { existed: r.existed, revision: r.revision, index } : null),
  txn: (r, index) => (r.type === 'txn' ? { succeeded: r.succeeded, failed: r.failed, results: r.results, revision: r.revision, index } : null),
  revokeSession: indexed,
  beginOp: (r, index) => {
    switch (r.type) {
      case 'run':
      case 'retry': // a new attempt is run like the first one
        return { status: 'run', idempotencyKey: r.idempotencyKey, attempt: r.attempt, index };
      case 'done':
        return { status: 'done', idempotencyKey: r.idempotencyKey, result: r.result, index };
      case 'inDoubt':
        return { status: 'inDoubt', idempotencyKey: r.idempotencyKey, attempt: r.attempt, token: r.token, index };
      default:
        return null;
    }
  },
  completeOp: (r, index) => (r.type === 'completed' ? { idempotencyKey: r.idempotencyKey, index } : null),
  configure: (r, index) => (r.type === 'settings' ? { settings: settingsByKey(r.settings), configured: true, changed: r.changed.map(keyOfSetting), index } : null),
};

function indexed(r: Success, index: number): { index: number } | null {
  return r.type === 'ok' ? { index } : null;
}

/** The wire answer to the write `op` whose entry at `index` applied with `result`. */
export function answerFor<O extends WriteOp>(op: O, result: Result, index: number): Answer<O> {
  if (result.type === 'error') return machineFail(result);
  const wire = WIRE_RESULTS[op](result, index);
  return wire === null ? fail('INTERNAL', `entry ${index} answered ${result.type} to ${op}`) : { ok: true, result: wire };
}

/** The client-facing event for a machine event, or null for leader-internal events. */
export function wireEvent(e: MachineEvent, index: number): ServerEvent | null {
  switch (e.type) {
    case 'granted':
      return { event: 'granted', index, session: e.session, name: e.name, token: e.token, mode: e.mode };
    case 'released':
      return { event: 'released', index, session: e.session, name: e.name, token: e.token, reason: e.reason };
    case 'sessionExpired':
      return {
        event: 'sessionExpired',
        index,
        session: e.session,
        reason: e.reason,
        ...(e.detail !== undefined ? { detail: e.detail } : {}),
        ...(e.by !== undefined ? { by: e.by } : {}),
      };
    case 'electionChanged':
      return { event: 'electionChanged', index, election: e.election, leader: e.leader, value: e.value, token: e.token };
    case 'kvChanged':
      return { event: 'kvChanged', index, key: e.key, value: e.value, revision: e.revision };
    default:
      return null;
  }
}

/** What a node pushes to its clients for a machine event of the entry at `index`. The
 *  requester learns an immediate grant (`answered`: the entry's own result is a grant) and
 *  its own release from the answer; pushing the same news as an event would double the
 *  writes on the path of every lock cycle. Grants to waiters, and releases by expiry or
 *  close, are only ever told as events. */
export function pushedEvent(e: MachineEvent, index: number, answered: boolean): ServerEvent | null {
  const echo = (e.type === 'granted' && answered) || (e.type === 'released' && e.reason === 'release');
  return echo ? null : wireEvent(e, index);
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
