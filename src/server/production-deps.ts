// A node's production I/O: LevelDB in its data directory, ws/TLS on its peer and client
// ports (the listen addresses of its config), the status page on its httpUrl, and the
// system's clock.
import type { Logger } from 'pino';
import type { ClusterConfig } from '../config/cluster-config.js';
import { nodeById, parseWsUrl } from '../config/cluster-config.js';
import type { RpcCredentials } from '../protocol/rpc.js';
import { RaftStorage } from '../storage/index.js';
import { ClientServer, DEFAULT_PRE_AUTH } from '../transport/client-server.js';
import { PeerTransport } from '../transport/peer.js';
import { browserPolicy } from '../transport/browser-guard.js';
import { systemClock } from './clock.js';
import { clientPortLimits } from './api/limits.js';
import { joinCluster } from './membership/join.js';
import type { NodeDeps } from './node-deps.js';
import { clientPortTls, peerPortTls, reloadedTls } from './node-tls.js';
import { NodeOps } from './ops/index.js';

/** Largest peer frame: a snapshot chunk with its envelope. */
const MAX_PEER_FRAME_BYTES = 64 << 20;

export function productionDeps(config: ClusterConfig, id: string, logger: Logger, joinCredentials: RpcCredentials = {}): NodeDeps {
  const self = nodeById(config, id);
  // The sockets a reload gives new credentials to, once made.
  let peerLinks: PeerTransport | null = null;
  let clientPort: ClientServer | null = null;
  return {
    clock: systemClock,
    logger,
    random: (n) => Math.floor(Math.random() * n),
    openStore: () => RaftStorage.open(self.dataDir, { clusterId: config.clusterId, nodeId: id }),
    // Each port binds its listen address; peers and clients are told the advertised URLs
    // (peerUrl, clientUrl, httpUrl), which differ behind NAT or a container's port mapping.
    peerNetwork: (peers) => {
      const addr = parseWsUrl(self.listenPeerUrl, 'listenPeerUrl');
      peerLinks = new PeerTransport({
        clusterId: config.clusterId,
        selfId: id,
        secrets: config.secrets,
        listenHost: addr.host,
        listenPort: addr.port,
        peers,
        logger,
        maxFrameBytes: MAX_PEER_FRAME_BYTES,
        ...peerPortTls(config, id),
      });
      return peerLinks;
    },
    clientPort: (handlers) => {
      const addr = parseWsUrl(self.listenClientUrl, 'listenClientUrl');
      let port: ClientServer | null = null;
      const http = handlers.http?.({ holdAddressSlot: (r) => port!.holdAddressSlot(r), coolOffAddress: (r, ms) => port!.coolOffAddress(r, ms), takeAddressToken: (r) => port!.takeAddressToken(r) });
      port = new ClientServer({
        host: addr.host,
        port: addr.port,
        browsers: browserPolicy({ ...config.http, ownHost: addr.host }),
        ...clientPortLimits(config.limits),
        preAuth: DEFAULT_PRE_AUTH,
        ...clientPortTls(config, id),
        logger,
        onConnection: handlers.onConnection,
        ...(http ? { onHttpRequest: http } : {}),
      });
      clientPort = port;
      return port;
    },
    opsPort: (node, revoke) => (self.listenHttpUrl ? new NodeOps({ httpUrl: self.listenHttpUrl, logger, node, revoke }) : null),
    join: (urls) => joinCluster(urls, { id, peerUrl: self.peerUrl, clientUrl: self.clientUrl }, logger, joinCredentials),
    reloadTransport: (next) => {
      // Every file is read and checked before anything changes: all of it or none.
      const tls = reloadedTls(next, id);
      return () => [
        ...(peerLinks?.setCredentials({ secrets: next.secrets, ...tls.peer }) ?? []),
        ...(tls.client.tls && clientPort?.setTls(tls.client.tls) ? ['client certificates'] : []),
      ];
    },
  };
}
