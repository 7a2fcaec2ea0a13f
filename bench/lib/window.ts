// A fixed measurement window after a warm-up, as the anchors' bench-lib does it: workers run
// closed loops the whole time; only operations that complete inside the window count, and
// the nodes are sampled at its edges for the server-side cost.
import { epochMs, sleep } from './clock.js';
import { ClusterSampler, windowCost, type BenchNode, type ClusterSample, type WindowCost } from './node-sampler.js';

export type Phase = 'warmup' | 'measure' | 'drain';

export interface WindowState {
  phase: Phase;
  stop: boolean;
}

export interface WindowOptions {
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly nodes: readonly BenchNode[];
  readonly workers: number;
  /** One closed-loop worker; returns when `state.stop` turns true. */
  readonly body: (worker: number, state: WindowState) => Promise<void>;
}

export interface WindowResult {
  /** Length of the counting window (ms). */
  readonly elapsedMs: number;
  readonly before: ClusterSample;
  readonly after: ClusterSample;
  readonly cost: WindowCost;
}

export async function runWindow(o: WindowOptions): Promise<WindowResult> {
  const sampler = await ClusterSampler.open(o.nodes);
  try {
    const state: WindowState = { phase: 'warmup', stop: false };
    const running = Array.from({ length: o.workers }, (_, w) => o.body(w, state));
    await sleep(o.warmupMs);
    const before = await sampler.sample();
    state.phase = 'measure';
    const t0 = epochMs();
    await sleep(o.durationMs);
    state.phase = 'drain';
    const t1 = epochMs();
    const after = await sampler.sample();
    state.stop = true;
    await Promise.all(running);
    return { elapsedMs: t1 - t0, before, after, cost: windowCost(before, after) };
  } finally {
    sampler.close();
  }
}

/** Measure the server side over a window in which the caller's own machinery does the work. */
export async function measureWindow(nodes: readonly BenchNode[], durationMs: number, state: WindowState): Promise<WindowResult> {
  const sampler = await ClusterSampler.open(nodes);
  try {
    const before = await sampler.sample();
    state.phase = 'measure';
    const t0 = epochMs();
    await sleep(durationMs);
    state.phase = 'drain';
    const t1 = epochMs();
    const after = await sampler.sample();
    return { elapsedMs: t1 - t0, before, after, cost: windowCost(before, after) };
  } finally {
    sampler.close();
  }
}
