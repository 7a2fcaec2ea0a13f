// The arithmetic of an ABBA comparison of two builds (`npm run bench -- --abba`): the order
// the runs go in, and per figure each side's median, the ratio B/A and its spread. Pure, so
// that it is tested with made-up samples (test/bench/abba.test.ts).
import { median } from './latency.js';

export type Side = 'A' | 'B';

/** One figure of one run: `key` names the same figure in every run (case and figure). */
export interface Figure {
  readonly key: string;
  /** null when the run produced the case but not this figure (no steady leader, no recovery). */
  readonly value: number | null;
  readonly better: 'higher' | 'lower';
}

export interface Run {
  readonly side: Side;
  /** Empty for a run whose cases all failed: its figures count as missing. */
  readonly figures: readonly Figure[];
}

/**
 * A B B A, `rounds` times. Each build runs as often as the other, early and late alike, so a
 * drift of the machine's speed over the run (another job starting, caches warming) weighs on
 * both sides the same, and each pair of neighbours (A,B), (B,A) was measured close in time.
 */
export function abbaSchedule(rounds: number): Side[] {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds: expected a whole number ≥ 1, got ${rounds}`);
  return Array.from({ length: rounds }, () => ['A', 'B', 'B', 'A'] as const).flat();
}

export interface Comparison {
  readonly key: string;
  readonly better: 'higher' | 'lower';
  /** Each side's values in run order (null: missing in that run) and their median. */
  readonly a: { readonly values: readonly (number | null)[]; readonly median: number | null };
  readonly b: { readonly values: readonly (number | null)[]; readonly median: number | null };
  /** median B / median A. */
  readonly ratio: number | null;
  /** B/A of each pair of neighbouring runs (runs 1-2, 3-4, ...) in which both have the figure. */
  readonly pairRatios: readonly number[];
  /** Lowest and highest of pairRatios: how far one pair's verdict can stray from another's. */
  readonly spread: { readonly min: number; readonly max: number } | null;
}

const quotient = (b: number | null, a: number | null): number | null => (a === null || b === null || a === 0 ? null : b / a);

/** Every figure that any run has, in the order they first appear. `runs` in the order they ran,
 *  as abbaSchedule lays them out: each neighbouring pair holds one A and one B. */
export function compare(runs: readonly Run[]): Comparison[] {
  if (runs.length % 2 !== 0) throw new Error(`ABBA: ${runs.length} runs, expected pairs`);
  for (let i = 0; i < runs.length; i += 2) {
    if (runs[i]!.side === runs[i + 1]!.side) throw new Error(`ABBA: runs ${i + 1} and ${i + 2} are both ${runs[i]!.side}`);
  }
  const better = new Map<string, Figure['better']>();
  for (const r of runs) for (const f of r.figures) if (!better.has(f.key)) better.set(f.key, f.better);
  return [...better].map(([key, dir]) => {
    const valueIn = (r: Run): number | null => r.figures.find((f) => f.key === key)?.value ?? null;
    const side = (s: Side): Comparison['a'] => {
      const values = runs.filter((r) => r.side === s).map(valueIn);
      return { values, median: median(values.filter((v): v is number => v !== null)) };
    };
    const a = side('A');
    const b = side('B');
    const pairRatios: number[] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const [x, y] = [runs[i]!, runs[i + 1]!];
      const q = x.side === 'A' ? quotient(valueIn(y), valueIn(x)) : quotient(valueIn(x), valueIn(y));
      if (q !== null) pairRatios.push(q);
    }
    return {
      key,
      better: dir,
      a,
      b,
      ratio: quotient(b.median, a.median),
      pairRatios,
      spread: pairRatios.length ? { min: Math.min(...pairRatios), max: Math.max(...pairRatios) } : null,
    };
  });
}

/** What the pairs agree on, in words: B better (or worse) in every pair, or how they split. */
export function pairsSay(c: Comparison): string {
  const n = c.pairRatios.length;
  if (n === 0) return 'no pairs';
  const better = c.pairRatios.filter((q) => (c.better === 'higher' ? q > 1 : q < 1)).length;
  const worse = c.pairRatios.filter((q) => (c.better === 'higher' ? q < 1 : q > 1)).length;
  if (better === n) return `B better in ${n === 1 ? 'its pair' : `all ${n} pairs`}`;
  if (worse === n) return `B worse in ${n === 1 ? 'its pair' : `all ${n} pairs`}`;
  return `mixed: B better in ${better} of ${n}`;
}
