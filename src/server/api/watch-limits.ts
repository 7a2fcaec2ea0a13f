// Subscriptions one connection may hold: key prefixes it watches and elections it observes
// cost the node memory per connection and work per event, so they are bounded
// (limits.maxWatchesPerConnection) and counted when requested. A watch prefix longer than
// any key (the lock machine's maxKeyBytes) could never match and is refused.
import { DEFAULT_MACHINE_CONFIG } from '../../lockfsm/index.js';
import type { Request, WireError } from '../../protocol/client-protocol.js';

const MAX_PREFIX_BYTES = DEFAULT_MACHINE_CONFIG.maxKeyBytes;

export class ConnectionWatches {
  private readonly keys = new Set<string>();

  constructor(private readonly max: number) {}

  /** Why `req` may not add a subscription, or null (a new one is then counted). */
  problem(req: Request): WireError | null {
    let key: string;
    if (req.op === 'watch' || req.op === 'unwatch') {
      const bytes = Buffer.byteLength(req.prefix, 'utf8');
      if (req.op === 'watch' && bytes > MAX_PREFIX_BYTES) {
        return { code: 'INVALID_ARGUMENT', message: `watch.prefix is ${bytes} bytes, longer than any key (${MAX_PREFIX_BYTES})` };
      }
      key = `w:${req.prefix}`;
    } else if (req.op === 'observe' || req.op === 'unobserve') {
      key = `e:${req.election}`;
    } else {
      return null;
    }
    if (req.op === 'unwatch' || req.op === 'unobserve') {
      this.keys.delete(key);
      return null;
    }
    if (this.keys.has(key)) return null;
    if (this.keys.size >= this.max) {
      return { code: 'LIMIT_EXCEEDED', message: `this connection already watches or observes ${this.keys.size} prefixes and elections, the limit (limits.maxWatchesPerConnection); unwatch some first` };
    }
    this.keys.add(key);
    return null;
  }
}
