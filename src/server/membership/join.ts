// `palisade serve --join URL,...`: a new node with an empty data directory asks an existing
// cluster to add it as a learner, and learns the peers it should talk to. Everything else
// (the log or a snapshot) then comes from the leader. With auth on, both requests carry a
// token (addMember needs an admin one; see src/cli/credentials.ts joinCredentials).
import type { Logger } from 'pino';
import { RpcError, rpc, type RpcCredentials } from '../../protocol/rpc.js';
import type { MemberInfo } from '../../protocol/client-protocol.js';

/** Refusals that no retry changes: the join stops at once and says why. */
const REFUSED = new Set(['UNAUTHENTICATED', 'PERMISSION_DENIED']);

/** OpenSSL's words for a certificate this side cannot verify, and for a server's refusal of
 *  ours: no retry changes either (the files do not change while we wait). */
const UNVERIFIED = /unable to verify|self[- ]signed|local issuer|issuer certificate|certificate has expired|not yet valid|altnames/i;
const CERT_REFUSED = /alert (certificate required|bad certificate|unknown ca|certificate unknown)/i;

/** What to do about a TLS failure of `url`, or null when it is not about certificates. */
function certificateProblem(url: string, message: string, credentials: RpcCredentials): string | null {
  if (UNVERIFIED.test(message)) {
    const fix = credentials.ca === undefined
      ? 'no CA is configured for the client port, so only the system\'s roots are trusted: set "tls.client.ca" in the config to the CA file that signed the nodes\' certificates (or pass --ca / $PALISADE_CA)'
      : 'the CA given (tls.client.ca, or --ca / $PALISADE_CA) did not sign that certificate, or the certificate does not name the host of the URL';
    return `cannot verify the TLS certificate of ${url} (${message}): ${fix}`;
  }
  if (CERT_REFUSED.test(message)) {
    return `${url} refused this node's TLS client certificate (${message}): the client port requires one signed by its CA: set "tls.client.requireClientCert" and the node's cert/key in the config, or pass --cert/--key`;
  }
  return null;
}

export async function joinCluster(
  endpoints: readonly string[],
  self: { id: string; peerUrl: string; clientUrl: string },
  log: Logger,
  credentials: RpcCredentials = {},
  timeoutMs = 30_000,
): Promise<MemberInfo[]> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  // Endpoints whose certificate failed: when every one has, the join stops with what to fix
  // instead of retrying the same handshake until the deadline.
  const certificateFailures = new Map<string, string>();
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    const url = endpoints[attempt % endpoints.length]!;
    try {
      const members = await rpc(url, { op: 'members' }, 3_000, credentials);
      if (!members.some((m) => m.id === self.id)) {
        await rpc(url, { op: 'addMember', member: self.id, peerUrl: self.peerUrl, clientUrl: self.clientUrl }, 10_000, credentials);
        log.info({ via: url }, 'asked the cluster to add this node as a learner');
        continue; // read the membership again, now with us in it
      }
      return [...members];
    } catch (e) {
      if (e instanceof RpcError && REFUSED.has(e.code)) {
        const hint = credentials.token === undefined ? 'the cluster requires a token: give an admin token (--token or $PALISADE_TOKEN), or list one with "admin": true in the config\'s auth.tokens' : 'joining needs an admin token (--token or $PALISADE_TOKEN, or the first admin token of the config\'s auth.tokens)';
        throw new Error(`the cluster at ${url} refused to add this node (${e.code}: ${e.message}): ${hint}`);
      }
      last = (e as Error).message;
      const problem = certificateProblem(url, last, credentials);
      if (problem !== null) {
        certificateFailures.set(url, problem);
        if (endpoints.every((u) => certificateFailures.has(u))) throw new Error(`could not join the cluster: ${problem}`);
        continue;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`could not join the cluster at ${endpoints.join(',')}: ${last}`);
}
