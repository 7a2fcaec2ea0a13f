// `palisade serve --join URL,...`: a new node with an empty data directory asks an existing
// cluster to add it as a learner, and learns the peers it should talk to. Everything else
// (the log or a snapshot) then comes from the leader.
import type { Logger } from 'pino';
import { rpc } from '../protocol/rpc.js';
import type { MemberInfo } from '../protocol/client-protocol.js';

export async function joinCluster(
  endpoints: readonly string[],
  self: { id: string; peerUrl: string; clientUrl: string },
  log: Logger,
  timeoutMs = 30_000,
): Promise<MemberInfo[]> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const url = endpoints[attempt % endpoints.length]!;
    try {
      const members = await rpc<MemberInfo[]>(url, { op: 'members' }, 3_000);
      if (!members.some((m) => m.id === self.id)) {
        await rpc(url, { op: 'addMember', member: self.id, peerUrl: self.peerUrl, clientUrl: self.clientUrl }, 10_000);
        log.info({ via: url }, 'asked the cluster to add this node as a learner');
        continue; // read the membership again, now with us in it
      }
      return members;
    } catch (e) {
      last = (e as Error).message;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`could not join the cluster at ${endpoints.join(',')}: ${last}`);
}
