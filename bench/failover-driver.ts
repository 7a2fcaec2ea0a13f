// failover (the orchestrator side): while the client process cycles locks, disrupt the
// leader `tries` times each way and ask the client process how long the first successful
// acquire took to follow.
//   kill:     SIGKILL the leader; once the client has recovered, restart the killed node on
//             its data and wait until it has caught up and the cluster agrees on a leader.
//   transfer: on a connection already open to the leader, send transferLeader and, in the
//             same breath, status: the node serves a connection's frames in order, so the
//             status reports the last index of the old leader's log as the transfer began.
import type { BenchCluster } from './cluster.js';
import { epochMs, sleep } from './lib/clock.js';
import { countersFrom } from './lib/node-sampler.js';
import { RawConnection } from './lib/raw-connection.js';
import type { WorkerHost } from './worker-host.js';

export async function driveFailover(cluster: BenchCluster, host: WorkerHost, tries: number, log: (line: string) => void): Promise<void> {
  await host.next('ready');
  for (let t = 0; t < tries; t++) {
    await settle(cluster);
    const leader = await cluster.waitForLeader();
    const at = await cluster.kill(leader);
    host.send({ type: 'disruption', disruption: { event: 'kill', at } });
    const { firstAcquireMs } = await host.next('recovered', 60_000);
    log(`failover: kill ${t + 1}/${tries} (${leader}): first acquire after ${fmt(firstAcquireMs)}`);
    await cluster.start(leader);
  }
  for (let t = 0; t < tries; t++) {
    await settle(cluster);
    const leader = await cluster.waitForLeader();
    const conn = await RawConnection.open(cluster.clientUrl(leader));
    try {
      const at = epochMs();
      const transfer = conn.call({ op: 'transferLeader' });
      const status = await conn.call({ op: 'status' });
      if (!status.ok) throw new Error(`status: ${status.error.code}`);
      const boundaryIndex = countersFrom(status.result).lastIndex;
      if (boundaryIndex === null) throw new Error('status carries no lastIndex');
      const answer = await transfer;
      if (!answer.ok) log(`failover: transferLeader answered ${answer.error.code} ${answer.error.message}`);
      host.send({ type: 'disruption', disruption: { event: 'transfer', at, boundaryIndex } });
      const { firstAcquireMs } = await host.next('recovered', 60_000);
      log(`failover: transfer ${t + 1}/${tries} (${leader}): first acquire after ${fmt(firstAcquireMs)}`);
    } finally {
      conn.close();
    }
  }
  host.send({ type: 'finish' });
}

/** Every node running and caught up, one agreed leader, and a moment for clients to settle. */
async function settle(cluster: BenchCluster): Promise<void> {
  await cluster.waitCaughtUp();
  await sleep(500);
}

function fmt(ms: number | null): string {
  return ms === null ? 'never (timed out)' : `${ms.toFixed(0)} ms`;
}
