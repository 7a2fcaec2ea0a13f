// What one survivor of a cluster that lost its quorum holds: its data directory read with
// the same checks a starting node makes (identity, every value, the log against its
// watermark), and its log replayed into a lock machine. Every entry it holds is applied,
// including those after the commit index it knew: with the other members gone for good,
// nobody can commit or overwrite them any more, and a client whose write reached this log
// may have been told it succeeded (as etcd's --force-new-cluster does).
import { stat } from 'node:fs/promises';
import { Level } from 'level';
import { LockMachine, type MachineConfig } from '../lockfsm/index.js';
import { unwrapSnapshot } from '../storage/members.js';
import { RaftStorage } from '../storage/index.js';
import { META_KEY } from '../storage/keys.js';
import { decodeMeta, type Identity } from '../storage/records.js';
import { watermarkPath } from '../storage/watermark.js';

export interface SurvivorState {
  readonly identity: Identity;
  /** The last index of its log (entries or snapshot): the machine is applied up to here. */
  readonly lastIndex: number;
  readonly commitIndex: number;
  readonly term: number;
  /** When its log was last made durable (the watermark file's modification time). */
  readonly writtenAtMs: number;
  readonly machine: LockMachine;
}

export async function readSurvivor(dir: string, config: MachineConfig): Promise<SurvivorState> {
  const identity = await readIdentity(dir);
  const storage = await RaftStorage.open(dir, identity);
  let loaded;
  try {
    loaded = await storage.load();
  } finally {
    await storage.close();
  }
  const machine = loaded.snapshot ? LockMachine.restore(unwrapSnapshot(loaded.snapshot.data).machine, config) : new LockMachine(config);
  for (const e of loaded.entries) {
    // Membership changes and leaders' no-ops carry no command; the new cluster's membership
    // comes from its config.
    if (e.type === 'conf' || e.data.length === 0) machine.skip(e.index);
    else machine.applyRaw(e.index, e.data);
  }
  const lastIndex = loaded.entries.at(-1)?.index ?? loaded.snapshot?.meta.index ?? 0;
  const writtenAtMs = (await stat(watermarkPath(dir)).catch(() => null))?.mtimeMs ?? Date.now();
  return { identity, lastIndex, commitIndex: loaded.hardState.commit, term: loaded.hardState.term, writtenAtMs, machine };
}

/** The cluster and node a data directory was created for (its "meta" record). */
async function readIdentity(dir: string): Promise<Identity> {
  const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view', createIfMissing: false });
  try {
    await db.open();
  } catch (e) {
    throw new Error(`${dir}: cannot open the survivor's database (${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}); is its node still running?`);
  }
  try {
    const value = await db.get(META_KEY);
    if (value === undefined) throw new Error(`${dir} holds no identity record: not a Palisade data directory`);
    const meta = decodeMeta(value);
    return { clusterId: meta.clusterId, nodeId: meta.nodeId };
  } finally {
    await db.close();
  }
}
