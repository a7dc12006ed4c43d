// Latency percentiles and timing loops.

export interface Latency {
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  samples: number;
}

/** Nearest-rank percentiles of millisecond samples. */
export function summarize(samples: readonly number[]): Latency {
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
  let sum = 0;
  for (const x of sorted) sum += x;
  return { p50: at(50), p95: at(95), p99: at(99), mean: sorted.length ? sum / sorted.length : NaN, samples: sorted.length };
}

/** Median; the mean of the two middle values for an even count, undefined for none. */
export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Milliseconds of each call, `passes` times over the inputs. */
export function timeEach<T>(inputs: readonly T[], passes: number, call: (input: T) => unknown): number[] {
  const samples: number[] = [];
  for (let p = 0; p < passes; p++) {
    for (const input of inputs) {
      const t = performance.now();
      call(input);
      samples.push(performance.now() - t);
    }
  }
  return samples;
}

/** `n` evenly spread elements (all of them when there are fewer). */
export function spread<T>(list: readonly T[], n: number): T[] {
  if (list.length <= n) return [...list];
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]!);
}
