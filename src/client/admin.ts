// The SDK's operator surface (`client.admin`): sessions as an operator sees them, and
// revoking one. Listing others' sessions and revoking need an admin token; a token that is
// not one lists only its own sessions. The same ops as `palisade session list|show|revoke`.
import type { SessionView } from '../protocol/client-protocol.js';
import { defaultDeadline, type ClientCore } from './core.js';
import { InvalidArgumentError } from './errors.js';

export type { SessionView };

export interface SessionsQuery {
  /** Only sessions whose label starts with this. */
  readonly prefix?: string;
  /** Only sessions opened by this token name. */
  readonly owner?: string;
  /** At most this many (default 1000). */
  readonly limit?: number;
  readonly timeoutMs?: number;
}

export class ClientAdmin {
  constructor(private readonly core: ClientCore) {}

  /** Open sessions, by id: owner, label, TTL, time since their lease was renewed, and what
   *  each holds, waits for, leads and ties (a linearizable read, answered by the leader). */
  async sessions(q: SessionsQuery = {}): Promise<SessionView[]> {
    const body = {
      op: 'sessions' as const,
      ...(q.prefix !== undefined ? { prefix: q.prefix } : {}),
      ...(q.owner !== undefined ? { owner: q.owner } : {}),
      ...(q.limit !== undefined ? { limit: q.limit } : {}),
    };
    return [...(await this.core.link.call(() => body, { deadline: this.deadline(q.timeoutMs) }))];
  }

  /** One session's view; null when it is not open. */
  async session(id: number, options: { timeoutMs?: number } = {}): Promise<SessionView | null> {
    checkId(id);
    return this.core.link.call(() => ({ op: 'sessionInfo', session: id }), { deadline: this.deadline(options.timeoutMs) });
  }

  /**
   * Ends session `id` as an expiry would (admin token): its locks are freed, held back by
   * lock-delay as after an expiry, its holders' signals abort, its ephemeral keys go. The
   * node that takes the request logs it with the token's name and `reason`. Returns the
   * entry's index. SessionExpiredError when the session is not open.
   */
  async revokeSession(id: number, reason: string, options: { timeoutMs?: number } = {}): Promise<{ index: number }> {
    checkId(id);
    if (typeof reason !== 'string' || reason === '') throw new InvalidArgumentError('a revoke needs a reason (it goes into the audit log)');
    return this.core.link.call(() => ({ op: 'revokeSession', session: id, reason }), { deadline: this.deadline(options.timeoutMs) });
  }

  private deadline(timeoutMs: number | undefined): number {
    return timeoutMs === undefined ? defaultDeadline(this.core) : this.core.clock.now() + timeoutMs;
  }
}

function checkId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 1) throw new InvalidArgumentError('a session id is a positive integer');
}
