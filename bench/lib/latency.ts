// Latency samples of one kind of operation, and their summary (ms).

export interface LatencySummary {
  readonly n: number;
  readonly mean: number | null;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly max: number | null;
}

export class LatencyRecorder {
  private samples = new Float64Array(1 << 14);
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(ms: number): void {
    if (this.count === this.samples.length) {
      const grown = new Float64Array(this.samples.length * 2);
      grown.set(this.samples);
      this.samples = grown;
    }
    this.samples[this.count++] = ms;
  }

  summary(): LatencySummary {
    return summarize(this.samples.subarray(0, this.count));
  }
}

/** Nearest-rank percentiles, as the anchors compute them. */
export function summarize(values: ArrayLike<number>): LatencySummary {
  const n = values.length;
  if (n === 0) return { n: 0, mean: null, p50: null, p99: null, max: null };
  const sorted = Float64Array.from(values).sort();
  const rank = (p: number): number => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return { n, mean: sum / n, p50: rank(0.5), p99: rank(0.99), max: sorted[n - 1]! };
}

/** Median of a few values (the failover tries). */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
