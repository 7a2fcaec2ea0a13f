// contended: W clients blocking on ONE lock; the cluster queues them FIFO and each release
// hands the lock to the next waiter. Figures: handoffs/s, wait latency (acquire call to
// grant), fairness (fewest and most grants of one client in the window), and two checks made
// in this process, where every grant is seen: mutual exclusion (no grant while another
// client holds the lock) and fencing tokens that strictly increase from holder to holder.
import { performance } from 'node:perf_hooks';
import { closeClients, connectClients } from '../lib/clients.js';
import { LatencyRecorder, type LatencySummary } from '../lib/latency.js';
import { opCost, type OpCost, type WindowCost } from '../lib/node-sampler.js';
import type { WorkloadTiming } from '../lib/spec.js';
import { runLoopWindow } from '../lib/window.js';

export interface ContendedSpec extends WorkloadTiming {
  readonly kind: 'contended';
  readonly clients: number;
}

export interface ContendedResult {
  readonly kind: 'contended';
  readonly clients: number;
  readonly handoffs: number;
  readonly handoffsPerSec: number;
  readonly waitMs: LatencySummary;
  readonly releaseMs: LatencySummary;
  readonly grantsPerClientMin: number;
  readonly grantsPerClientMax: number;
  readonly mutualExclusionViolations: number;
  readonly tokensChecked: number;
  readonly tokenRegressions: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly window: WindowCost;
  readonly cost: OpCost;
}

export async function runContended(spec: ContendedSpec): Promise<ContendedResult> {
  const clients = await connectClients(spec.endpoints, spec.clients);
  const name = 'bench/contended';
  const wait = new LatencyRecorder();
  const release = new LatencyRecorder();
  const grants = new Array<number>(spec.clients).fill(0);
  let handoffs = 0;
  let holder = -1;
  let violations = 0;
  let lastToken = -1;
  let tokensChecked = 0;
  let tokenRegressions = 0;
  try {
    const w = await runLoopWindow({
      ...spec,
      workers: spec.clients,
      step: async (i, state) => {
        const a = performance.now();
        const lock = await clients[i]!.acquire(name);
        const b = performance.now();
        if (holder !== -1) violations++;
        holder = i;
        tokensChecked++;
        if (lock.token <= lastToken) tokenRegressions++;
        lastToken = lock.token;
        // Hold the lock across a turn of the event loop: a grant to anyone else that
        // arrives meanwhile is a violation.
        await new Promise((r) => setImmediate(r));
        if (holder !== i) violations++;
        holder = -1; // cleared before the release is sent: the next grant may follow it
        const c = performance.now();
        await lock.release();
        const d = performance.now();
        if (state.phase === 'measure') {
          handoffs++;
          grants[i]!++;
          wait.push(b - a);
          release.push(d - c);
        }
      },
    });
    return {
      kind: 'contended',
      clients: spec.clients,
      handoffs,
      handoffsPerSec: handoffs / (w.elapsedMs / 1000),
      waitMs: wait.summary(),
      releaseMs: release.summary(),
      grantsPerClientMin: Math.min(...grants),
      grantsPerClientMax: Math.max(...grants),
      mutualExclusionViolations: violations,
      tokensChecked,
      tokenRegressions,
      errors: w.errors,
      firstError: w.firstError,
      window: w.cost,
      cost: opCost(w.cost, handoffs),
    };
  } finally {
    await closeClients(clients);
  }
}
