// The nodes' URLs: their syntax, and which of them may share an address. Each node has an
// advertised URL per port (peerUrl, clientUrl, httpUrl: where the others and the clients
// reach it) and a listen URL per port (what it binds; the advertised one unless the config
// says otherwise, as etcd's --listen-*-urls and --advertise-*-urls).
import { isIP } from 'node:net';
import { ConfigError } from './config-error.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

function parse(url: string, field: string, schemes: readonly string[], what: string): HostPort & { scheme: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ConfigError(field, `"${url}" is not a URL`);
  }
  if (!schemes.includes(u.protocol)) throw new ConfigError(field, `"${url}" must start with ${what}`);
  const port = Number(u.port);
  if (!u.port || !Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError(field, `"${url}" needs an explicit port`);
  return { scheme: u.protocol, host: u.hostname.replace(/^\[|\]$/g, ''), port };
}

export function parseWsUrl(url: string, field: string): HostPort {
  const { host, port } = parse(url, field, ['ws:', 'wss:'], 'ws:// or wss://');
  return { host, port };
}

export function parseHttpUrl(url: string, field: string): HostPort {
  const { host, port } = parse(url, field, ['http:'], 'http://');
  const u = new URL(url);
  if (u.pathname !== '/' || u.search || u.hash) throw new ConfigError(field, `"${url}" must have no path, query or fragment`);
  return { host, port };
}

/** Whether `host` (a URL's hostname, without brackets) can be reached only from this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h.startsWith('::ffff:127.');
  return false;
}

/** An address that binds every interface of the machine. */
function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '0:0:0:0:0:0:0:0';
}

export type PortKind = 'peer' | 'client' | 'http';
export const URL_KEYS: Readonly<Record<PortKind, { advertised: 'peerUrl' | 'clientUrl' | 'httpUrl'; listen: 'listenPeerUrl' | 'listenClientUrl' | 'listenHttpUrl' }>> = {
  peer: { advertised: 'peerUrl', listen: 'listenPeerUrl' },
  client: { advertised: 'clientUrl', listen: 'listenClientUrl' },
  http: { advertised: 'httpUrl', listen: 'listenHttpUrl' },
};

/** One port of one node, parsed: where it is reached and what it binds. */
export interface NodePort {
  readonly node: number;
  readonly kind: PortKind;
  readonly advertised: HostPort & { field: string };
  readonly listen: HostPort & { field: string };
}

/** Parses a node's URL of one port and its listen URL (the advertised one when absent); the
 *  listen URL must have the same scheme: the node serves TLS on the address it binds exactly
 *  when the URL it is reached at says wss://. */
export function nodePort(node: number, kind: PortKind, advertisedUrl: string, listenUrl: string | undefined): NodePort {
  const keys = URL_KEYS[kind];
  const at = (key: string): string => `nodes[${node}].${key}`;
  const [schemes, what] = kind === 'http' ? [['http:'], 'http://'] : [['ws:', 'wss:'], 'ws:// or wss://'];
  const advertised = parse(advertisedUrl, at(keys.advertised), schemes, what);
  if (kind === 'http') parseHttpUrl(advertisedUrl, at(keys.advertised));
  let listen = advertised;
  if (listenUrl !== undefined) {
    listen = parse(listenUrl, at(keys.listen), schemes, what);
    if (kind === 'http') parseHttpUrl(listenUrl, at(keys.listen));
    if (listen.scheme !== advertised.scheme) {
      throw new ConfigError(at(keys.listen), `"${listenUrl}" must use the scheme of ${keys.advertised} (${advertised.scheme}//): the node serves TLS where it listens exactly when it is reached over TLS`);
    }
  }
  return { node, kind, advertised: { host: advertised.host, port: advertised.port, field: at(keys.advertised) }, listen: { host: listen.host, port: listen.port, field: at(listenUrl !== undefined ? keys.listen : keys.advertised) } };
}

const sameHost = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

/**
 * Which ports may share an address:
 *
 * - Advertised addresses are distinct across the whole cluster: a peer, a client or another
 *   node's status page that dials an address must reach one node's one port. This also
 *   refuses every node advertising the same loopback status page on its own host: the page
 *   fetches its peers' pages at their httpUrl, and would fetch its own (to bind loopback
 *   while others reach the node elsewhere, set listenHttpUrl).
 * - Bind addresses collide only on one machine, and the file does not say which nodes share
 *   one: nodes on different hosts may bind the same address (0.0.0.0:7101 everywhere), and
 *   nodes that advertise one IP may be containers behind port mapping, each binding in its
 *   own network namespace. So binds are compared where the machine is known to be the same:
 *   the ports of one node, and the nodes whose peerUrl is a loopback address (reachable only
 *   from this machine, so those nodes all run on it). Two binds collide on the same port when
 *   their hosts are equal or either is a wildcard (0.0.0.0, ::), which binds every address.
 */
export function checkAddresses(ports: readonly NodePort[]): void {
  const advertised = new Map<string, string>();
  for (const p of ports) {
    const key = `${p.advertised.host.toLowerCase()}:${p.advertised.port}`;
    const prev = advertised.get(key);
    if (prev) {
      throw new ConfigError(
        p.advertised.field,
        `port ${p.advertised.port} on ${p.advertised.host} is also used by ${prev}: each node must be reached at addresses of its own ` +
          '(a node that binds another address than the one it is reached at says so with listenPeerUrl, listenClientUrl or listenHttpUrl)',
      );
    }
    advertised.set(key, p.advertised.field);
  }
  const onThisMachine = new Set(ports.filter((p) => p.kind === 'peer' && isLoopbackHost(p.advertised.host)).map((p) => p.node));
  for (let i = 0; i < ports.length; i++) {
    for (let j = 0; j < i; j++) {
      const [a, b] = [ports[i]!, ports[j]!];
      const sameMachine = a.node === b.node || (onThisMachine.has(a.node) && onThisMachine.has(b.node));
      if (!sameMachine || a.listen.port !== b.listen.port) continue;
      if (sameHost(a.listen.host, b.listen.host) || isWildcard(a.listen.host) || isWildcard(b.listen.host)) {
        throw new ConfigError(a.listen.field, `binds port ${a.listen.port} on ${a.listen.host}, which ${b.listen.field} (${b.listen.host}:${b.listen.port}) binds on the same machine`);
      }
    }
  }
}
