// The SDK's one way to wait. Everything that waits (for an answer, a connection, a grant,
// a turn, a session, a backoff) waits through waitFor: for the awaited thing, the caller's
// deadline or an abort, whichever comes first, with every timer and listener removed
// afterwards. One helper, so that the deadline rule of docs/protocol.md ("a call with a
// deadline settles within it plus a small bound, whatever the cluster does") has one
// implementation rather than a copy per wait.
import type { Clock, TimerHandle } from './clock.js';

/** The deadline passed first. Internal: callers turn it into the error their API promises. */
export class DeadlineReached extends Error {
  constructor() {
    super('deadline reached');
    this.name = 'DeadlineReached';
  }
}

export interface WaitOptions<T> {
  readonly clock: Clock;
  /** On `clock`; Infinity for none. */
  readonly deadline: number;
  /** An abort rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** What the deadline yields (it may throw); default: reject with DeadlineReached. */
  readonly onDeadline?: () => T;
}

/**
 * Waits for `arm` to settle, the deadline or an abort. `arm` starts the awaited thing with
 * settle functions (later calls are ignored) and returns its cleanup, which runs exactly
 * once however the wait ends.
 */
export function waitFor<T>(
  options: WaitOptions<T>,
  arm: (resolve: (value: T) => void, reject: (error: unknown) => void) => (() => void) | void,
): Promise<T> {
  const { clock, deadline, signal, onDeadline } = options;
  return new Promise<T>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let settled = false;
    let armed = false;
    let disarm: (() => void) | void = undefined;
    let timer: TimerHandle | undefined;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (armed) disarm?.();
      return true;
    };
    const onAbort = (): void => {
      if (finish()) reject(signal?.reason);
    };
    if (deadline !== Infinity) {
      timer = clock.setTimeout(() => {
        if (!finish()) return;
        if (!onDeadline) return reject(new DeadlineReached());
        try {
          resolve(onDeadline());
        } catch (e) {
          reject(e);
        }
      }, deadline - clock.now());
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      disarm = arm(
        (value) => {
          if (finish()) resolve(value);
        },
        (error) => {
          if (finish()) reject(error);
        },
      );
    } catch (e) {
      if (finish()) reject(e);
    }
    armed = true;
    if (settled) disarm?.(); // settled while arming: clean up now
  });
}

/** `promise`, unless the deadline passes (DeadlineReached) or the signal aborts first. */
export function within<T>(promise: Promise<T>, options: WaitOptions<T>): Promise<T> {
  return waitFor(options, (resolve, reject) => {
    promise.then(resolve, reject);
  });
}

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when it aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return waitFor({ clock, deadline: clock.now() + ms, signal, onDeadline: () => undefined }, () => {});
}
