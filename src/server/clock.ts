// The node's only source of time and of timers (a seam, as hashicorp/raft injects its
// transport and stores): production passes the system's, the in-process cluster the system's
// too, and the whole-node simulator a virtual clock per node (with drift and pauses) driven
// by its seeded scheduler, so that one seed replays a node's history exactly. Modules of the
// node take it instead of reading performance.now(), Date.now() or the global timers.

/** What cancels a scheduled callback (Node's Timeout, or a simulator's handle). */
export interface Timer {
  /** Do not keep the process alive for this timer alone (a no-op in the simulator). */
  unref?(): unknown;
}

export interface NodeClock {
  /** Milliseconds on a monotonic clock (any origin): every duration the node measures. */
  now(): number;
  /** Wall-clock milliseconds since the epoch: only what is shown to people, and the start of
   *  a cluster's time (leases/cluster-clock.ts); never a duration. */
  wall(): number;
  setTimeout(fn: () => void, ms: number): Timer;
  setInterval(fn: () => void, ms: number): Timer;
  /** Cancels a timer of either kind (null and undefined are ignored). */
  clear(timer: Timer | null | undefined): void;
  /** Runs `fn` after the work now queued, I/O included (Node's setImmediate). */
  soon(fn: () => void): void;
}

/** Resolves after `ms` on `clock`. */
export function sleep(clock: NodeClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** Resolves at the next turn of `clock`'s loop (lets I/O and timers run in between). */
export function nextTurn(clock: NodeClock): Promise<void> {
  return new Promise((resolve) => clock.soon(resolve));
}

type NodeTimeout = ReturnType<typeof setTimeout>;

/** The process's own clock and timers. */
export const systemClock: NodeClock = {
  now: () => performance.now(),
  wall: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clear: (timer) => {
    if (timer) clearTimeout(timer as NodeTimeout);
  },
  soon: (fn) => void setImmediate(fn),
};
