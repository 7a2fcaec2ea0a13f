// Addresses whose new connections are destroyed on arrival until a moment, before a byte of
// them is read: what a port does about an address it has just refused for abuse (an HTTP
// client pipelining past the in-flight bound), for as long as it told that address to wait.
// Every connection from such an address would otherwise cost a read and the parse of every
// request in it (hundreds from one 64 KiB read) before it could be refused again.
import { performance } from 'node:perf_hooks';

/** More addresses than this cooling off at once: the expired ones are dropped. */
const PRUNE_AT = 10_000;

export class AddressCoolOff {
  private readonly until = new Map<string, number>();

  /** `now` is a monotonic clock in ms (performance.now in production, a fake in tests). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** New connections from `remote` are refused for the next `ms`. */
  coolOff(remote: string, ms: number): void {
    const t = this.now();
    if (this.until.size >= PRUNE_AT) for (const [a, u] of this.until) if (u <= t) this.until.delete(a);
    this.until.set(remote, Math.max(this.until.get(remote) ?? 0, t + ms));
  }

  /** Whether a connection from `remote` is refused now. */
  isCoolingOff(remote: string): boolean {
    const u = this.until.get(remote);
    if (u === undefined) return false;
    if (u > this.now()) return true;
    this.until.delete(remote);
    return false;
  }
}
