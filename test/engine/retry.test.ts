// The one backoff schedule (engine/retry.ts) the HTTP embedding provider, the ingestion queue's
// embedding retries and the snapshot policy share.
import { expect, test } from 'bun:test';
import { backoffDelay } from '../../engine/retry';

test('the n-th retry waits base·2^(n−1): 250, 500, 1000, 2000 ms without a cap', () => {
  expect([1, 2, 3, 4].map((n) => backoffDelay(n, { baseMs: 250 }))).toEqual([250, 500, 1000, 2000]);
});

test('the cap bounds every wait, from the retry that reaches it on', () => {
  // The ingestion default (EMBEDDING_RETRY_*): 2 s doubling to 60 s.
  expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, { baseMs: 2000, maxMs: 60_000 }))).toEqual([2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  // Far past where 2^n overflows to Infinity: still the cap, a number a timer can take.
  expect(backoffDelay(5000, { baseMs: 1000, maxMs: 300_000 })).toBe(300_000);
  expect(backoffDelay(1, { baseMs: 1000, maxMs: 10 })).toBe(10);
});

test('the same schedule as the three formulas it replaced', () => {
  for (let n = 1; n <= 40; n++) {
    // engine/embedding/providers/http.ts
    expect(backoffDelay(n, { baseMs: 250 })).toBe(250 * 2 ** (n - 1));
    // engine/ingest/queue.ts
    expect(backoffDelay(n, { baseMs: 2000, maxMs: 60_000 })).toBe(Math.min(60_000, 2000 * 2 ** (n - 1)));
    // snapshots/policy.ts, with a cap above its old 2^16 s ceiling
    const maxBackoffMs = 1e12;
    expect(backoffDelay(n, { baseMs: 1000, maxMs: Math.min(maxBackoffMs, 1000 * 2 ** 16) })).toBe(Math.min(maxBackoffMs, 1000 * 2 ** Math.min(16, n - 1)));
  }
});

test('a retry number below 1 or not whole is a caller bug, refused', () => {
  for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => backoffDelay(bad, { baseMs: 1 })).toThrow(RangeError);
});
