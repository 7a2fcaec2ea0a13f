// What a web browser may do to a node. A page from any site can make the browser it runs in
// talk to addresses the page's author cannot reach (127.0.0.1, a private network): it can
// open websockets to any origin, send "simple" cross-site POSTs, and, through DNS rebinding
// (a name of the attacker's that first resolves to its server, then to 127.0.0.1), read
// answers as if they were its own. Palisade's clients are programs, not pages, so:
//   - Origin: a browser names the page's origin on every websocket upgrade and every
//     cross-site request; programs send none. A request with an Origin is refused unless
//     that origin is allowed (`http.allowedOrigins`, empty by default) or is the node's own
//     (same-origin, once the Host below is the node's).
//   - Host: a rebound page's requests name the attacker's host. A request must name the
//     node: an IP address (a page at an IP literal cannot be rebound), a host of the node's
//     own URL, a loopback name ("localhost") when the port listens on loopback, or a name of
//     `http.allowedHosts`.
// Both hold on the client port (websockets and the HTTP API), the peer port (where no
// browser origin is ever allowed) and the HTTP port (status page, metrics).
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/** Who may talk to one port through a browser. */
export interface BrowserPolicy {
  /** Origins whose pages may use this port (exact `scheme://host[:port]`); none by default. */
  readonly allowedOrigins: readonly string[];
  /** Host names requests may name besides IP addresses and the port's own names. */
  readonly allowedHosts: readonly string[];
  /** The host names of the node's own URL for this port. */
  readonly ownHosts: readonly string[];
  /** The port listens on a loopback address: "localhost" names it. */
  readonly loopback: boolean;
  /** Whether the Host is checked and a page of the node's own origin allowed. The peer port
   *  does neither: nothing a page could send there passes the handshake, so a browser
   *  origin is simply refused, and peers dial whatever name they were given. */
  readonly checkHost: boolean;
}

/** Why a request is refused: the HTTP status and a message for the client. */
export interface BrowserRefusal {
  readonly status: 403 | 421;
  readonly message: string;
  /** Names the refusal in the refusal log (a fixed word). */
  readonly kind: 'origin' | 'host';
}

export function browserPolicy(o: { allowedOrigins?: readonly string[]; allowedHosts?: readonly string[]; ownHost: string }): BrowserPolicy {
  const own = normalHost(o.ownHost);
  return {
    allowedOrigins: (o.allowedOrigins ?? []).map((x) => x.toLowerCase()),
    allowedHosts: (o.allowedHosts ?? []).map(normalHost),
    ownHosts: [own],
    loopback: isLoopbackHost(own),
    checkHost: true,
  };
}

/** The peer port's: no browser origin at all. */
export const PEER_PORT_POLICY: BrowserPolicy = Object.freeze({ allowedOrigins: [], allowedHosts: [], ownHosts: [], loopback: false, checkHost: false });

/** Whether `host` (a bind address or name) is loopback. */
export function isLoopbackHost(host: string): boolean {
  const h = normalHost(host);
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The refusal of `req` under `policy`, or null to serve it. */
export function browserRefusal(req: IncomingMessage, policy: BrowserPolicy): BrowserRefusal | null {
  const host = policy.checkHost ? req.headers.host : undefined;
  const hostname = host === undefined ? undefined : hostnameOf(host);
  if (hostname !== undefined && !hostAllowed(hostname, policy)) {
    return { status: 421, kind: 'host', message: `this node does not serve the host "${printable(hostname)}" (add it to http.allowedHosts to allow it)` };
  }
  const origin = req.headers.origin;
  if (origin === undefined) return null;
  const o = origin.toLowerCase();
  if (policy.allowedOrigins.includes(o)) return null;
  // Same-origin: a page the node itself served (the status page), under a Host checked above.
  if (host !== undefined && (o === `http://${host.toLowerCase()}` || o === `https://${host.toLowerCase()}`)) return null;
  return { status: 403, kind: 'origin', message: `requests from web pages of origin "${printable(origin)}" are refused (http.allowedOrigins)` };
}

function hostAllowed(hostname: string, p: BrowserPolicy): boolean {
  if (hostname === '') return false;
  if (isIP(hostname) !== 0) return true;
  if (p.ownHosts.includes(hostname) || p.allowedHosts.includes(hostname)) return true;
  return p.loopback && (hostname === 'localhost' || hostname.endsWith('.localhost'));
}

/** The host name of a Host header: without the port and the brackets of an IPv6 address. */
function hostnameOf(host: string): string {
  const h = host.trim();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? '' : normalHost(h.slice(1, end));
  }
  const colon = h.indexOf(':');
  return normalHost(colon < 0 ? h : h.slice(0, colon));
}

/** Lower case, without a trailing dot ("Example.COM." names example.com) or brackets. */
function normalHost(h: string): string {
  return h.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

/** At most 100 characters of what was sent, without control characters (it is echoed). */
function printable(s: string): string {
  return s.slice(0, 100).replace(/[^\x20-\x7e]/g, '?');
}
