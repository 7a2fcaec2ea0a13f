// A fixed measurement window after a warm-up, as the anchors' bench-lib does it: workers run
// closed loops the whole time; only operations that complete inside the window count, and
// the nodes are sampled at its edges for the server-side cost.
import { epochMs, sleep } from './clock.js';
import { ClusterSampler, windowCost, type BenchNode, type ClusterSample, type WindowCost } from './node-sampler.js';
import { errorText } from './spec.js';

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

export interface LoopWindowOptions extends Omit<WindowOptions, 'body'> {
  /** One operation of a worker's closed loop; a throw counts as an error. */
  readonly step: (worker: number, state: WindowState) => Promise<void>;
}

export interface LoopWindowResult extends WindowResult {
  /** Failed steps over the whole run, warm-up included. */
  readonly errors: number;
  readonly firstError: string | null;
}

/**
 * A window whose workers repeat `step` until it closes. A failed step is counted, the first
 * error kept for the report, and its worker pauses 10 ms so that a cluster refusing
 * everything is not spun against.
 */
export async function runLoopWindow(o: LoopWindowOptions): Promise<LoopWindowResult> {
  let errors = 0;
  let firstError: string | null = null;
  const w = await runWindow({
    ...o,
    body: async (worker, state) => {
      while (!state.stop) {
        try {
          await o.step(worker, state);
        } catch (e) {
          errors++;
          firstError ??= errorText(e);
          await sleep(10);
        }
      }
    },
  });
  return { ...w, errors, firstError };
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
