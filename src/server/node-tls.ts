// The certificates of one node's ports, from the config's `tls` section. Paths may hold
// "{id}" for the node's id, so one config file serves every node with its own certificate.
import { TlsFileError, checkOwnCertificate, loadTlsMaterial, tlsMaterialProblem, type TlsMaterial } from '../transport/tls.js';
import type { ClusterConfig, TlsFilesConfig } from '../config/cluster-config.js';

// The node's own certificate is checked before it starts (checkOwnCertificate): one that
// has expired, is not valid yet, does not go with its key or, on the peer port, is not
// signed by the peers' CA stops start-up with the reason, rather than every peer refusing it.
function material(files: TlsFilesConfig | null, id: string, field: string, signedByCa: boolean): { tls?: TlsMaterial } {
  if (!files) return {};
  const at = (path: string): string => path.replaceAll('{id}', id);
  const tls = loadTlsMaterial(
    { cert: at(files.cert), key: at(files.key), ...(files.ca ? { ca: at(files.ca) } : {}), requireClientCert: files.requireClientCert },
    `config: ${field}`,
  );
  checkOwnCertificate(tls, `config: ${field}`, { signedByCa });
  return { tls };
}

/** A port's certificates read again for a reload, and checked: a reload must not put in
 *  place what the other side would refuse (a key that is not the certificate's, an expired
 *  certificate, a peer certificate the peers' CA did not sign); it is refused instead. */
function reloadedMaterial(files: TlsFilesConfig | null, id: string, field: string, issuedByCa: boolean): { tls?: TlsMaterial } {
  const m = material(files, id, field, issuedByCa);
  const problem = m.tls ? tlsMaterialProblem(m.tls, { issuedByCa }) : null;
  if (problem !== null) throw new TlsFileError(`config: ${field}`, problem);
  return m;
}

/** Both ports' certificates of `cfg` for a reload, checked (the peer's against its CA). */
export function reloadedTls(cfg: ClusterConfig, id: string): { peer: { tls?: TlsMaterial }; client: { tls?: TlsMaterial } } {
  return { peer: reloadedMaterial(cfg.tls.peer, id, 'tls.peer', true), client: reloadedMaterial(cfg.tls.client, id, 'tls.client', false) };
}

/** TLS of the peer port (listening and dialing); {} when peer links are plain ws. The other
 *  nodes check this node's certificate against the same `ca`. */
export function peerPortTls(cfg: ClusterConfig, id: string): { tls?: TlsMaterial } {
  return material(cfg.tls.peer, id, 'tls.peer', true);
}

/** TLS of the client port; {} when it is plain ws. Its `ca` is the clients' CA, which need
 *  not have signed the node's own certificate. */
export function clientPortTls(cfg: ClusterConfig, id: string): { tls?: TlsMaterial } {
  return material(cfg.tls.client, id, 'tls.client', false);
}
