// `palisade snapshot restore FILE --config NEW.json`: the data directories of a new cluster,
// started from a backup. See docs/operations.md, "Restoring a backup".
import { readBackupFile } from '../backup/file.js';
import { keysFrom } from './backup.js';
import { checkEmptyDir, writeNewMember } from '../backup/new-cluster.js';
import { restoreMachine, summarize } from '../backup/summary.js';
import { tokenFloor } from '../backup/token-floor.js';
import { loadConfig, nodeById } from '../config/cluster-config.js';
import { dataOwnerOf, giveToOwner } from './data-owner.js';

export interface RestoreOptions {
  readonly config: string;
  /** The config of the cluster the backup was taken from, when its secret differs from --config's. */
  readonly fromConfig?: string;
  /** Accept a backup of the unkeyed format 1. */
  readonly trustUnkeyed?: boolean;
  readonly id?: string;
  readonly minToken?: number;
}

export async function restoreCommand(file: string, o: RestoreOptions): Promise<void> {
  // The file must carry the MAC of a secret we were given: the new cluster's, or the old one's.
  const backup = await readBackupFile(file, keysFrom(o.fromConfig !== undefined ? [o.config, o.fromConfig] : [o.config]), { trustUnkeyed: o.trustUnkeyed === true });
  const config = loadConfig(o.config);
  const h = backup.header;
  if (config.clusterId === h.clusterId) {
    throw new Error(
      `${o.config} has the backup's cluster id "${h.clusterId}": a restored cluster is a new cluster and needs a new clusterId ` +
        '(members of the old one must never take it for theirs)',
    );
  }
  // Each member must get the same snapshot. Built on one machine in one run, they do; built
  // one host at a time (--id), the default floor (which depends on the time) would differ.
  if (o.id !== undefined && o.minToken === undefined) {
    throw new Error('--id builds one member: pass the same --min-token on every host (the floor printed by a first restore, or the highest token your resources accepted)');
  }
  const targets = o.id !== undefined ? [nodeById(config, o.id)] : config.nodes;
  for (const n of targets) checkEmptyDir(n.dataDir);

  const before = summarize(backup);
  const { floor, why } = tokenFloor({
    lastIndex: h.index,
    writtenAtMs: Date.parse(h.createdAt),
    nowMs: Date.now(),
    ...(o.minToken !== undefined ? { minToken: o.minToken } : {}),
  });
  const machine = restoreMachine(backup);
  const ended = machine.startNewCluster(floor);
  const state = {
    floor,
    machine: machine.snapshot(),
    voters: config.nodes.map((n) => n.id),
    members: config.nodes.map((n) => [n.id, { peerUrl: n.peerUrl, clientUrl: n.clientUrl }] as const),
  };
  for (const n of targets) {
    const owner = dataOwnerOf(n.dataDir); // before anything of it exists
    await writeNewMember({ dir: n.dataDir, clusterId: config.clusterId, nodeId: n.id }, state);
    if (owner) giveToOwner(n.dataDir, owner);
  }

  const held = before.locks.filter((l) => l.holders.length > 0).length;
  const led = before.elections.filter((e) => e.leader !== null).length;
  process.stdout.write(
    [
      `restored ${file} (cluster ${h.clusterId}, index ${h.index}, taken ${h.createdAt}) as cluster ${config.clusterId}`,
      `token floor ${floor}: ${why}`,
      `every new token will exceed ${floor}; the highest token in the backup is ${before.highestToken}`,
      `kept ${before.keys.length} keys; ended ${ended} sessions: ${held} held locks are free, ${led} elections have no leader`,
      ...targets.map((n) => `wrote ${n.dataDir} for ${n.id}`),
      `start each member with: palisade serve --config ${o.config} --id ID`,
    ].join('\n') + '\n',
  );
}
