/**
 * Token buckets per caller (a token id, or an address for unauthenticated requests): `rps` sustained,
 * `burst` at once. In-process: one API instance holds its own buckets.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rps: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** 0 when the request may go ahead, else the seconds to wait before a retry can succeed. */
  take(caller: string): number {
    const now = this.now();
    let bucket = this.buckets.get(caller);
    if (!bucket) {
      if (this.buckets.size > 100_000) this.buckets.clear(); // bounded memory under an address flood
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(caller, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rps);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.rps));
  }
}
