// A clock the test moves by hand, for the SDK's keepalives, deadlines and backoff. Real I/O
// still runs on real time: after moving the clock, let the sockets settle (settle()).
import type { Clock, TimerHandle } from '../../src/client/index.js';

export class FakeClock implements Clock {
  private t = 1_000; // not 0: a deadline of 0 must not look special
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward, running each due timer at its own instant, in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let nextId = -1;
      let nextAt = Infinity;
      for (const [id, timer] of this.timers) {
        if (timer.at <= end && (timer.at < nextAt || (timer.at === nextAt && id < nextId))) {
          nextId = id;
          nextAt = timer.at;
        }
      }
      if (nextId < 0) break;
      const timer = this.timers.get(nextId)!;
      this.timers.delete(nextId);
      this.t = Math.max(this.t, timer.at);
      timer.fn();
    }
    this.t = end;
  }
}

/** Real-time pause so socket traffic and promise chains run. */
export function settle(ms = 15): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits (real time) until `condition` holds, or fails after `timeoutMs`. */
export async function until(condition: () => boolean, what = 'condition', timeoutMs = 3_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await settle(5);
  }
}

/** Moves `clock` forward in steps, letting sockets run between them, until `condition` holds. */
export async function advanceUntil(clock: FakeClock, condition: () => boolean, what = 'condition', stepMs = 50, timeoutMs = 3_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    clock.advance(stepMs);
    await settle(5);
  }
}
