// The data directory of a member of a new cluster built from old state (restore, recover):
// one snapshot at the token floor, holding the lock machine as the new cluster starts and
// the member directory, and a hard state at term 1 with everything up to the snapshot
// committed. Every member of the new cluster gets the same snapshot (same index, term and
// bytes), so their logs match from the start, as the bootstrap entries of a founded
// cluster do. The node then starts as it would after installing a snapshot.
import { readdirSync } from 'node:fs';
import type { NodeId, Snapshot } from '../raft/index.js';
import { MemberDirectory, wrapSnapshot, type MemberUrls } from '../storage/members.js';
import { secureDataDir } from '../storage/data-dir.js';
import { RaftStorage } from '../storage/index.js';

export interface NewMember {
  readonly dir: string;
  readonly clusterId: string;
  readonly nodeId: NodeId;
}

export interface NewClusterState {
  /** The token floor: the snapshot's index; the first entry of the new log is floor + 1. */
  readonly floor: number;
  /** LockMachine.snapshot() of the machine after startNewCluster(floor). */
  readonly machine: Uint8Array;
  readonly voters: readonly NodeId[];
  readonly members: readonly (readonly [NodeId, MemberUrls])[];
}

/** Refuses a directory that holds anything: a new member starts from nothing but this. */
export function checkEmptyDir(dir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (entries.length > 0) throw new Error(`${dir} is not empty: move it aside (a new cluster's member starts from an empty directory)`);
}

export async function writeNewMember(m: NewMember, s: NewClusterState): Promise<void> {
  checkEmptyDir(m.dir);
  secureDataDir(m.dir);
  const storage = await RaftStorage.open(m.dir, { clusterId: m.clusterId, nodeId: m.nodeId });
  try {
    const snapshot: Snapshot = {
      meta: { index: s.floor, term: 1, conf: { voters: [...s.voters], learners: [] } },
      data: wrapSnapshot(s.machine, new MemberDirectory(s.members)),
    };
    await storage.save({ hardState: { term: 1, vote: null, commit: s.floor }, entries: [], snapshot });
  } finally {
    await storage.close();
  }
}
