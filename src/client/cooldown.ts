// Endpoints that just failed us. A node that refused a connection (killed: nobody listens),
// or whose connection broke under us, is most likely down, and the others soon stop naming
// it: the cluster replaces a dead leader within an election timeout or two. Until then a
// follower's hello, a hint or the scout would send the client straight back to it, to be
// refused again, while the follower it just left would have held its request until the
// next leader was elected (server/replication/forwarding.ts). So, as etcd's and gRPC's clients do, a
// node that failed is set aside for a while: it is not dialed again, nor followed as a
// hint, while some other node has not failed lately. Each failure in a row doubles the
// wait; a node that says hello is trusted again at once. When every node has failed lately
// (the whole cluster restarting) nothing is set aside: the link's own backoff paces it.
import type { HelloResult } from '../protocol/client-protocol.js';
import type { Clock } from './clock.js';

/** For nodes that do not say their timing (older versions): Palisade's defaults. */
const DEFAULT_TIMING = { heartbeatMs: 50, electionTimeoutMs: 300 };

export interface CooldownTiming {
  /** How long a node is set aside after its first failure in a row: two election timeouts,
   *  by when the cluster has usually noticed a dead leader and elected another. */
  readonly firstMs: number;
  /** The most a node is set aside, however often it failed. */
  readonly maxMs: number;
}

export function cooldownFor(hello: HelloResult | null): CooldownTiming {
  const t = hello?.timing ?? DEFAULT_TIMING;
  return { firstMs: 2 * t.electionTimeoutMs, maxMs: 16 * t.electionTimeoutMs };
}

export class EndpointCooldown {
  private readonly failures = new Map<string, { readonly until: number; readonly inARow: number }>();

  constructor(private readonly clock: Clock) {}

  /** `url` refused a connection, did not say hello, or its connection broke. */
  failed(url: string, timing: CooldownTiming): void {
    const inARow = (this.failures.get(url)?.inARow ?? 0) + 1;
    const wait = Math.min(timing.maxMs, timing.firstMs * 2 ** Math.min(inARow - 1, 20));
    this.failures.set(url, { until: this.clock.now() + wait, inARow });
  }

  /** `url` said hello: it is up. */
  succeeded(url: string): void {
    this.failures.delete(url);
  }

  /** True while `url` failed lately and is to be set aside. */
  isCooling(url: string): boolean {
    const f = this.failures.get(url);
    return f !== undefined && f.until > this.clock.now();
  }

}
