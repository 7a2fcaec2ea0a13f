// A small seeded PRNG (mulberry32 seeded through splitmix32): the same seed gives the same
// sequence on every platform, so a simulated run replays bit for bit.
export class Prng {
  private readonly next: () => number;

  constructor(seed: number) {
    // splitmix32 scrambles small consecutive seeds into unrelated starting states.
    let z = (seed + 0x9e3779b9) >>> 0;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    this.next = mulberry32((z ^ (z >>> 16)) >>> 0);
  }

  /** Uniform 32-bit unsigned integer. */
  u32(): number {
    return this.next();
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (n <= 0) throw new Error(`prng: int(${n})`);
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  shuffle<T>(xs: readonly T[]): T[] {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** A child generator with its own stream (e.g. one per node's election timer). */
  fork(): Prng {
    return new Prng(this.u32());
  }
}

/**
 * Bare mulberry32 started at `state` as given (no scrambling): uniform 32-bit unsigned
 * integers. For streams that only need to be reproducible, not independent per seed.
 */
export function mulberry32(state: number): () => number {
  let a = state >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}
