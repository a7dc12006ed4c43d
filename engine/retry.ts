// Exponential backoff, the one schedule every retry in the service follows (HTTP embedding
// requests, embedding failures of an item, failed snapshots): the n-th retry waits base·2^(n−1),
// never more than the cap.

export interface Backoff {
  /** The wait before the first retry. */
  baseMs: number;
  /** The longest wait (default: none). */
  maxMs?: number;
}

/** The wait before retry `retry` (1 for the first): base·2^(retry−1), at most `maxMs`. */
export function backoffDelay(retry: number, backoff: Backoff): number {
  if (!Number.isInteger(retry) || retry < 1) throw new RangeError(`retry must be an integer ≥ 1 (got ${retry})`);
  // 2 ** n is Infinity past n = 1023, which the cap then bounds: no overflow to guard against.
  return Math.min(backoff.maxMs ?? Infinity, backoff.baseMs * 2 ** (retry - 1));
}
