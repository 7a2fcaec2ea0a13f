// Turns per name inside one client, first come first served. One session holds a lock (or
// stands in an election) once, so two callers of one client must not both believe they
// have it: they queue here before they reach the cluster.
import type { ClientCore } from './core.js';
import { waitFor } from './wait.js';

/** FIFO turns per name inside one client. */
export class LocalTurns {
  private readonly queues = new Map<string, (() => void)[]>();

  /**
   * Waits for the turn; resolves with the function that passes it on. Rejects with
   * DeadlineReached when the deadline passes first, or the signal's reason.
   */
  take(name: string, deadline: number, core: ClientCore, signal?: AbortSignal): Promise<() => void> {
    const queue = this.queues.get(name);
    if (!queue) {
      this.queues.set(name, []);
      return Promise.resolve(this.passer(name));
    }
    return waitFor<() => void>({ clock: core.clock, deadline, signal }, (resolve) => {
      const grant = (): void => resolve(this.passer(name));
      queue.push(grant);
      return () => {
        const i = queue.indexOf(grant);
        if (i >= 0) queue.splice(i, 1);
      };
    });
  }

  /** The turn if it is free now, else null. */
  tryTake(name: string): (() => void) | null {
    if (this.queues.has(name)) return null;
    this.queues.set(name, []);
    return this.passer(name);
  }

  private passer(name: string): () => void {
    let passed = false;
    return () => {
      if (passed) return;
      passed = true;
      const queue = this.queues.get(name);
      const next = queue?.[0];
      if (next) next();
      else this.queues.delete(name);
    };
  }
}
