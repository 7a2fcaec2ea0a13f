// How long locks are waited for and held, from the lock machine's events as the leader
// applies them (a follower, or a node replaying its log at start-up, would time the replay,
// not the clients). A wait runs from `queued` to `granted` (an immediate grant waited 0 s); a
// hold from `granted` to `released`, whatever the reason (release, close, expiry).
import type { MachineEvent } from '../../lockfsm/index.js';

/** Beyond this many open waits or holds the tables are dropped (a bound, not a case). */
const MAX_TRACKED = 200_000;

export interface LockTimingSink {
  onLockWait(seconds: number): void;
  onLockHold(seconds: number): void;
}

export class LockTiming {
  private readonly queuedAt = new Map<string, number>();
  private readonly grantedAt = new Map<string, number>();

  constructor(private readonly sink: LockTimingSink) {}

  /** `leading`: whether this node leads now; only then are times observed. */
  onEvent(ev: MachineEvent, now: number, leading: boolean): void {
    if (!leading) {
      if (this.queuedAt.size + this.grantedAt.size > 0) this.clear();
      return;
    }
    switch (ev.type) {
      case 'queued':
        this.queuedAt.set(key(ev.session, ev.name), now);
        break;
      case 'granted': {
        const k = key(ev.session, ev.name);
        const since = this.queuedAt.get(k);
        this.queuedAt.delete(k);
        this.sink.onLockWait(since === undefined ? 0 : (now - since) / 1000);
        this.grantedAt.set(k, now);
        break;
      }
      case 'released': {
        const k = key(ev.session, ev.name);
        const since = this.grantedAt.get(k);
        this.grantedAt.delete(k);
        if (since !== undefined) this.sink.onLockHold((now - since) / 1000);
        break;
      }
      default:
        break;
    }
    if (this.queuedAt.size + this.grantedAt.size > MAX_TRACKED) this.clear();
  }

  /** When (this timer's ms) `session` was granted `name`, if this node saw it as leader. */
  heldSince(session: number, name: string): number | null {
    return this.grantedAt.get(key(session, name)) ?? null;
  }

  private clear(): void {
    this.queuedAt.clear();
    this.grantedAt.clear();
  }
}

function key(session: number, name: string): string {
  return `${session}\u0000${name}`;
}
