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
