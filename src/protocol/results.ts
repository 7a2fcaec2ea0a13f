// How a client reads each op's answer. A response frame's result arrives as `unknown` (the
// frame says which request it answers, not what shape its result has); the SDK
// (src/client/link.ts ClusterLink.call, and so SessionManager.sequenced) and the one-shot
// rpc of the CLI (rpc.ts) hand it to readAnswer(op, ...), so what reaches their callers is
// ResultOf<op> (ops.ts), checked, never cast.
//
// RESULT_PARSERS is keyed by every op of the protocol's table: an op added to OP_TABLE and
// ResultByOp without a parser here does not compile (with the validator's and the HTTP
// routes' checks; docs/internals.md "Adding an op").
//
// A malformed answer is the node's bug, not the caller's: readAnswer turns it into the
// node's INTERNAL error, which the SDK retries a few times (docs/protocol.md §9). Where a
// field is optional in the type, or was added after the first release (older nodes leave it
// out), the parser fills in what the SDK did before the field existed, as noted at each.
import type {
  AcquireResult,
  BeginOpResult,
  CampaignResult,
  ClusterSettings,
  ElectionLeader,
  HelloResult,
  Holder,
  KvChange,
  KvEntry,
  LockInfo,
  LockMode,
  MemberInfo,
  NodeStatus,
  Response,
  SessionView,
  TxnResult,
  WatchReplay,
  WatchSnapshot,
} from './client-protocol.js';
import type { Answer, BackupChunk, Done, Indexed, Op, ResultOf } from './ops.js';

type Parser<O extends Op> = (v: unknown) => ResultOf<O>;

/** Reads one answer of `op`, or throws Malformed naming what was wrong. */
export function parseResult<O extends Op>(op: O, v: unknown): ResultOf<O> {
  const parse: Parser<O> = RESULT_PARSERS[op];
  return parse(v);
}

/** A response to a request of `op`, its result read: a malformed result is the node's
 *  INTERNAL error, as if it had answered one. */
export function readAnswer<O extends Op>(op: O, response: Response): Answer<O> {
  if (!response.ok) return response;
  try {
    return { ok: true, result: parseResult(op, response.result) };
  } catch (e) {
    if (!(e instanceof Malformed)) throw e;
    return { ok: false, error: { code: 'INTERNAL', message: e.message } };
  }
}

/** An answer that is not its op's result. */
export class Malformed extends Error {
  constructor(what: string) {
    super(`malformed answer: ${what}`);
  }
}

// ---- field readers: each throws Malformed naming the field ---------------------------------

/** A map as msgpack decodes one (not a list, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type Fields = Record<string, unknown>;

function record(v: unknown, what: string): Fields {
  if (!isRecord(v)) throw new Malformed(`${what} is not a map`);
  return v;
}
function num(r: Fields, k: string): number {
  const x = r[k];
  if (typeof x !== 'number') throw new Malformed(`${k} is not a number`);
  return x;
}
function str(r: Fields, k: string): string {
  const x = r[k];
  if (typeof x !== 'string') throw new Malformed(`${k} is not a string`);
  return x;
}
function bool(r: Fields, k: string): boolean {
  const x = r[k];
  if (typeof x !== 'boolean') throw new Malformed(`${k} is not a boolean`);
  return x;
}
function list<T>(r: Fields, k: string, each: (v: unknown) => T): T[] {
  const x = r[k];
  if (!Array.isArray(x)) throw new Malformed(`${k} is not a list`);
  return x.map(each);
}
function numberOrNull(x: unknown): number | null {
  if (x !== null && typeof x !== 'number') throw new Malformed('a list item is neither a number nor null');
  return x;
}
function numOrNull(r: Fields, k: string): number | null {
  return typeof r[k] === 'number' ? (r[k] as number) : null;
}
function strOrNull(r: Fields, k: string): string | null {
  return typeof r[k] === 'string' ? (r[k] as string) : null;
}
function strings(v: unknown): string {
  if (typeof v !== 'string') throw new Malformed('a list item is not a string');
  return v;
}
function mode(r: Fields): LockMode {
  if (r.mode !== 'exclusive' && r.mode !== 'shared') throw new Malformed('mode is not exclusive or shared');
  return r.mode;
}

// ---- shapes shared by several ops ---------------------------------------------------------

function indexed(v: unknown): Indexed {
  return { index: num(record(v, 'the answer'), 'index') };
}

function done(v: unknown): Done {
  record(v, 'the answer');
  return {};
}

function isHolder(h: unknown): h is Holder {
  return isRecord(h) && typeof h.session === 'number' && typeof h.token === 'number' && (h.mode === 'exclusive' || h.mode === 'shared');
}

// Holders and waiters that do not read are left out rather than failing the answer: the SDK
// has always read lock views this way, and a view is advice (a grant's token is what counts).
function holders(r: Fields): Holder[] {
  return Array.isArray(r.holders) ? r.holders.filter(isHolder) : [];
}

function lockInfo(v: unknown): LockInfo {
  const r = record(v, 'a lock');
  return {
    name: str(r, 'name'),
    holders: holders(r),
    waiters: Array.isArray(r.waiters)
      ? r.waiters.filter((w): w is { session: number; mode: LockMode } => isRecord(w) && typeof w.session === 'number' && (w.mode === 'exclusive' || w.mode === 'shared'))
      : [],
    limit: numOrNull(r, 'limit'),
    delayed: r.delayed === true,
  };
}

function electionLeader(v: unknown): ElectionLeader {
  const r = record(v, 'an election');
  return { election: str(r, 'election'), leader: numOrNull(r, 'leader'), value: strOrNull(r, 'value'), token: numOrNull(r, 'token') };
}

function kvEntry(v: unknown): KvEntry {
  const r = record(v, 'a kv entry');
  if (!(r.value instanceof Uint8Array)) throw new Malformed('a kv entry value is not bytes');
  return { key: str(r, 'key'), value: r.value, revision: num(r, 'revision') };
}

function kvChange(v: unknown): KvChange {
  const r = record(v, 'a kv change');
  if (r.value !== null && !(r.value instanceof Uint8Array)) throw new Malformed('a kv change value is not bytes or null');
  return { key: str(r, 'key'), value: r.value, revision: num(r, 'revision') };
}

function watchAnswer(v: unknown): readonly KvEntry[] | WatchSnapshot | WatchReplay {
  // A plain watch (and every watch of a node from before revisions) answers the entries.
  if (Array.isArray(v)) return v.map(kvEntry);
  const r = record(v, 'a watch answer');
  if (Array.isArray(r.entries)) return { revision: num(r, 'revision'), entries: list(r, 'entries', kvEntry), truncated: r.truncated === true };
  return { revision: num(r, 'revision'), changes: list(r, 'changes', kvChange), more: r.more === true };
}

function sessionView(v: unknown): SessionView {
  const r = record(v, 'a session');
  const named = (x: unknown): { name: string; mode: LockMode } => {
    const e = record(x, 'a lock of a session');
    return { name: str(e, 'name'), mode: mode(e) };
  };
  return {
    session: num(r, 'session'),
    label: strOrNull(r, 'label'),
    owner: strOrNull(r, 'owner'),
    ttlMs: num(r, 'ttlMs'),
    sinceKeepAliveMs: numOrNull(r, 'sinceKeepAliveMs'),
    leaseLeftMs: numOrNull(r, 'leaseLeftMs'),
    locks: list(r, 'locks', (x) => ({ ...named(x), token: num(record(x, 'a lock of a session'), 'token') })),
    waits: list(r, 'waits', named),
    elections: list(r, 'elections', strings),
    ephemeralKeys: list(r, 'ephemeralKeys', strings),
  };
}

function memberInfo(v: unknown): MemberInfo {
  const r = record(v, 'a member');
  return { id: str(r, 'id'), peerUrl: str(r, 'peerUrl'), clientUrl: str(r, 'clientUrl'), voter: bool(r, 'voter') };
}

/** `{ [k]: read(r, k) }` when the answer has `k`, else nothing: for the fields the type marks
 *  optional. */
function optional<K extends string, T>(r: Fields, k: K, read: (r: Fields, k: string) => T): { [P in K]?: T } {
  return r[k] === undefined ? {} : ({ [k]: read(r, k) } as { [P in K]?: T });
}

/** A map of names to numbers (settings, counters). */
function counters(r: Fields, k: string): Record<string, number> {
  const m = record(r[k], k);
  for (const [name, x] of Object.entries(m)) if (typeof x !== 'number') throw new Malformed(`${k}.${name} is not a number`);
  return m as Record<string, number>;
}

function clusterSettings(r: Fields): ClusterSettings {
  return { settings: counters(r, 'settings'), configured: bool(r, 'configured') };
}

function memberChange(v: unknown): Indexed & { readonly already?: true } {
  const r = record(v, 'the answer');
  return { index: num(r, 'index'), ...(r.already === true ? { already: true as const } : {}) };
}

function isPositive(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

// ---- one parser per op --------------------------------------------------------------------

const ROLES = new Set<string>(['leader', 'follower', 'candidate', 'learner']);

/** Every op's reader. Keyed by every op: the compiler refuses a missing one. */
export const RESULT_PARSERS: { readonly [O in Op]: Parser<O> } = {
  hello(v): HelloResult {
    const r = record(v, 'hello');
    const members = Array.isArray(r.members)
      ? r.members.filter((m): m is { id: string; clientUrl: string } => isRecord(m) && typeof m.id === 'string' && typeof m.clientUrl === 'string')
      : [];
    const t = isRecord(r.timing) ? r.timing : null;
    // timing: absent from older nodes (the client then paces itself by its own defaults).
    const timing = t && isPositive(t.heartbeatMs) && isPositive(t.electionTimeoutMs) ? { heartbeatMs: t.heartbeatMs, electionTimeoutMs: t.electionTimeoutMs } : undefined;
    return {
      nodeId: str(r, 'nodeId'),
      clusterId: typeof r.clusterId === 'string' ? r.clusterId : '',
      leader: strOrNull(r, 'leader'),
      members,
      ...(timing ? { timing } : {}),
      ...(r.proof instanceof Uint8Array ? { proof: r.proof } : {}),
    };
  },
  status(v): NodeStatus {
    const r = record(v, 'status');
    const role = str(r, 'role');
    if (!ROLES.has(role)) throw new Malformed(`role ${role} is not a role`);
    const d = isRecord(r.stateDigest) ? r.stateDigest : null;
    return {
      id: str(r, 'id'),
      role: role as NodeStatus['role'],
      term: num(r, 'term'),
      leader: strOrNull(r, 'leader'),
      commitIndex: num(r, 'commitIndex'),
      appliedIndex: num(r, 'appliedIndex'),
      members: list(r, 'members', strings),
      pid: num(r, 'pid'),
      ...(Array.isArray(r.warnings) ? { warnings: list(r, 'warnings', strings) } : {}),
      ...(d ? { stateDigest: { index: num(d, 'index'), digest: str(d, 'digest'), agreeing: list(d, 'agreeing', strings) } } : {}),
      ...optional(r, 'lastIndex', num),
      ...optional(r, 'snapshotIndex', num),
      ...optional(r, 'sessions', num),
      ...optional(r, 'driver', counters),
      ...optional(r, 'transport', counters),
    };
  },
  openSession: (v) => {
    const r = record(v, 'the answer');
    return { session: num(r, 'session'), ttlMs: num(r, 'ttlMs') };
  },
  attach: (v) => ({ ttlMs: num(record(v, 'the answer'), 'ttlMs') }),
  keepAlive: (v) => ({ ttlMs: num(record(v, 'the answer'), 'ttlMs') }),
  keepAlives: (v) => ({ ttls: list(record(v, 'the answer'), 'ttls', numberOrNull) }),
  closeSession: indexed,
  acquire(v): AcquireResult {
    const r = record(v, 'the answer');
    const index = num(r, 'index');
    if (r.status === 'granted') return { status: 'granted', token: num(r, 'token'), index };
    // position: a queued answer of an older node may leave it out.
    if (r.status === 'queued') return { status: 'queued', position: numOrNull(r, 'position') ?? 0, index };
    if (r.status === 'busy') return { status: 'busy', holders: holders(r), index, ...(typeof r.delayed === 'boolean' ? { delayed: r.delayed } : {}) };
    throw new Malformed(`acquire status ${String(r.status)}`);
  },
  release: indexed,
  cancelWait: indexed,
  get: lockInfo,
  locks: (v) => {
    if (!Array.isArray(v)) throw new Malformed('locks is not a list');
    return v.map(lockInfo);
  },
  campaign(v): CampaignResult {
    const r = record(v, 'the answer');
    const index = num(r, 'index');
    if (r.status === 'leader') return { status: 'leader', token: num(r, 'token'), index };
    if (r.status === 'queued') return { status: 'queued', position: numOrNull(r, 'position') ?? 0, index };
    throw new Malformed(`campaign status ${String(r.status)}`);
  },
  proclaim: indexed,
  resign: indexed,
  leader: electionLeader,
  observe: electionLeader,
  unobserve: done,
  // revision: absent from a node of the release before revisions (read as 0, as then).
  put: (v) => {
    const r = record(v, 'the answer');
    return { revision: numOrNull(r, 'revision') ?? 0, index: num(r, 'index') };
  },
  delete: (v) => {
    const r = record(v, 'the answer');
    return { existed: r.existed === true, revision: numOrNull(r, 'revision') ?? 0, index: num(r, 'index') };
  },
  txn(v): TxnResult {
    const r = record(v, 'the answer');
    const result = (x: unknown): TxnResult['results'][number] => {
      const w = record(x, 'a txn result');
      if (w.op === 'put') return { op: 'put', revision: num(w, 'revision') };
      if (w.op === 'delete') return { op: 'delete', existed: bool(w, 'existed') };
      throw new Malformed(`txn result op ${String(w.op)}`);
    };
    return {
      succeeded: bool(r, 'succeeded'),
      failed: list(r, 'failed', (x) => {
        if (typeof x !== 'number') throw new Malformed('a failed compare is not a number');
        return x;
      }),
      results: list(r, 'results', result),
      revision: num(r, 'revision'),
      index: num(r, 'index'),
    };
  },
  kvGet: (v) => (v === null || v === undefined ? null : kvEntry(v)),
  watch: watchAnswer,
  unwatch: done,
  beginOp(v): BeginOpResult & Indexed {
    const r = record(v, 'the answer');
    const index = num(r, 'index');
    if (r.status === 'done') {
      if (!(r.result instanceof Uint8Array)) throw new Malformed('a done result is not bytes');
      return { status: 'done', idempotencyKey: str(r, 'idempotencyKey'), result: r.result, index };
    }
    const attempt = numOrNull(r, 'attempt') ?? 0;
    if (r.status === 'run') return { status: 'run', idempotencyKey: str(r, 'idempotencyKey'), attempt, index };
    if (r.status === 'inDoubt') return { status: 'inDoubt', idempotencyKey: str(r, 'idempotencyKey'), attempt, token: numOrNull(r, 'token') ?? 0, index };
    throw new Malformed(`beginOp status ${String(r.status)}`);
  },
  completeOp: (v) => {
    const r = record(v, 'the answer');
    return { idempotencyKey: str(r, 'idempotencyKey'), index: num(r, 'index') };
  },
  sessions: (v) => {
    if (!Array.isArray(v)) throw new Malformed('sessions is not a list');
    return v.map(sessionView);
  },
  sessionInfo: (v) => (v === null || v === undefined ? null : sessionView(v)),
  revokeSession: indexed,
  members: (v) => {
    if (!Array.isArray(v)) throw new Malformed('members is not a list');
    return v.map(memberInfo);
  },
  addMember: memberChange,
  removeMember: memberChange,
  transferLeader: (v) => ({ leader: strOrNull(record(v, 'the answer'), 'leader') }),
  snapshot(v): Indexed | BackupChunk {
    const r = record(v, 'the answer');
    if (r.backupId === undefined) return { index: num(r, 'index') };
    if (!(r.data instanceof Uint8Array)) throw new Malformed('a backup chunk has no data bytes');
    return {
      backupId: str(r, 'backupId'),
      clusterId: str(r, 'clusterId'),
      node: str(r, 'node'),
      index: num(r, 'index'),
      term: num(r, 'term'),
      bytes: num(r, 'bytes'),
      offset: num(r, 'offset'),
      data: r.data,
    };
  },
  config: (v) => clusterSettings(record(v, 'the answer')),
  configure: (v) => {
    const r = record(v, 'the answer');
    return { ...clusterSettings(r), index: num(r, 'index'), changed: list(r, 'changed', strings) };
  },
};
