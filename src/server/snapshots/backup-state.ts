// The answer to `snapshot` with `backup` (`palisade snapshot save`): the lock machine's state
// at a linearizable point. The read barrier makes the state include every entry committed
// before the request arrived; the snapshot is then encoded in the same event-loop turn, so it
// is exactly the state at the applied index it names.
import type { LockMachine } from '../../lockfsm/index.js';
import { SNAPSHOT_FORMAT, SNAPSHOT_VERSION } from '../../lockfsm/index.js';
import type { BackupState } from '../../protocol/ops.js';


export async function backupState(
  node: string,
  clusterId: string,
  linearizable: () => Promise<void>,
  machine: () => LockMachine,
  raft: { readonly term: number },
): Promise<BackupState> {
  await linearizable();
  const m = machine(); // read after the barrier: a snapshot installed meanwhile replaces it
  const data = m.snapshot();
  return { clusterId, node, index: m.appliedIndex, term: raft.term, machineFormat: SNAPSHOT_FORMAT, machineVersion: SNAPSHOT_VERSION, data };
}
