// The certificates of one node's ports, from the config's `tls` section. Paths may hold
// "{id}" for the node's id, so one config file serves every node with its own certificate.
import { loadTlsMaterial, type TlsMaterial } from '../transport/tls.js';
import type { ClusterConfig, TlsFilesConfig } from '../config/cluster-config.js';

function material(files: TlsFilesConfig | null, id: string, field: string): { tls?: TlsMaterial } {
  if (!files) return {};
  const at = (path: string): string => path.replaceAll('{id}', id);
  return {
    tls: loadTlsMaterial(
      { cert: at(files.cert), key: at(files.key), ...(files.ca ? { ca: at(files.ca) } : {}), requireClientCert: files.requireClientCert },
      `config: ${field}`,
    ),
  };
}

/** TLS of the peer port (listening and dialing); {} when peer links are plain ws. */
export function peerPortTls(cfg: ClusterConfig, id: string): { tls?: TlsMaterial } {
  return material(cfg.tls.peer, id, 'tls.peer');
}

/** TLS of the client port; {} when it is plain ws. */
export function clientPortTls(cfg: ClusterConfig, id: string): { tls?: TlsMaterial } {
  return material(cfg.tls.client, id, 'tls.client');
}
