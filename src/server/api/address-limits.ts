// Limits that hold per client address (and per token) whatever the transport. Per-connection
// limits alone bound nothing over HTTP, where every request is a connection of its own (a
// fresh gate): one address opened 99,995 sessions over HTTP in 68 s, and a read-only token
// 10,000, though a websocket connection may carry 64. So the node also counts, per address
// (addressKey: an IPv4 address, an IPv6 /64):
//   - the sessions opened through it that are still open (limits.maxSessionsPerAddress),
//     counted when requested and ended by the close and expiry events every node applies;
//   - the requests it is serving at once (limits.maxInFlightPerAddress);
// and per token name, a token bucket over all its connections (limits.requestsPerSecondPerToken).
// A node that restarts forgets its counts; the lock machine's own caps (sessions.maxSessions,
// maxSessionsPerToken) hold regardless.
import { performance } from 'node:perf_hooks';
import type { Request, WireError } from '../../protocol/client-protocol.js';
import type { Answer } from '../../protocol/ops.js';
import type { ClientLimitsConfig } from '../../config/cluster-config.js';
import { addressKey } from '../../transport/address-key.js';
import { KeyedBuckets } from '../../transport/rate-limit.js';
import type { MachineView } from './limits.js';

export class AddressLimits {
  private readonly inFlight = new Map<string, number>();
  /** Requests counted in flight, and openSession requests counted as pending, by request. */
  private readonly counted = new WeakMap<Request, { readonly address: string; opening: boolean }>();
  private readonly sessions = new Map<string, Set<number>>();
  private readonly pendingOpens = new Map<string, number>();
  private readonly addressOf = new Map<number, string>();
  private readonly tokenBuckets: KeyedBuckets | null;

  constructor(
    private readonly limits: ClientLimitsConfig,
    now: () => number = () => performance.now(),
  ) {
    const rate = limits.requestsPerSecondPerToken;
    this.tokenBuckets = rate > 0 ? new KeyedBuckets(rate, limits.requestBurstPerToken, now) : null;
  }

  /**
   * Why `req` from `remote` may not be served now, or null: it is then counted (in flight,
   * and as a pending open for an openSession) until settle() is given its answer.
   * `token` is the token's name (auth on), for its bucket.
   */
  admit(remote: string, req: Request, token: string | null, machine: MachineView): WireError | null {
    const address = addressKey(remote);
    if (token !== null && this.tokenBuckets !== null && !this.tokenBuckets.take(token)) {
      return { code: 'RATE_LIMITED', message: `more than ${this.limits.requestsPerSecondPerToken} requests per second with token "${token}" (limits.requestsPerSecondPerToken); back off and retry` };
    }
    const busy = this.inFlight.get(address) ?? 0;
    if (busy >= this.limits.maxInFlightPerAddress) {
      return { code: 'LIMIT_EXCEEDED', message: `${busy} requests from this address are being served by this node, the limit (limits.maxInFlightPerAddress); wait for their answers` };
    }
    const opening = req.op === 'openSession';
    if (opening) {
      const open = this.openCount(address, machine);
      if (open >= this.limits.maxSessionsPerAddress) {
        return { code: 'LIMIT_EXCEEDED', message: `${open} sessions opened through this node from this address are open, the limit (limits.maxSessionsPerAddress); close some first` };
      }
      this.pendingOpens.set(address, (this.pendingOpens.get(address) ?? 0) + 1);
    }
    this.inFlight.set(address, busy + 1);
    this.counted.set(req, { address, opening });
    return null;
  }

  /** The answer to a request admit() counted (any other is ignored). */
  settle<R extends Request>(req: R, answer: Answer<R['op']>): void {
    // A close that was answered is applied by the leader: the session stops counting now,
    // not when this node (a follower, maybe behind) applies the entry too.
    if (req.op === 'closeSession' && answer.ok) this.ended(req.session);
    const c = this.counted.get(req);
    if (!c) return;
    this.counted.delete(req);
    decrement(this.inFlight, c.address);
    if (!c.opening) return;
    decrement(this.pendingOpens, c.address);
    const opened = answer.ok ? answer.result : null;
    if (opened !== null && typeof opened === 'object' && 'session' in opened && typeof opened.session === 'number') {
      let set = this.sessions.get(c.address);
      if (!set) this.sessions.set(c.address, (set = new Set()));
      set.add(opened.session);
      this.addressOf.set(opened.session, c.address);
    }
  }

  /** A session closed or expired (an applied entry said so). */
  ended(session: number): void {
    const address = this.addressOf.get(session);
    if (address === undefined) return;
    this.addressOf.delete(session);
    const set = this.sessions.get(address);
    set?.delete(session);
    if (set?.size === 0) this.sessions.delete(address);
  }

  /** Open sessions and opens in flight of `address`. At the limit, sessions the machine no
   *  longer has (a snapshot installed from the leader carries no close events) stop counting. */
  private openCount(address: string, machine: MachineView): number {
    const pending = this.pendingOpens.get(address) ?? 0;
    const set = this.sessions.get(address);
    if (set && set.size + pending >= this.limits.maxSessionsPerAddress) {
      for (const id of set) if (id <= machine.appliedIndex && machine.session(id) === null) this.ended(id);
    }
    return (this.sessions.get(address)?.size ?? 0) + pending;
  }
}

function decrement(m: Map<string, number>, key: string): void {
  const n = (m.get(key) ?? 1) - 1;
  if (n > 0) m.set(key, n);
  else m.delete(key);
}
