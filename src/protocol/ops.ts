// The one table of client-protocol ops. Everything that depends on "which op is this" is
// derived from it: the op list the validator accepts, the write ops a follower forwards and
// the leader proposes, the permission a token needs for each op (src/server/api/auth.ts), and
// the result each op answers with (ResultByOp), which the server builds typed and the SDK
// reads. A new op is one row here and one in ResultByOp; the compiler then points at every
// switch that must learn it.
export type { KvChange };
import type {
  AcquireResult,
  BeginOpResult,
  CampaignResult,
  ClusterSettings,
  KvChange,
  ElectionLeader,
  HelloResult,
  KvEntry,
  LockInfo,
  MemberInfo,
  NodeStatus,
  Request,
  SessionResult,
  SessionView,
  TxnResult,
  WatchReplay,
  WatchSnapshot,
  WireError,
} from './client-protocol.js';

export type Op = Request['op'];

/**
 * What a token must be allowed, beyond its name prefixes (checked per request):
 * - `read`:  any authenticated token. openSession is one: a read-only client needs a
 *            session for the SDK to work, and an empty session changes nothing.
 * - `write`: a token that is not read-only (the op changes locks, elections, keys or the ledger).
 * - `admin`: an admin token (the op changes the cluster itself).
 */
export type Permission = 'read' | 'write' | 'admin';

interface OpSpec {
  /** A lock-machine command: proposed to the log on the leader, forwarded by a follower. */
  readonly write: boolean;
  readonly permission: Permission;
}

const read = { write: false, permission: 'read' } as const;
const write = { write: true, permission: 'write' } as const;
const admin = { write: false, permission: 'admin' } as const;

/** Every op, in the order docs/protocol.md lists them. */
export const OP_TABLE = {
  hello: read,
  status: read,
  openSession: { write: true, permission: 'read' },
  attach: read,
  keepAlive: read,
  keepAlives: read,
  closeSession: write,
  acquire: write,
  release: write,
  cancelWait: write,
  get: read,
  locks: read,
  campaign: write,
  proclaim: write,
  resign: write,
  leader: read,
  observe: read,
  unobserve: read,
  put: write,
  delete: write,
  txn: write,
  kvGet: read,
  watch: read,
  unwatch: read,
  beginOp: write,
  completeOp: write,
  sessions: read,
  sessionInfo: read,
  members: read,
  // A lock-machine command (proposed and forwarded like any write) that only an admin may send.
  revokeSession: { write: true, permission: 'admin' },
  addMember: admin,
  removeMember: admin,
  transferLeader: admin,
  snapshot: admin,
  config: read,
  // A lock-machine command (proposed and forwarded like any write) that only an admin may send.
  configure: { write: true, permission: 'admin' },
} as const satisfies { readonly [O in Op]: OpSpec };

type Table = typeof OP_TABLE;

/** The ops that are lock-machine commands (OP_TABLE's `write`). */
export type WriteOp = { [O in Op]: Table[O]['write'] extends true ? O : never }[Op];
export type WriteRequest = Extract<Request, { op: WriteOp }>;

// Object.keys loses the key type; `satisfies` above made the keys exactly Op.
export const OPS: readonly Op[] = Object.keys(OP_TABLE) as Op[];

// Both lookups below accept an op that is not in the table (a request built in-process
// without parseRequest): it is no write, and needs no more than any op, so that the
// dispatcher answers UNKNOWN_OP for it rather than a misleading refusal or a crash.

/** Whether `op` changes replicated state through the lock machine (a follower forwards it). */
export function isWriteOp(op: Op): op is WriteOp {
  return Object.hasOwn(OP_TABLE, op) && OP_TABLE[op].write;
}

export function isWriteRequest(req: Request): req is WriteRequest {
  return isWriteOp(req.op);
}

export function permissionOf(op: Op): Permission {
  return Object.hasOwn(OP_TABLE, op) ? OP_TABLE[op].permission : 'read';
}

// ---- results ------------------------------------------------------------------------------

/** The log index of the entry that applied a write (events carry it too, for ordering). */
export interface Indexed {
  readonly index: number;
}

/** The answer to `snapshot` with `backup`: one chunk of a backup file (src/backup/format.ts)
 *  of the lock machine's state at a linearizable point, written and keyed by the node. */
export interface BackupChunk {
  /** Names the file on the node that wrote it, for the next chunks. */
  readonly backupId: string;
  readonly clusterId: string;
  readonly node: string;
  readonly index: number;
  readonly term: number;
  /** The whole file's length. */
  readonly bytes: number;
  /** Where `data` starts in the file; the next chunk starts at offset + data.length. */
  readonly offset: number;
  readonly data: Uint8Array;
}

/** An empty map: the op did what it says and has nothing to tell. */
export type Done = Readonly<Record<string, never>>;

/** What each op answers with when it succeeds (docs/protocol.md, "Operations"). */
export interface ResultByOp {
  hello: HelloResult;
  status: NodeStatus;
  openSession: SessionResult;
  attach: { readonly ttlMs: number };
  keepAlive: { readonly ttlMs: number };
  /** Each named session's TTL, in the request's order; null for a session that is not open
   *  (never opened, closed, expired, or another token's). */
  keepAlives: { readonly ttls: readonly (number | null)[] };
  closeSession: Indexed;
  acquire: AcquireResult;
  release: Indexed;
  cancelWait: Indexed;
  get: LockInfo;
  locks: readonly LockInfo[];
  campaign: CampaignResult;
  proclaim: Indexed;
  resign: Indexed;
  leader: ElectionLeader;
  observe: ElectionLeader;
  unobserve: Done;
  put: { readonly revision: number } & Indexed;
  /** revision: the index of the delete when the key existed, else 0. */
  delete: { readonly existed: boolean; readonly revision: number } & Indexed;
  txn: TxnResult;
  kvGet: KvEntry | null;
  /** The entries (a plain watch), or with `snapshot` the entries and their revision, or with
   *  `fromRevision` the changes since. */
  watch: readonly KvEntry[] | WatchSnapshot | WatchReplay;
  unwatch: Done;
  beginOp: BeginOpResult & Indexed;
  completeOp: { readonly idempotencyKey: string } & Indexed;
  sessions: readonly SessionView[];
  sessionInfo: SessionView | null;
  revokeSession: Indexed;
  members: readonly MemberInfo[];
  /** index 0 and `already`: a retry of a change that was applied before. */
  addMember: Indexed & { readonly already?: true };
  removeMember: Indexed & { readonly already?: true };
  /** The leader after the hand-over (this node when it was asked to hand over to itself). */
  transferLeader: { readonly leader: string | null };
  /** The index the log was compacted to, or with `backup` a chunk of a backup file. */
  snapshot: Indexed | BackupChunk;
  config: ClusterSettings;
  /** The settings after the change, and which keys it changed. */
  configure: ClusterSettings & Indexed & { readonly changed: readonly string[] };
}

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Compile-time check that ResultByOp names every op and nothing else. */
export type ResultByOpCoversEveryOp = Same<keyof ResultByOp, Op> extends true ? true : never;
const resultsCoverOps: ResultByOpCoversEveryOp = true;
void resultsCoverOps;

export type ResultOf<O extends Op> = ResultByOp[O];

/** A response without its frame id: what serving one request gives. For a union of ops it
 *  is the union of their answers. */
export type Answer<O extends Op = Op> =
  | { readonly ok: true; readonly result: ResultOf<O> }
  | { readonly ok: false; readonly error: WireError };

/** A success answer for `op`, checked against the op's result type. */
export function answer<O extends Op>(_op: O, result: ResultOf<O>): Answer<O> {
  return { ok: true, result };
}
