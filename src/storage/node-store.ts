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
import type { Snapshot } from '../raft/types.js';
import type { LoadedState, StorageStats } from './raft-storage.js';

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
