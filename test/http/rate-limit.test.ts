import { expect, test } from 'bun:test';
import { RateLimiter } from '../../src/http/rate-limit';

test('token bucket: burst, refill, per-key isolation, retry-after', () => {
  let t = 0;
  const limiter = new RateLimiter({ rate: 2, burst: 3 }, () => t);
  expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0]);
  expect(limiter.take('a')).toBe(1); // empty: one token comes back in 0.5 s, rounded up to 1 s
  expect(limiter.take('b')).toBe(0); // another organization has its own bucket
  t += 500;
  expect(limiter.take('a')).toBe(0);
  expect(limiter.take('a')).toBeGreaterThan(0);
  t += 10_000;
  expect([limiter.take('a'), limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0, 1]);
});

test('rate 0 disables limiting', () => {
  const limiter = new RateLimiter({ rate: 0, burst: 0 });
  for (let i = 0; i < 100; i++) expect(limiter.take('x')).toBe(0);
});
