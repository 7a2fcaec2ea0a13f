// `palisade locks`: the lock table, read linearizably through any reachable node (the
// client protocol's `locks` op; a follower confirms with the leader before answering).
import type { LockInfo } from '../protocol/client-protocol.js';
import { rpc, RpcError } from '../protocol/rpc.js';
import { rpcCredentials } from './credentials.js';
import { printable } from './terminal-text.js';

export interface LocksQuery {
  readonly prefix?: string;
  readonly limit?: number;
}

/** Ask each endpoint in turn until one answers; the last error if none does. */
export async function fetchLocks(endpoints: readonly string[], q: LocksQuery, timeoutMs = 3_000): Promise<LockInfo[]> {
  let last: Error = new Error('no endpoints');
  for (const url of endpoints) {
    try {
      return [...(await rpc(url, { op: 'locks', ...(q.prefix ? { prefix: q.prefix } : {}), ...(q.limit ? { limit: q.limit } : {}) }, timeoutMs, rpcCredentials()))];
    } catch (e) {
      last = e as Error;
      // Arguments the cluster refuses are refused by every node: do not try the others.
      if (e instanceof RpcError && ['INVALID_ARGUMENT', 'UNAUTHENTICATED', 'PERMISSION_DENIED'].includes(e.code)) throw e;
    }
  }
  throw last;
}

function stateOf(l: LockInfo): string {
  if (l.delayed) return 'lock-delay';
  if (l.holders.length === 0) return l.waiters.length ? 'free, waiters queued' : 'free';
  return l.limit ? `held (${l.holders.length}/${l.limit})` : 'held';
}

export function formatLocks(locks: readonly LockInfo[]): string {
  if (locks.length === 0) return 'no locks';
  const header = ['NAME', 'MODE', 'SESSION', 'TOKEN', 'WAITERS', 'STATE'];
  const lines = locks.map((l) => [
    printable(l.name),
    l.holders[0]?.mode ?? '-',
    l.holders.map((h) => String(h.session)).join(',') || '-',
    l.holders.map((h) => String(h.token)).join(',') || '-',
    String(l.waiters.length),
    stateOf(l),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines].map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}
