// The vocabulary of the Raft core: what it persists, what it sends, what it hands to the
// application. Everything here is plain data so that storage and transport can encode it
// (msgpackr) without knowing the core's internals.

/** A member's id, as in cluster.config.json ("n1", "n2", ...). */
export type NodeId = string;

/** `normal` carries application data (empty data = the leader's no-op); `conf` a ConfChange. */
export type EntryType = 'normal' | 'conf';

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** What must survive a crash besides the log (paper, Figure 2: currentTerm, votedFor). */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId | null;
  readonly commit: number;
}

/** The membership in effect. Learners receive the log but never vote nor count in quorums. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  readonly conf: ConfState;
}

export interface Snapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
}

/** Single-server membership changes (Ongaro's thesis, §4.1), carried in `conf` entries. */
export type ConfChangeType = 'addLearner' | 'promote' | 'remove';

export interface ConfChange {
  readonly type: ConfChangeType;
  readonly node: NodeId;
  /** Opaque to the core: the server keeps peer and client URLs here. */
  readonly context?: Uint8Array;
}

export type MessageType =
  | 'app' // AppendEntries
  | 'appResp'
  | 'heartbeat'
  | 'heartbeatResp'
  | 'vote' // RequestVote
  | 'voteResp'
  | 'preVote'
  | 'preVoteResp'
  | 'snap' // InstallSnapshot (one chunk)
  | 'snapResp'
  | 'timeoutNow' // leadership transfer: start an election now
  | 'readIndex' // a follower asks the leader for a read index
  | 'readIndexResp';

export interface Message {
  readonly type: MessageType;
  readonly from: NodeId;
  readonly to: NodeId;
  /** Sender's term; for preVote it is the term the sender would campaign in. */
  readonly term: number;
  /** app: index/term of the entry preceding `entries`; vote/preVote: candidate's last log index/term. */
  readonly index?: number;
  readonly logTerm?: number;
  readonly entries?: readonly Entry[];
  /** Leader's commit index (app, heartbeat). */
  readonly commit?: number;
  /** appResp/voteResp/snapResp: request refused. */
  readonly reject?: boolean;
  /** appResp on reject: follower's hint for fast backtracking (conflict index and its term). */
  readonly rejectHint?: number;
  readonly rejectTerm?: number;
  /** heartbeat/heartbeatResp/readIndex/readIndexResp: ReadIndex request context. */
  readonly context?: Uint8Array;
  /** snap: the chunk. */
  readonly snapshot?: SnapshotChunk;
  /** snapResp: bytes of the snapshot received so far (the next chunk's offset). */
  readonly offset?: number;
  /** vote: sent on TimeoutNow (leadership transfer), so voters skip the leader-lease check. */
  readonly transfer?: boolean;
}

/** InstallSnapshot sends the snapshot in bounded chunks; the follower reassembles them. */
export interface SnapshotChunk {
  readonly meta: SnapshotMeta;
  readonly offset: number;
  readonly total: number;
  readonly data: Uint8Array;
  readonly done: boolean;
}

export type Role = 'follower' | 'candidate' | 'preCandidate' | 'leader' | 'learner';

export interface SoftState {
  readonly leader: NodeId | null;
  readonly role: Role;
}

/** A linearizable read may be served once the applied index reaches `index`. */
export interface ReadState {
  readonly index: number;
  readonly context: Uint8Array;
}

/**
 * One batch of work for the driver. Order of duties (ReadyPlanner decides 1-3; RaftDriver,
 * which production and the simulator both run, does them in this order):
 * 1. send the leader's replication (AppendEntries, heartbeats, snapshot chunks, TimeoutNow)
 *    BEFORE the write: it promises nothing about this node's disk (thesis §10.2.1), and the
 *    leader counts its own entries towards a commit only in a later Ready;
 * 2. store `snapshot`, append `entries` and write `hardState` durably, in one sync batch
 *    (a Ready that only moves the commit index skips the write: the commit index is
 *    recoverable, and rides with the next write);
 * 3. only once that write is durable, send the other `messages` (votes and append
 *    acknowledgements are promises about step 2);
 * 4. take `softState`, restore the state machine from `snapshot`, apply `committedEntries`,
 *    then serve `readStates` (applied up to their index);
 * 5. call `advance(ready)`.
 */
export interface Ready {
  readonly softState?: SoftState;
  readonly hardState?: HardState;
  readonly snapshot?: Snapshot;
  readonly entries: readonly Entry[];
  readonly committedEntries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly readStates: readonly ReadState[];
  /** Leadership was lost or a read could not be served: these ReadIndex contexts failed. */
  readonly droppedReads: readonly Uint8Array[];
}

/** The random source the caller passes in: uniform integer in [0, n). */
export type RandomInt = (n: number) => number;

export interface RaftConfig {
  readonly id: NodeId;
  /** Ticks between heartbeats a leader sends. */
  readonly heartbeatTicks: number;
  /** Base election timeout in ticks; the effective one is drawn from [base, 2*base). */
  readonly electionTicks: number;
  readonly random: RandomInt;
  readonly preVote?: boolean; // default true
  readonly checkQuorum?: boolean; // default true
  /** Max bytes of entry data in one AppendEntries. */
  readonly maxMsgBytes?: number;
  /** Max AppendEntries in flight to one follower (pipelining window). */
  readonly maxInflight?: number;
  /** Max bytes of snapshot data per InstallSnapshot chunk. */
  readonly snapshotChunkBytes?: number;
}

/** What a node restarts from: everything its storage made durable, nothing else. */
export interface RaftInitialState {
  readonly hardState: HardState;
  /** The initial membership when there is no snapshot (a fresh cluster). */
  readonly conf: ConfState;
  readonly snapshot?: Snapshot;
  /** Entries after the snapshot, in order. */
  readonly entries: readonly Entry[];
  /** Highest index the application has already applied (e.g. from its own snapshot). */
  readonly applied?: number;
}
