// The "address" a per-address limit counts. An IPv4 address is one; an IPv6 client usually
// holds a whole /64 (and may pick any address in it for each connection), so IPv6 addresses
// count by their /64. An IPv4 address mapped into IPv6 (::ffff:1.2.3.4) is the IPv4 address.
import { isIPv6 } from 'node:net';

export function addressKey(remote: string): string {
  if (remote.startsWith('::ffff:') && remote.includes('.')) return remote.slice(7);
  if (!isIPv6(remote)) return remote;
  return `${expandIPv6(remote).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, in lower-case hex without leading zeros. */
function expandIPv6(a: string): string[] {
  const [head, tail] = a.split('%', 1)[0]!.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return groups.map((g) => (g.includes('.') ? g : parseInt(g, 16).toString(16)));
}
