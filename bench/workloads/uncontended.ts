// uncontended: C clients (one LockClient, one session each), each cycling acquire/release on
// a lock of its own. Figures: cycles/s, acquire and release latency, the server's cost per
// cycle (Raft commits: acquire + release = 2) and fsyncs per commit.
import { closeClients, connectClients } from '../lib/clients.js';
import { LatencyRecorder, type LatencySummary } from '../lib/latency.js';
import { opCost, type OpCost, type WindowCost } from '../lib/node-sampler.js';
import type { WorkloadTiming } from '../lib/spec.js';
import { runLoopWindow } from '../lib/window.js';
import { performance } from 'node:perf_hooks';

export interface UncontendedSpec extends WorkloadTiming {
  readonly kind: 'uncontended';
  readonly clients: number;
}

export interface UncontendedResult {
  readonly kind: 'uncontended';
  readonly clients: number;
  readonly cycles: number;
  readonly cyclesPerSec: number;
  readonly acquireMs: LatencySummary;
  readonly releaseMs: LatencySummary;
  readonly errors: number;
  readonly firstError: string | null;
  readonly window: WindowCost;
  readonly cost: OpCost;
}

export async function runUncontended(spec: UncontendedSpec): Promise<UncontendedResult> {
  const clients = await connectClients(spec.endpoints, spec.clients);
  const acquire = new LatencyRecorder();
  const release = new LatencyRecorder();
  let cycles = 0;
  try {
    const w = await runLoopWindow({
      ...spec,
      workers: spec.clients,
      step: async (i, state) => {
        const name = `bench/u${spec.clients}/c${i}`;
        const a = performance.now();
        const lock = await clients[i]!.acquire(name);
        const b = performance.now();
        await lock.release();
        const c = performance.now();
        if (state.phase === 'measure') {
          acquire.push(b - a);
          release.push(c - b);
          cycles++;
        }
      },
    });
    return {
      kind: 'uncontended',
      clients: spec.clients,
      cycles,
      cyclesPerSec: cycles / (w.elapsedMs / 1000),
      acquireMs: acquire.summary(),
      releaseMs: release.summary(),
      errors: w.errors,
      firstError: w.firstError,
      window: w.cost,
      cost: opCost(w.cost, cycles),
    };
  } finally {
    await closeClients(clients);
  }
}
