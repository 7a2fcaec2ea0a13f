// What every workload is told: where the cluster is, and how long to warm up and measure.
import type { BenchNode } from './node-sampler.js';

export interface WorkloadTiming {
  readonly nodes: readonly BenchNode[];
  readonly endpoints: readonly string[];
  readonly warmupMs: number;
  readonly durationMs: number;
}

export function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
