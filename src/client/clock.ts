// The SDK's only source of time. Every deadline (request, wait, lease) is measured on a
// monotonic clock, never on the wall clock, because a wall clock can jump under NTP and a
// lease must not. Tests inject a fake clock to drive keepalives and deadlines by hand.
// Waiting on it (deadlines, sleeps) goes through wait.ts.

/** Opaque handle of a scheduled callback. */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds on a monotonic clock (any origin). */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => performance.now(),
  // Node fires a timer of more than 2^31-1 ms at once; clamp so a far deadline stays far.
  setTimeout: (callback, ms) => setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_MS)),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
