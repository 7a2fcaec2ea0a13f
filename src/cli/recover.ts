// `palisade recover --from DIR --config NEW.json --id ID`: a new single-member cluster from
// the data directory of one survivor of a cluster that lost its quorum for good. See
// docs/operations.md, "Losing a quorum for good".
import { resolve } from 'node:path';
import { checkEmptyDir, writeNewMember } from '../backup/new-cluster.js';
import { readSurvivor } from '../backup/survivor.js';
import { tokenFloor } from '../backup/token-floor.js';
import { loadConfig, nodeById } from '../config/cluster-config.js';
import { machineConfigFrom } from '../config/defaults.js';
import { dataOwnerOf, giveToOwner } from './data-owner.js';

export interface RecoverOptions {
  readonly from: string;
  readonly config: string;
  readonly id: string;
  readonly minToken?: number;
}

export async function recoverCommand(o: RecoverOptions): Promise<void> {
  const config = loadConfig(o.config);
  const self = nodeById(config, o.id);
  if (resolve(self.dataDir) === resolve(o.from)) {
    throw new Error(`the new member's dataDir is the survivor's directory ${o.from}: give it another one (the survivor's data stays as it is, to go back to)`);
  }
  const s = await readSurvivor(o.from, machineConfigFrom(config));
  if (config.clusterId === s.identity.clusterId) {
    throw new Error(
      `${o.config} has the survivor's cluster id "${s.identity.clusterId}": the recovered cluster is a new cluster and needs a new clusterId ` +
        '(a lost member that comes back must not take it for its own)',
    );
  }
  checkEmptyDir(self.dataDir);
  const { floor, why } = tokenFloor({
    lastIndex: s.lastIndex,
    writtenAtMs: s.writtenAtMs,
    nowMs: Date.now(),
    ...(o.minToken !== undefined ? { minToken: o.minToken } : {}),
  });
  const stats = s.machine.stats();
  const ended = s.machine.startNewCluster(floor);
  const owner = dataOwnerOf(self.dataDir); // before anything of it exists
  await writeNewMember(
    { dir: self.dataDir, clusterId: config.clusterId, nodeId: self.id },
    { floor, machine: s.machine.snapshot(), voters: [self.id], members: [[self.id, { peerUrl: self.peerUrl, clientUrl: self.clientUrl }]] },
  );
  if (owner) giveToOwner(self.dataDir, owner);
  process.stdout.write(
    [
      `recovered ${o.from} (cluster ${s.identity.clusterId}, node ${s.identity.nodeId}, log to ${s.lastIndex}, committed ${s.commitIndex} as it knew, term ${s.term})`,
      `as the single member ${self.id} of cluster ${config.clusterId} in ${self.dataDir}`,
      `token floor ${floor}: ${why}`,
      `kept ${stats.kvKeys} keys; ended ${ended} sessions (${stats.holders} holds freed)`,
      `start it: palisade serve --config ${o.config} --id ${self.id}`,
      `then add each other member with an empty dataDir: palisade serve --config ${o.config} --id ID --join ${self.clientUrl}`,
    ].join('\n') + '\n',
  );
}
