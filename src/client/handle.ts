// What a Lock and a Leadership share: both are beliefs held under one session, with a
// signal that aborts when the belief may be wrong, and both refuse use after that.
import type { ClientCore } from './core.js';
import { LockLostError, releasedReason } from './errors.js';
import type { Session } from './session.js';

export abstract class LeaseHandle {
  /** @internal The session the grant belongs to. */
  readonly session: Session;
  protected readonly core: ClientCore;
  /** The lock or election name, for error messages. */
  private readonly label: string;
  private readonly lost = new AbortController();
  private readonly onSessionEnd: () => void;

  protected constructor(core: ClientCore, session: Session, label: string) {
    this.core = core;
    this.session = session;
    this.label = label;
    this.onSessionEnd = () => {
      const reason: unknown = session.signal.reason;
      this.markLost(`its session ended (${reason instanceof Error ? reason.message : 'unknown reason'})`, reason);
    };
    session.signal.addEventListener('abort', this.onSessionEnd, { once: true });
  }

  /**
   * Aborted when the grant may be lost: at the client's safe deadline without an
   * acknowledged keepalive, when the session expires, when the cluster takes it away, or
   * when the holder gives it up. Hand it to work done under the grant (fetch, streams).
   */
  get signal(): AbortSignal {
    return this.lost.signal;
  }

  /** True while the client may believe it holds the grant (checked against the clock now). */
  get held(): boolean {
    return !this.lost.signal.aborted && this.session.isLive;
  }

  /** Throws LockLostError unless the grant is still believed held. */
  assertHeld(): void {
    if (!this.lost.signal.aborted && !this.session.isLive) {
      // The deadline passed before its timer ran (say, the process was paused): act on it
      // now. Ending the session loses this handle through its listener.
      try {
        this.core.sessions.checkLive(this.session);
      } catch {
        // expected: the session is over
      }
      this.markLost('the lease may have expired');
    }
    if (this.lost.signal.aborted) throw this.lostError();
  }

  /** @internal The grant is gone (or may be): abort the signal, then onLost(). */
  markLost(why: string, cause?: unknown): void {
    if (this.lost.signal.aborted) return;
    this.session.signal.removeEventListener('abort', this.onSessionEnd);
    this.lost.abort(new LockLostError(this.label, why, cause === undefined ? undefined : { cause }));
    this.onLost();
  }

  /** What the subclass frees when the grant is lost (not when its holder gives it up). */
  protected abstract onLost(): void;

  /** The holder gives the grant up (release, resign): the handle ends without onLost(). */
  protected endByHolder(why: string): void {
    this.session.signal.removeEventListener('abort', this.onSessionEnd);
    if (!this.lost.signal.aborted) this.lost.abort(releasedReason(this.label, why));
  }

  protected lostError(): LockLostError {
    const reason: unknown = this.lost.signal.reason;
    return reason instanceof LockLostError ? reason : releasedReason(this.label);
  }
}
