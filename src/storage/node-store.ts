// What a node needs of its durable storage: the contract both the LevelDB store
// (raft-storage.ts, production) and the in-memory one (memory-store.ts: in-process clusters
// and the simulator) keep. test/storage/contract.test.ts runs one suite against both.
//
// The rules every implementation keeps:
// - save(w) is durable once it settles (or on return, when it returns undefined), and a
//   later save is durable only after every earlier one is;
// - after a failed save or saveSnapshot nothing more is written (memory and disk may
//   disagree), and every later call fails too;
// - load() gives back, after a restart, exactly what was durable: hard state, the snapshot,
//   and the entries after it, contiguous;
// - compact(i) drops entries at or below i once a snapshot covers them.
import type { ReadyWrite } from '../raft/ready-plan.js';
import type { Entry, HardState, Snapshot } from '../raft/types.js';

export interface LoadedState {
  readonly hardState: HardState;
  readonly snapshot?: Snapshot;
  /** The entries after the snapshot, contiguous, in order. */
  readonly entries: Entry[];
  /** True when open() created the database (a node's first start). */
  readonly isNew: boolean;
}

export interface StorageStats {
  /** Synchronous (fsync'd) writes so far. */
  readonly fsyncs: number;
  /** Bytes of keys and values written so far. */
  readonly bytesWritten: number;
  /** Duration of the last synchronous write, in milliseconds. */
  readonly lastFsyncMs: number;
}

export interface NodeStore {
  /** The identity this data directory drew when it was created (peers record it). */
  readonly storageId: string;
  /** Called with the duration of every synchronous write (the metrics' histogram). */
  onFsync: ((ms: number) => void) | null;
  load(): Promise<LoadedState>;
  save(w: ReadyWrite): Promise<void> | void;
  saveSnapshot(s: Snapshot): Promise<void>;
  compact(upTo: number): Promise<void>;
  /** A node started with --join records that it is joining until it has data. */
  markJoining(): Promise<void>;
  isJoining(): Promise<boolean>;
  peerStorageIds(): Promise<Map<string, string>>;
  recordPeerStorageId(peer: string, storageId: string): Promise<void>;
  forgetPeerStorageId(peer: string): Promise<void>;
  stats(): StorageStats;
  close(): Promise<void>;
}
