// The history format that a chaos run records and the checker reads.
//
// One record per client operation, in any order (the checker sorts by time). Times are
// milliseconds on one clock shared by every client process of the run (the harness's
// monotonic clock), so real-time order between operations of different processes means
// something.
//
// Outcomes:
//   ok       the operation took effect, somewhere between invokeMs and completeMs, with `result`;
//   fail     it definitely did not take effect (the service answered with an error that
//            guarantees nothing changed, e.g. busy / not held / wait expired);
//   unknown  timed out or the connection was lost: it may have taken effect at any time
//            after invokeMs, even after the record ends, or never. completeMs is kept only
//            for the report; the checker treats the completion as +infinity.

import { readFile, writeFile } from 'node:fs/promises';

export type OpId = number | string;
export type ProcessId = number | string;
/** A session (lease) id as the service reports it: the index of its OpenSession entry. */
export type SessionId = number | string;
export type LockMode = 'exclusive' | 'shared';
export type Outcome = 'ok' | 'fail' | 'unknown';
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

interface OperationRecord<Op extends string, Args, Result> {
  /** Unique within the history. */
  id: OpId;
  /** The client process that issued the operation (one operation at a time per process). */
  process: ProcessId;
  /** The session the operation acts for; required for acquire, tryAcquire, release, campaign, proclaim, resign. */
  session?: SessionId;
  op: Op;
  args: Args;
  invokeMs: number;
  /** When the answer arrived; null when it never did (then outcome must be 'unknown'). */
  completeMs: number | null;
  outcome: Outcome;
  /** Required when outcome is 'ok' for acquire, tryAcquire, read, campaign, leader; ignored otherwise unless documented. */
  result?: Result;
}

export interface HolderView {
  session: SessionId;
  token: number;
}

/** Blocking acquire: linearizes at the moment of the grant, anywhere inside [invokeMs, completeMs]. */
export type AcquireOp = OperationRecord<'acquire', { lock: string; mode: LockMode; limit?: number }, { token: number }>;
/** Non-blocking acquire. {granted:false} means the lock was unavailable at the linearization point. */
export type TryAcquireOp = OperationRecord<
  'tryAcquire',
  { lock: string; mode: LockMode; limit?: number },
  { granted: true; token: number } | { granted: false }
>;
/** Release of the grant `token` held by `session`; ok means the service released it. */
export type ReleaseOp = OperationRecord<'release', { lock: string; token: number }, Record<string, never>>;
/** Linearizable read of a lock's holders (order irrelevant). */
export type ReadOp = OperationRecord<'read', { lock: string }, { holders: HolderView[] }>;
/**
 * A session expiry. Record it as a window in which the expiry may have happened:
 * invokeMs = when the session's last acknowledged keepalive was sent (the expiry cannot
 * precede it); outcome 'ok' with completeMs = when the expiry was observed (pushed event,
 * or an error saying the session is gone) — it happened inside the window; outcome
 * 'unknown' with completeMs null when the session may have expired but nobody saw it
 * (keepalives stopped being acknowledged, the client was paused or killed).
 * args.session names the session; the record's own `session` field is not needed.
 */
export type SessionExpiredOp = OperationRecord<'sessionExpired', { session: SessionId }, Record<string, never>>;
/** Campaign: blocks until leader, like an exclusive acquire of the election; token = epoch. */
export type CampaignOp = OperationRecord<'campaign', { election: string; value: JsonValue }, { token: number }>;
/** The leader changes its value. */
export type ProclaimOp = OperationRecord<'proclaim', { election: string; value: JsonValue; token?: number }, Record<string, never>>;
/** The leader steps down. */
export type ResignOp = OperationRecord<'resign', { election: string; token?: number }, Record<string, never>>;
/**
 * Linearizable read of the current leader (served through the log or ReadIndex).
 * Events from an observe stream are not linearizable reads: do not record them as this op.
 */
export type LeaderOp = OperationRecord<
  'leader',
  { election: string },
  { leader: { session: SessionId; token: number; value: JsonValue } | null }
>;
/**
 * A write to the fenced resource protecting `lock`. ok without result (or {rejected:false})
 * = accepted; ok with {rejected:true, fence} = refused because `fence`, the highest token
 * the resource had accepted, was greater than `token`.
 */
export type FencedWriteOp = OperationRecord<
  'fencedWrite',
  { lock: string; token: number; value: JsonValue },
  { rejected?: false } | { rejected: true; fence: number }
>;

export type Operation =
  | AcquireOp
  | TryAcquireOp
  | ReleaseOp
  | ReadOp
  | SessionExpiredOp
  | CampaignOp
  | ProclaimOp
  | ResignOp
  | LeaderOp
  | FencedWriteOp;

export type OpType = Operation['op'];

export const OP_TYPES: readonly OpType[] = [
  'acquire',
  'tryAcquire',
  'release',
  'read',
  'sessionExpired',
  'campaign',
  'proclaim',
  'resign',
  'leader',
  'fencedWrite',
];

const OPS_NEEDING_SESSION: ReadonlySet<OpType> = new Set(['acquire', 'tryAcquire', 'release', 'campaign', 'proclaim', 'resign']);

export class HistoryFormatError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(
      `malformed history (${problems.length} problem${problems.length === 1 ? '' : 's'}): ` +
        problems.slice(0, 10).join('; ') +
        (problems.length > 10 ? '; ...' : ''),
    );
    this.name = 'HistoryFormatError';
  }
}

/** Sessions are compared as strings, so a harness may report them as numbers or strings. */
export function sessionKey(session: SessionId): string {
  return String(session);
}

/** The session an operation acts for (args.session for expiries). */
export function sessionOf(op: Operation): string | undefined {
  if (op.op === 'sessionExpired') return sessionKey(op.args.session);
  return op.session === undefined ? undefined : sessionKey(op.session);
}

/** Canonical JSON (sorted keys) so that election values compare by content. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as JsonValue)}`).join(',')}}`;
}

// ---------------------------------------------------------------------------------------
// Validation: the checker's verdicts are only as good as its input, so a malformed record
// is an error, not something to guess around.

type Problems = string[];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function isFiniteNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}
function isSessionId(v: unknown): v is SessionId {
  return typeof v === 'string' || isFiniteNumber(v);
}
function isMode(v: unknown): v is LockMode {
  return v === 'exclusive' || v === 'shared';
}

function checkArgs(op: OpType, args: Record<string, unknown>, where: string, problems: Problems): void {
  const need = (cond: boolean, what: string): void => {
    if (!cond) problems.push(`${where}: ${what}`);
  };
  switch (op) {
    case 'acquire':
    case 'tryAcquire':
      need(typeof args['lock'] === 'string', 'args.lock must be a string');
      need(isMode(args['mode']), "args.mode must be 'exclusive' or 'shared'");
      need(args['limit'] === undefined || (isFiniteNumber(args['limit']) && args['limit'] >= 1), 'args.limit must be a number >= 1');
      break;
    case 'release':
      need(typeof args['lock'] === 'string', 'args.lock must be a string');
      need(isFiniteNumber(args['token']), 'args.token must be a number');
      break;
    case 'read':
      need(typeof args['lock'] === 'string', 'args.lock must be a string');
      break;
    case 'sessionExpired':
      need(isSessionId(args['session']), 'args.session must be a string or number');
      break;
    case 'campaign':
      need(typeof args['election'] === 'string', 'args.election must be a string');
      need('value' in args, 'args.value is required');
      break;
    case 'proclaim':
      need(typeof args['election'] === 'string', 'args.election must be a string');
      need('value' in args, 'args.value is required');
      need(args['token'] === undefined || isFiniteNumber(args['token']), 'args.token must be a number');
      break;
    case 'resign':
      need(typeof args['election'] === 'string', 'args.election must be a string');
      need(args['token'] === undefined || isFiniteNumber(args['token']), 'args.token must be a number');
      break;
    case 'leader':
      need(typeof args['election'] === 'string', 'args.election must be a string');
      break;
    case 'fencedWrite':
      need(typeof args['lock'] === 'string', 'args.lock must be a string');
      need(isFiniteNumber(args['token']), 'args.token must be a number');
      break;
  }
}

function checkOkResult(op: OpType, result: unknown, where: string, problems: Problems): void {
  const fail = (what: string): void => {
    problems.push(`${where}: ok ${op} ${what}`);
  };
  switch (op) {
    case 'acquire':
    case 'campaign':
      if (!isRecord(result) || !isFiniteNumber(result['token'])) fail('needs result {token: number}');
      break;
    case 'tryAcquire':
      if (!isRecord(result) || typeof result['granted'] !== 'boolean') fail('needs result {granted: boolean, token?}');
      else if (result['granted'] === true && !isFiniteNumber(result['token'])) fail('granted needs result.token');
      break;
    case 'read':
      if (!isRecord(result) || !Array.isArray(result['holders'])) fail('needs result {holders: [{session, token}]}');
      else if (!result['holders'].every((h) => isRecord(h) && isSessionId(h['session']) && isFiniteNumber(h['token'])))
        fail('has a holder without {session, token: number}');
      break;
    case 'leader': {
      if (!isRecord(result) || !('leader' in result)) {
        fail('needs result {leader: {session, token, value} | null}');
        break;
      }
      const leader = result['leader'];
      if (leader !== null && !(isRecord(leader) && isSessionId(leader['session']) && isFiniteNumber(leader['token']) && 'value' in leader))
        fail('result.leader must be null or {session, token: number, value}');
      break;
    }
    case 'fencedWrite':
      if (result !== undefined) {
        if (!isRecord(result)) fail('result must be an object');
        else if (result['rejected'] === true && !isFiniteNumber(result['fence'])) fail('rejected needs result.fence');
      }
      break;
    default:
      break;
  }
}

/**
 * Checks one record's shape and returns it typed. `where` prefixes the problems, e.g.
 * "line 12". Cross-record rules (unique ids) are in validateHistory.
 */
export function parseOperation(raw: unknown, where: string, problems: Problems = []): Operation | undefined {
  const before = problems.length;
  if (!isRecord(raw)) {
    problems.push(`${where}: not an object`);
    return undefined;
  }
  const op = raw['op'];
  if (typeof op !== 'string' || !(OP_TYPES as readonly string[]).includes(op)) {
    problems.push(`${where}: op must be one of ${OP_TYPES.join(', ')}`);
    return undefined;
  }
  const opType = op as OpType;
  const label = `${where} (${op} #${String(raw['id'])})`;
  if (!(typeof raw['id'] === 'string' || isFiniteNumber(raw['id']))) problems.push(`${label}: id must be a string or number`);
  if (!(typeof raw['process'] === 'string' || isFiniteNumber(raw['process']))) problems.push(`${label}: process must be a string or number`);
  if (raw['session'] !== undefined && !isSessionId(raw['session'])) problems.push(`${label}: session must be a string or number`);
  if (OPS_NEEDING_SESSION.has(opType) && raw['session'] === undefined) problems.push(`${label}: session is required for ${op}`);
  if (!isRecord(raw['args'])) problems.push(`${label}: args must be an object`);
  else checkArgs(opType, raw['args'], label, problems);
  const outcome = raw['outcome'];
  if (outcome !== 'ok' && outcome !== 'fail' && outcome !== 'unknown') problems.push(`${label}: outcome must be ok, fail or unknown`);
  if (!isFiniteNumber(raw['invokeMs'])) problems.push(`${label}: invokeMs must be a finite number`);
  const complete = raw['completeMs'];
  if (complete === null || complete === undefined) {
    if (outcome !== 'unknown') problems.push(`${label}: completeMs is required unless outcome is unknown`);
  } else if (!isFiniteNumber(complete)) {
    problems.push(`${label}: completeMs must be a finite number or null`);
  } else if (isFiniteNumber(raw['invokeMs']) && complete < raw['invokeMs']) {
    problems.push(`${label}: completeMs precedes invokeMs`);
  }
  if (outcome === 'ok') checkOkResult(opType, raw['result'], label, problems);
  if (problems.length > before) return undefined;
  // Normalise a missing completeMs to null so that consumers see one shape.
  return { ...(raw as unknown as Operation), completeMs: (complete ?? null) as number | null };
}

/** Every problem in a history; empty when it is well formed. */
export function historyProblems(history: readonly unknown[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  history.forEach((raw, i) => {
    parseOperation(raw, `record ${i}`, problems);
    if (!isRecord(raw) || !(typeof raw['id'] === 'string' || isFiniteNumber(raw['id']))) return;
    const idKey = `${typeof raw['id']}:${String(raw['id'])}`;
    if (seen.has(idKey)) problems.push(`record ${i}: duplicate id ${String(raw['id'])}`);
    seen.add(idKey);
  });
  return problems;
}

/** Throws HistoryFormatError listing every problem when the history is malformed. */
export function validateHistory(history: readonly unknown[]): asserts history is readonly Operation[] {
  const problems = historyProblems(history);
  if (problems.length > 0) throw new HistoryFormatError(problems);
}

// ---------------------------------------------------------------------------------------
// JSONL: one operation per line, the format a harness appends to as it runs.

export function parseHistoryJsonl(text: string): Operation[] {
  const problems: string[] = [];
  const ops: Operation[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(trimmed);
    } catch (err) {
      problems.push(`line ${i + 1}: invalid JSON (${(err as Error).message})`);
      return;
    }
    const op = parseOperation(raw, `line ${i + 1}`, problems);
    if (isRecord(raw) && (typeof raw['id'] === 'string' || isFiniteNumber(raw['id']))) {
      const idKey = `${typeof raw['id']}:${String(raw['id'])}`;
      const first = seen.get(idKey);
      if (first !== undefined) problems.push(`line ${i + 1}: duplicate id ${String(raw['id'])} (first on line ${first})`);
      else seen.set(idKey, i + 1);
    }
    if (op !== undefined) ops.push(op);
  });
  if (problems.length > 0) throw new HistoryFormatError(problems);
  return ops;
}

export function formatHistoryJsonl(ops: readonly Operation[]): string {
  return ops.map((op) => JSON.stringify(op)).join('\n') + (ops.length > 0 ? '\n' : '');
}

export async function readHistoryJsonl(path: string): Promise<Operation[]> {
  return parseHistoryJsonl(await readFile(path, 'utf8'));
}

export async function writeHistoryJsonl(path: string, ops: readonly Operation[]): Promise<void> {
  await writeFile(path, formatHistoryJsonl(ops), 'utf8');
}
