// Refusing to run insecurely where others can reach the node. On loopback addresses the
// shipped development config is fine; on any other address, the published default secret
// lets anyone join the Raft traffic, and peer links without TLS can be read on the network
// (their frames are authenticated, peer protocol 2, but not encrypted: lock names and
// key-value values travel in clear; docs/security.md says why this still refuses). The node then stops with a message that says what to configure, unless the
// operator passes `palisade serve --allow-insecure` (docs/security.md).
import type { ClusterConfig, NodeConfig } from '../config/cluster-config.js';
import { isLoopbackHost, parseWsUrl } from '../config/cluster-config.js';

export { isLoopbackHost };

/** The secret of the shipped cluster.config.json: public, so no secret at all. */
export const PUBLISHED_SECRET = 'palisade-local-development-secret-change-me';

/** What is insecure about running `self` of `cfg` on its addresses; empty when nothing is. */
export function exposureProblems(cfg: ClusterConfig, self: NodeConfig): string[] {
  // Where the node binds, and where it is reached (a loopback bind behind a proxy or port
  // mapping that others reach on the network is exposed all the same).
  const host = (url: string, field: string): string => parseWsUrl(url, field).host;
  const peerHosts = [host(self.listenPeerUrl, 'listenPeerUrl'), host(self.peerUrl, 'peerUrl')];
  const clientHosts = [host(self.listenClientUrl, 'listenClientUrl'), host(self.clientUrl, 'clientUrl')];
  const exposed = [...new Set([...peerHosts, ...clientHosts].filter((h) => !isLoopbackHost(h)))];
  const peerHost = peerHosts.find((h) => !isLoopbackHost(h)) ?? peerHosts[0]!;
  const problems: string[] = [];
  if (cfg.secrets.includes(PUBLISHED_SECRET) && exposed.length > 0) {
    problems.push(
      `the cluster secret is the published development default and this node listens on ${exposed.join(', ')}: ` +
        'set "secret" in the config to a long random string of your own (the same on every node)',
    );
  }
  if (cfg.tls.peer === null && !isLoopbackHost(peerHost)) {
    problems.push(
      `peer links are plain ws:// on ${peerHost}, so Raft traffic (lock names, key-value values) can be read on the network: ` +
        'configure "tls.peer" (certificates, wss:// peer URLs; see docs/security.md)',
    );
  }
  return problems;
}
