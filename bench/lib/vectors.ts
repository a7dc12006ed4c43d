// Vector arithmetic for synthetic corpora: unit length, Gaussian noise, near-duplicate copies.

/** Standard normal samples (Box–Muller) from a uniform PRNG. */
export function gaussian(random: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/** Scale `v` to unit length in place (a zero vector stays zero). */
export function unit<V extends Float32Array | Float64Array>(v: V): V {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
}

/**
 * `v` plus Gaussian noise of expected norm `noiseNorm`, renormalized: a near duplicate (norm 0.2
 * keeps a cosine of about 0.98 with the original, as re-uploaded or overlapping chunks do).
 */
export function noisyCopy(v: Float32Array, normal: () => number, noiseNorm: number): Float32Array {
  const sigma = noiseNorm / Math.sqrt(v.length);
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! + sigma * normal();
  return unit(out);
}
