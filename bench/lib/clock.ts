// One time base for the bench's processes: milliseconds since the Unix epoch with
// sub-millisecond resolution, comparable between the orchestrator and the client process
// (both read the same machine's clock), monotonic within a process.
import { performance } from 'node:perf_hooks';

export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
