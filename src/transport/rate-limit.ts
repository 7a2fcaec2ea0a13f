// A token bucket: `ratePerSecond` requests on average, with bursts up to `burst`. One per
// client connection, so a single client cannot take the node's whole attention.

export class TokenBucket {
  private tokens: number;
  private last: number;

  /** `now` is a monotonic clock in ms (performance.now in production, a fake in tests). */
  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Takes one token; false when the bucket is empty (the request is refused). */
  take(): boolean {
    const t = this.now();
    // A clock that steps back (it should not) must not drain the bucket.
    const elapsedMs = Math.max(0, t - this.last);
    this.last = t;
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs * this.ratePerSecond) / 1000);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** More buckets than this: the full ones (idle long enough to have refilled) are dropped. */
const PRUNE_AT = 10_000;

/**
 * Token buckets by key (a client address, a token's name), shared by every connection of the
 * key and kept across reconnects: reconnecting refills nothing. A bucket that has refilled
 * is the same as a new one, so it is dropped when the map grows; what is kept is bounded by
 * the keys active within burst / rate seconds.
 */
export class KeyedBuckets {
  private readonly buckets = new Map<string, { bucket: TokenBucket; last: number }>();
  /** How long an idle bucket takes to refill completely. */
  private readonly refillMs: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number,
  ) {
    this.refillMs = (burst / ratePerSecond) * 1000;
  }

  /** Takes one token of `key`'s bucket; false when it is empty. */
  take(key: string): boolean {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= PRUNE_AT) this.prune(t);
      this.buckets.set(key, (b = { bucket: new TokenBucket(this.ratePerSecond, this.burst, this.now), last: t }));
    }
    b.last = t;
    return b.bucket.take();
  }

  get size(): number {
    return this.buckets.size;
  }

  private prune(t: number): void {
    for (const [key, b] of this.buckets) if (t - b.last >= this.refillMs) this.buckets.delete(key);
  }
}
