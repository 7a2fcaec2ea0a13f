// Which member URLs a client may dial besides the seed endpoints it was given. Hellos list
// the members, errors hint at the leader: URLs the client learns from nodes, which an
// admin's addMember (or a lying node) chose, not the application. A learned URL is dialled
// only with the protection the application chose for its seeds, and the same TLS options
// (CA, client certificate) are used for every URL (client.ts binds them to the WebSocket):
//
// - wss:// seeds: only wss:// members. A ws:// one would carry the token and every lock in
//   clear, and be answered by whoever is on the path.
// - ws:// seeds, all on loopback (127.0.0.0/8, ::1, localhost): only ws:// members on
//   loopback. The application accepted plain text because it never leaves the host; a
//   member elsewhere would take the token over a network. A wss:// member is refused too:
//   it would be verified against the system's roots, a trust nobody configured.
// - ws:// seeds elsewhere: ws:// members. Plain text on the network is already accepted.
//
// Seeds mixing ws:// and wss:// are refused when the client is made: a cluster's client
// URLs are all one or the other (a node's config refuses a mix), so a mix names two
// clusters, or a typo that would leave the protection undecided.
import { InvalidArgumentError } from './errors.js';

export type SeedTransport = 'tls' | 'loopback' | 'network';

function parse(url: string): { readonly scheme: string; readonly host: string } | null {
  try {
    const u = new URL(url);
    return { scheme: u.protocol, host: u.hostname };
  } catch {
    return null;
  }
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The protection the seed endpoints give; InvalidArgumentError when they mix ws:// and wss://. */
export function seedTransport(seeds: readonly string[]): SeedTransport {
  const parsed = seeds.map(parse);
  const tls = parsed.filter((p) => p?.scheme === 'wss:').length;
  if (tls === seeds.length) return 'tls';
  if (tls > 0) throw new InvalidArgumentError(`endpoints mix wss:// and ws:// URLs (${seeds.join(', ')}): a cluster's client URLs are all one or the other`);
  return parsed.every((p) => p !== null && isLoopback(p.host)) ? 'loopback' : 'network';
}

/** Why `url`, learned from a node, may not be dialled by a client whose seeds give `seeds`; null when it may. */
export function learnedUrlProblem(url: string, seeds: SeedTransport): string | null {
  const p = parse(url);
  if (p === null || (p.scheme !== 'ws:' && p.scheme !== 'wss:')) return `${url} is not a ws:// or wss:// URL`;
  if (seeds === 'tls') return p.scheme === 'wss:' ? null : `${url} is not wss:// like the seed endpoints: the token and locks would travel in clear`;
  if (p.scheme !== 'ws:') return `${url} is wss:// but the seed endpoints are ws://: no TLS trust was configured to verify it with`;
  if (seeds === 'loopback' && !isLoopback(p.host)) return `${url} is not on this host like the ws:// seed endpoints: the token would cross a network in clear`;
  return null;
}
