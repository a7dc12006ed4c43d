// Per-organization token buckets: `rate` requests per second on average, bursts up to `burst`.
// A request that finds the bucket empty gets 429 with the seconds until a token is back.

export interface RateLimitOptions {
  /** Tokens added per second (0 disables limiting). */
  rate: number;
  /** Bucket size. */
  burst: number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly options: RateLimitOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get enabled(): boolean {
    return this.options.rate > 0;
  }

  /** Take a token for `key`: 0 when allowed, else the seconds to wait before retrying. */
  take(key: string): number {
    if (!this.enabled) return 0;
    const t = this.now();
    const { rate, burst } = this.options;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: burst, updated: t };
      this.buckets.set(key, bucket);
      // Idle organizations' buckets are full again: forget them so the map stays small.
      if (this.buckets.size > 10_000) this.sweep(t);
    }
    bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.updated) / 1000) * rate);
    bucket.updated = t;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
  }

  private sweep(t: number): void {
    const { rate, burst } = this.options;
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((t - b.updated) / 1000) * rate >= burst) this.buckets.delete(key);
    }
  }
}
