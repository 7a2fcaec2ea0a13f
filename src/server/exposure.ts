// Refusing to run insecurely where others can reach the node. On loopback addresses the
// shipped development config is fine; on any other address, the published default secret
// lets anyone join the Raft traffic, and peer links without TLS can be read on the network
// (their frames are authenticated, peer protocol 2, but not encrypted: lock names and
// key-value values travel in clear; docs/security.md says why this still refuses). The node then stops with a message that says what to configure, unless the
// operator passes `palisade serve --allow-insecure` (docs/security.md).
import { isIP } from 'node:net';
import type { ClusterConfig, NodeConfig } from '../config/cluster-config.js';
import { parseWsUrl } from '../config/cluster-config.js';

/** The secret of the shipped cluster.config.json: public, so no secret at all. */
export const PUBLISHED_SECRET = 'palisade-local-development-secret-change-me';

/** Whether `host` (a URL's hostname, without brackets) can be reached only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h.startsWith('::ffff:127.');
  return false;
}

/** What is insecure about running `self` of `cfg` on its addresses; empty when nothing is. */
export function exposureProblems(cfg: ClusterConfig, self: NodeConfig): string[] {
  const peerHost = parseWsUrl(self.peerUrl, 'peerUrl').host;
  const clientHost = parseWsUrl(self.clientUrl, 'clientUrl').host;
  const exposed = [peerHost, clientHost].filter((h) => !isLoopbackHost(h));
  const problems: string[] = [];
  if (cfg.secret === PUBLISHED_SECRET && exposed.length > 0) {
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
