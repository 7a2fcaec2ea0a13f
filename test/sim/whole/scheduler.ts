// Virtual time for the whole-node simulator. Every timer of every node and client, and every
// frame in flight, is an event in one queue ordered by (virtual time, order of scheduling):
// the run takes the earliest, advances time to it, runs it, and lets the promise
// continuations it started finish before the next (they are deterministic: nothing in a
// simulated run touches a socket, a file or the system's clock). So one seed gives one
// order of events, bit for bit.
//
// Each event belongs to an owner (a node, a client, or the world). A paused owner's events
// wait until it resumes, then run late, as a process stopped with SIGSTOP runs its overdue
// timers when it is continued.
import { EventHeap } from '../heap.js';
import type { NodeClock, Timer } from '../../../src/server/clock.js';
import type { Clock as SdkClock } from '../../../src/client/clock.js';

interface Event {
  readonly time: number;
  readonly seq: number;
  readonly owner: string;
  readonly run: () => void;
  cancelled: boolean;
  /** Timer's: nothing keeps a simulated process alive. */
  unref(): void;
}

const noop = (): void => {};

/** The real setImmediate, kept before a run replaces the global one. */
const realImmediate = globalThis.setImmediate;

export class Scheduler {
  /** Virtual milliseconds since the run began (the world's true time). */
  time = 0;
  private seq = 0;
  private readonly queue = new EventHeap<Event>();
  private readonly paused = new Map<string, Event[]>();
  /** Events run so far. */
  steps = 0;

  schedule(owner: string, delayMs: number, run: () => void): Event {
    const ev: Event = { time: this.time + Math.max(0, delayMs), seq: this.seq++, owner, run, cancelled: false, unref: noop };
    this.queue.push(ev);
    return ev;
  }

  cancel(ev: Event | null | undefined): void {
    if (ev) ev.cancelled = true;
  }

  pause(owner: string): void {
    if (!this.paused.has(owner)) this.paused.set(owner, []);
  }

  /** The owner runs again: what came due while it was paused runs now, in order. */
  resume(owner: string): void {
    const held = this.paused.get(owner);
    if (!held) return;
    this.paused.delete(owner);
    for (const ev of held) if (!ev.cancelled) this.queue.push({ ...ev, time: this.time, seq: this.seq++ });
  }

  isPaused(owner: string): boolean {
    return this.paused.has(owner);
  }

  /** Runs events until virtual time `until` (or the queue empties, or `stop()` says so). */
  async runUntil(until: number, stop: () => boolean = () => false): Promise<void> {
    for (;;) {
      // Let the promise continuations started so far (by the last event, or by the caller)
      // run to the end first: they may schedule events.
      await new Promise<void>((resolve) => realImmediate(resolve));
      const ev = this.queue.peek();
      if (!ev || ev.time > until || stop()) break;
      this.queue.pop();
      if (ev.cancelled) continue;
      const held = this.paused.get(ev.owner);
      if (held) {
        held.push(ev);
        continue;
      }
      this.time = ev.time;
      this.steps++;
      ev.run();
    }
    if (!stop()) this.time = Math.max(this.time, until);
  }

  /** Runs events until `work` settles (or `maxMs` of virtual time pass: then it throws);
   *  the way to await anything that waits on virtual time. */
  async drive<T>(work: Promise<T>, maxMs: number, what: string): Promise<T> {
    let settled = false;
    const watched = work.finally(() => (settled = true));
    watched.catch(() => {});
    await this.runUntil(this.time + maxMs, () => settled);
    if (!settled) throw new Error(`${what} did not finish within ${maxMs} ms of virtual time`);
    return watched;
  }

  /** A node's clock: monotonic time runs at (1 + drift) of true time; wall time is
   *  monotonic time plus an offset that a clock step moves. */
  nodeClock(owner: string, drift: number, wallStart: number): SimNodeClock {
    return new SimNodeClock(this, owner, drift, wallStart);
  }
}

export class SimNodeClock implements NodeClock {
  /** Wall-clock offset (a step of the wall clock moves it; monotonic time never jumps). */
  wallOffset: number;

  constructor(
    private readonly s: Scheduler,
    readonly owner: string,
    readonly drift: number,
    wallStart: number,
  ) {
    this.wallOffset = wallStart;
  }

  now(): number {
    return this.s.time * (1 + this.drift);
  }

  wall(): number {
    return Math.floor(this.now() + this.wallOffset);
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.s.schedule(this.owner, ms / (1 + this.drift), fn);
  }

  setInterval(fn: () => void, ms: number): Timer {
    const handle: { ev: Event | null; unref(): void } = { ev: null, unref: () => {} };
    const arm = (): void => {
      handle.ev = this.s.schedule(this.owner, Math.max(1, ms) / (1 + this.drift), () => {
        arm();
        fn();
      });
    };
    arm();
    return handle;
  }

  clear(timer: Timer | null | undefined): void {
    if (!timer) return;
    const t = timer as { ev?: Event | null; cancelled?: boolean };
    if ('ev' in t) this.s.cancel(t.ev);
    else this.s.cancel(t as Event);
  }

  soon(fn: () => void): void {
    this.s.schedule(this.owner, 0, fn);
  }

  /** The same clock as the SDK sees it. */
  sdk(): SdkClock {
    return {
      now: () => this.now(),
      setTimeout: (fn, ms) => this.setTimeout(fn, ms),
      clearTimeout: (h) => this.clear(h as Timer),
    };
  }
}
