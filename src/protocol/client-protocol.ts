// The client protocol: what travels between an SDK (or any client) and a node's client port.
// Each ws binary message is one msgpack-encoded frame. docs/protocol.md is the prose version.
//
//   request   {id, op, ...fields}
//   response  {id, ok: true, result} | {id, ok: false, error: {code, message, leaderHint?}}
//   event     {event, index, ...fields}            (server-pushed, no id)
//
// This module holds only types and constants so that both the client (src/client) and the
// server (src/server) can import it without importing each other. The words it shares with
// the lock machine (LockMode, Fence, Holder, KvEntry) are defined once, in
// src/lockfsm/vocabulary.ts (declarations only, imported as types: why there, see that file).
import type { Fence, Holder, KvEntry, LockMode, TxnCompare, TxnOp } from '../lockfsm/vocabulary.js';

export type { Fence, Holder, KvEntry, LockMode, TxnCompare, TxnOp };

export const PROTOCOL_VERSION = 1;

/** Most UTF-8 bytes in any string field (names, keys, prefixes, election values, tokens). */
export const MAX_STRING_BYTES = 4096;

/** The largest frame a node accepts from a client unless configured otherwise. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;
/** Sessions one keepAlives frame may renew: about 9 KB of ids, and one owner check and one
 *  lease update each, so a frame costs the node a bounded amount like any other. */
export const MAX_KEEPALIVE_SESSIONS = 1_000;

/** WebSocket close codes a node closes a client connection with (docs/protocol.md). */
export const CLOSE_CODES = {
  /** The node is shutting down or the connection is no longer wanted. */
  GOING_AWAY: 1001,
  /** A text frame: the protocol speaks binary frames only. */
  UNSUPPORTED_DATA: 1003,
  /** A frame that is not one msgpack value, or carries no usable request id. */
  BAD_FRAME: 1007,
  /** A frame larger than the node accepts (after a FRAME_TOO_LARGE error when the id was readable). */
  FRAME_TOO_LARGE: 1009,
  /** A client that did not authenticate in time (reason `HELLO_TIMEOUT: ...`). */
  POLICY_VIOLATION: 1008,
  /** Too many connections from this client address (reason `TOO_MANY_CONNECTIONS: ...`). */
  TRY_AGAIN_LATER: 1013,
} as const;

/** Error codes a node answers with. NOT_LEADER never reaches SDK users: the SDK retries. */
export type ErrorCode =
  | 'BAD_FRAME' // undecodable or not an object
  | 'FRAME_TOO_LARGE'
  | 'UNKNOWN_OP'
  | 'INVALID_ARGUMENT'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_LEADER'
  | 'UNAVAILABLE' // no leader known / quorum lost / node shutting down
  | 'TIMEOUT' // the operation's outcome is unknown: it may or may not have happened
  | 'UNKNOWN_SESSION' // session expired or closed (the SDK calls it SessionExpired)
  | 'NOT_HOLDER'
  | 'FENCED'
  | 'STALE_SEQUENCE'
  | 'LIMIT_EXCEEDED'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'COMPACTED' // a watch asked to resume from a revision the history no longer holds (compactRevision)
  | 'INTERNAL';

export interface WireError {
  readonly code: ErrorCode;
  readonly message: string;
  /** Id and client URL of the leader, when known (on NOT_LEADER and UNAVAILABLE). */
  readonly leaderHint?: { readonly id: string; readonly clientUrl: string };
  /** FENCED, NOT_HOLDER, CONFLICT on a lock: the token the lock has now (null when free). */
  readonly currentToken?: number | null;
  /** CONFLICT on ifRevision: the key's revision now (0 = absent). */
  readonly currentRevision?: number;
  /** COMPACTED: the oldest revision a watch may resume from now. */
  readonly compactRevision?: number;
}

/** Fields every session-scoped write carries, for exactly-once application (thesis §6.3). */
export interface Sequenced {
  readonly session: number;
  /** Per-session request number, from 1; a retry re-sends the same seq. */
  readonly seq: number;
  /** Every seq <= ackedSeq has been answered; the node may forget those results. */
  readonly ackedSeq?: number;
}

export type Request =
  /** With `challenge` (and no token), a challenge hello: the node proves it holds the digest of the
   *  client's token (`proof` in the result, src/protocol/node-proof.ts) and authenticates
   *  nothing; the client sends its token in a second hello only once the proof checks. */
  | { id: number; op: 'hello'; version: number; token?: string; challenge?: HelloChallenge }
  | { id: number; op: 'status' }
  | { id: number; op: 'openSession'; ttlMs?: number; label?: string }
  | { id: number; op: 'attach'; session: number }
  | { id: number; op: 'keepAlive'; session: number }
  /** One frame renews many sessions (at most MAX_KEEPALIVE_SESSIONS): for clients that
   *  multiplex sessions over one connection. */
  | { id: number; op: 'keepAlives'; sessions: readonly number[] }
  | ({ id: number; op: 'closeSession' } & Sequenced)
  | ({
      id: number;
      op: 'acquire';
      name: string;
      mode: LockMode;
      limit?: number;
      wait: boolean;
      lockDelayMs?: number;
    } & Sequenced)
  | ({ id: number; op: 'release'; name: string; token: number } & Sequenced)
  | ({ id: number; op: 'cancelWait'; name: string } & Sequenced)
  | { id: number; op: 'get'; name: string }
  | { id: number; op: 'locks'; prefix?: string; limit?: number }
  | ({ id: number; op: 'campaign'; election: string; value: string } & Sequenced)
  | ({ id: number; op: 'proclaim'; election: string; token: number; value: string } & Sequenced)
  /** With `token` the leader steps down; without it a queued candidate withdraws. */
  | ({ id: number; op: 'resign'; election: string; token?: number } & Sequenced)
  | { id: number; op: 'leader'; election: string }
  | { id: number; op: 'observe'; election: string }
  | { id: number; op: 'unobserve'; election: string }
  /** `ephemeral`: the key is deleted in the entry that ends this session (close, expiry, revoke). */
  | ({ id: number; op: 'put'; key: string; value: Uint8Array; fence?: Fence; ifRevision?: number; ephemeral?: boolean } & Sequenced)
  | ({ id: number; op: 'delete'; key: string; fence?: Fence; ifRevision?: number } & Sequenced)
  /** If every compare holds, the success writes apply, else the failure writes: one entry. */
  | ({ id: number; op: 'txn'; compare: readonly TxnCompare[]; success: readonly TxnOp[]; failure: readonly TxnOp[]; fence?: Fence } & Sequenced)
  | { id: number; op: 'kvGet'; key: string }
  /** Without fromRevision or snapshot: the prefix's entries (as in version 1 of this op).
   *  `snapshot`: the entries and the revision they reflect. `fromRevision`: every change
   *  after that revision, or COMPACTED. Changes after the answer arrive as kvChanged. */
  | { id: number; op: 'watch'; prefix: string; fromRevision?: number; snapshot?: boolean }
  | { id: number; op: 'unwatch'; prefix: string }
  | ({ id: number; op: 'beginOp'; opKey: string; fence: Fence; retry?: boolean } & Sequenced)
  | ({ id: number; op: 'completeOp'; opKey: string; result: Uint8Array; fence: Fence } & Sequenced)
  /** Open sessions, by id (those above `after`: the next page), whose label starts with
   *  `prefix`: each with its owner, TTL, time since its lease was last renewed, and what it
   *  holds, waits for, leads and ties. A token that is not an admin token sees only its own
   *  sessions (`owner` is then its name). */
  | { id: number; op: 'sessions'; prefix?: string; owner?: string; limit?: number; after?: number }
  | { id: number; op: 'sessionInfo'; session: number }
  // ---- administration ----
  /** End a session as an expiry would (admin): lock-delay applies, its holders are told. */
  | { id: number; op: 'revokeSession'; session: number; reason: string }
  /** The membership in effect (from the log): ids, URLs and whether each votes. */
  | { id: number; op: 'members' }
  /** Add a node as a non-voting learner; the leader promotes it once it has caught up. */
  | { id: number; op: 'addMember'; member: string; peerUrl: string; clientUrl: string }
  | { id: number; op: 'removeMember'; member: string }
  /** Hand leadership to `to` (default: the most caught-up voter). */
  | { id: number; op: 'transferLeader'; to?: string }
  /** Snapshot the node that receives this now and compact its log; with `backup`, instead
   *  write a backup file of the lock machine's state after a linearizable read (`palisade
   *  snapshot save`) and answer its first chunk; with `backupId` and `offset`, answer the
   *  chunk of that file at `offset` (the file stays on the node only while it is read). */
  | { id: number; op: 'snapshot'; backup?: boolean; backupId?: string; offset?: number }
  /** The cluster's replicated settings (docs/operations.md, "Cluster settings"). */
  | { id: number; op: 'config' }
  /** Change some of them, by their config-file keys: one committed entry, applied by every node. */
  | { id: number; op: 'configure'; settings: Readonly<Record<string, number>> };

type WithoutId<R> = R extends unknown ? Omit<R, 'id'> : never;
/** A request as a caller builds it; whoever sends it assigns the frame id. */
export type RequestBody = WithoutId<Request>;

// The op list, the write ops, each op's permission and result: ops.ts (one table).

// ---- results --------------------------------------------------------------------------

/** Bytes of a challenge's token id and nonce, and of the node's proof (node-proof.ts). */
export const TOKEN_ID_BYTES = 16;
export const NONCE_BYTES = 16;
export const PROOF_BYTES = 32;

/** A challenge hello's question: which token (its id, node-proof.ts tokenIdOf) and a fresh nonce. */
export interface HelloChallenge {
  readonly tokenId: Uint8Array;
  readonly nonce: Uint8Array;
}

export interface HelloResult {
  readonly nodeId: string;
  readonly clusterId: string;
  readonly leader: string | null;
  /** The voters and their client URLs (learners are not listed until promoted). */
  readonly members: readonly { readonly id: string; readonly clientUrl: string }[];
  /** The answer to a challenge (absent on an ordinary hello, and where auth is off). */
  readonly proof?: Uint8Array;
  /** The cluster's Raft timing, so that clients notice a silent node at the cluster's pace
   *  (absent from older nodes). */
  readonly timing?: { readonly heartbeatMs: number; readonly electionTimeoutMs: number };
}

export interface NodeStatus {
  readonly id: string;
  readonly role: 'leader' | 'follower' | 'candidate' | 'learner';
  readonly term: number;
  readonly leader: string | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly members: readonly string[];
  readonly pid: number;
  /** What needs an operator: members not catching up, peers refused for another storage
   *  identity, this node's peer address differing from the recorded one (absent: none). */
  readonly warnings?: readonly string[];
  /** The latest checkpoint's state digest and the peers whose digest of it agrees (absent
   *  before the first checkpoint, and from older nodes). */
  readonly stateDigest?: { readonly index: number; readonly digest: string; readonly agreeing: readonly string[] };
  // For operators (palisade status --json); clients decide nothing by them, so a node that
  // leaves them out (an older one, a test's fake) still answers a usable status.
  readonly lastIndex?: number;
  readonly snapshotIndex?: number;
  /** Sessions this node keeps leases for (the leader: all of them). */
  readonly sessions?: number;
  /** The Raft driver's, storage's and transport's counters. */
  readonly driver?: Readonly<Record<string, number>>;
  readonly transport?: Readonly<Record<string, number>>;
}

/** The cluster's settings by their config-file keys ('sessions.lockDelayMs': 15000, ...).
 *  `configured`: false until the first leader has seeded them (the defaults show until then). */
export interface ClusterSettings {
  readonly settings: Readonly<Record<string, number>>;
  readonly configured: boolean;
}

export interface TxnResult {
  readonly succeeded: boolean;
  /** Positions (from 0) of the compares that did not hold. */
  readonly failed: readonly number[];
  /** One per write of the branch that ran: a put's revision (the entry's index), or whether a delete found its key. */
  readonly results: readonly ({ readonly op: 'put'; readonly revision: number } | { readonly op: 'delete'; readonly existed: boolean })[];
  /** The entry that applied the transaction: the revision of each of its changes (a retry
   *  answers the first entry's, while `index` is the retry's own). */
  readonly revision: number;
  readonly index: number;
}

/** An open session as an operator sees it. */
export interface SessionView {
  readonly session: number;
  readonly label: string | null;
  /** The token name that opened it (null: opened without authentication). */
  readonly owner: string | null;
  readonly ttlMs: number;
  /** Since the leader last renewed its lease (a keepalive, or the leader taking office),
   *  and what is left of it; null when the answering node keeps no leases (not the leader). */
  readonly sinceKeepAliveMs: number | null;
  readonly leaseLeftMs: number | null;
  readonly locks: readonly { readonly name: string; readonly token: number; readonly mode: LockMode }[];
  readonly waits: readonly { readonly name: string; readonly mode: LockMode }[];
  readonly elections: readonly string[];
  readonly ephemeralKeys: readonly string[];
}

/** A change under a watched prefix: value null = deleted; revision = the entry's index. */
export interface KvChange {
  readonly key: string;
  readonly value: Uint8Array | null;
  readonly revision: number;
}

/** `watch` with `snapshot`: the prefix's entries (at most 1000; `truncated` when there are
 *  more) as of `revision`; changes after it follow as events. */
export interface WatchSnapshot {
  readonly revision: number;
  readonly entries: readonly KvEntry[];
  readonly truncated: boolean;
}

/** `watch` with `fromRevision`: the changes after it up to `revision`, oldest first; with
 *  `more`, ask again from `revision` (a page ends between revisions). */
export interface WatchReplay {
  readonly revision: number;
  readonly changes: readonly KvChange[];
  readonly more: boolean;
}

export interface MemberInfo {
  readonly id: string;
  readonly peerUrl: string;
  readonly clientUrl: string;
  readonly voter: boolean;
}

export interface SessionResult {
  readonly session: number;
  readonly ttlMs: number;
}

export type AcquireResult =
  | { readonly status: 'granted'; readonly token: number; readonly index: number }
  | { readonly status: 'queued'; readonly position: number; readonly index: number }
  | {
      readonly status: 'busy';
      readonly holders: readonly Holder[];
      readonly index: number;
      /** True when lock-delay holds the lock back (possibly with nobody holding it). */
      readonly delayed?: boolean;
    };

export interface LockInfo {
  readonly name: string;
  readonly holders: readonly Holder[];
  readonly waiters: readonly { readonly session: number; readonly mode: LockMode }[];
  readonly limit: number | null;
  /** True while the lock is held back by lock-delay after its holder's session expired. */
  readonly delayed: boolean;
}

export type CampaignResult =
  | { readonly status: 'leader'; readonly token: number; readonly index: number }
  | { readonly status: 'queued'; readonly position: number; readonly index: number };

export interface ElectionLeader {
  readonly election: string;
  readonly leader: number | null; // the leading session
  readonly value: string | null;
  readonly token: number | null;
}

export type BeginOpResult =
  | { readonly status: 'run'; readonly idempotencyKey: string; readonly attempt: number }
  | { readonly status: 'done'; readonly idempotencyKey: string; readonly result: Uint8Array }
  | { readonly status: 'inDoubt'; readonly idempotencyKey: string; readonly attempt: number; readonly token: number };

// ---- events ---------------------------------------------------------------------------

/** Every event carries the log index of the entry that produced it, so a client can order
 *  events against responses (which carry `index` too). */
export type ServerEvent =
  | { event: 'granted'; index: number; session: number; name: string; token: number; mode: LockMode }
  | { event: 'released'; index: number; session: number; name: string; token: number; reason: 'release' | 'close' | 'expire' | 'cancel' }
  /** reason (absent from older nodes: `expire`): `revoke` when an operator ended it, with
   *  their words (`detail`) and token name (`by`) when given. */
  | { event: 'sessionExpired'; index: number; session: number; reason?: 'expire' | 'revoke'; detail?: string; by?: string }
  | { event: 'electionChanged'; index: number; election: string; leader: number | null; value: string | null; token: number | null }
  | { event: 'kvChanged'; index: number; key: string; value: Uint8Array | null; revision: number };

/** A response frame as decoded: which op it answers is known only to whoever sent the
 *  request with that id, so its result is read there (ops.ts ResultByOp says its shape). */
export type Response =
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | { readonly id: number; readonly ok: false; readonly error: WireError };

export type ServerFrame = Response | ServerEvent;
