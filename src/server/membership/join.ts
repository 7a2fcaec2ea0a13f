// `palisade serve --join URL,...`: a new node with an empty data directory asks an existing
// cluster to add it as a learner, and learns the peers it should talk to. Everything else
// (the log or a snapshot) then comes from the leader. With auth on, both requests carry a
// token (addMember needs an admin one; see src/cli/credentials.ts joinCredentials).
import type { Logger } from 'pino';
import { RpcError, rpc, type RpcCredentials } from '../../protocol/rpc.js';
import type { MemberInfo } from '../../protocol/client-protocol.js';

/** Refusals that no retry changes: the join stops at once and says why. */
const REFUSED = new Set(['UNAUTHENTICATED', 'PERMISSION_DENIED']);

export async function joinCluster(
  endpoints: readonly string[],
  self: { id: string; peerUrl: string; clientUrl: string },
  log: Logger,
  credentials: RpcCredentials = {},
  timeoutMs = 30_000,
): Promise<MemberInfo[]> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const url = endpoints[attempt % endpoints.length]!;
    try {
      const members = await rpc<MemberInfo[]>(url, { op: 'members' }, 3_000, credentials);
      if (!members.some((m) => m.id === self.id)) {
        await rpc(url, { op: 'addMember', member: self.id, peerUrl: self.peerUrl, clientUrl: self.clientUrl }, 10_000, credentials);
        log.info({ via: url }, 'asked the cluster to add this node as a learner');
        continue; // read the membership again, now with us in it
      }
      return members;
    } catch (e) {
      if (e instanceof RpcError && REFUSED.has(e.code)) {
        const hint = credentials.token === undefined ? 'the cluster requires a token: give an admin token (--token or $PALISADE_TOKEN), or list one with "admin": true in the config\'s auth.tokens' : 'joining needs an admin token (--token or $PALISADE_TOKEN, or the first admin token of the config\'s auth.tokens)';
        throw new Error(`the cluster at ${url} refused to add this node (${e.code}: ${e.message}): ${hint}`);
      }
      last = (e as Error).message;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`could not join the cluster at ${endpoints.join(',')}: ${last}`);
}
