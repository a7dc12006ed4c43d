// How texts are grouped into model calls. A call is padded to its longest text, so texts are taken
// in length order (the whole request sorted at once, not each batch) and a call stops at a budget
// of padded units: characters for providers that only see text, word pieces for transformers.js
// models, which tokenize first (providers/transformers.ts). Small calls are the fast ones on CPU:
// a call's activations stay in cache (bench/semantic.ts, parts throughput and limit).
import type { EmbedKind, EmbeddingProvider } from './provider';

export interface BatchLimits {
  /** Most texts in one call. */
  texts: number;
  /** Most units (characters or tokens) in one call once every text is padded to the longest. */
  padded: number;
}

/**
 * Indices of `lengths` in calls: ascending length, each call at most `limits.texts` long and at
 * most `limits.padded` units once padded (its length × its longest). A text longer than the budget
 * goes alone. Every index appears once.
 */
export function planBatches(lengths: readonly number[], limits: BatchLimits): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  const batches: number[][] = [];
  for (let i = 0; i < order.length; ) {
    const batch = [order[i++]!];
    // Sorted ascending, so the text added last is the longest: it sets the padded size.
    while (i < order.length && batch.length < limits.texts && (batch.length + 1) * lengths[order[i]!]! <= limits.padded) batch.push(order[i++]!);
    batches.push(batch);
  }
  return batches;
}

/** Limits of a provider that batches by tokens itself. */
export interface TokenBatchLimits {
  texts: number;
  /** Most tokens in one call once padded. */
  tokens: number;
}

/**
 * A provider that measures texts in its own units and forms its own calls (transformers.js: by
 * tokens, after tokenizing): it is handed every text of a request at once.
 */
export interface SelfBatching {
  embedInBatches(texts: string[], kind: EmbedKind, limits: TokenBatchLimits): Promise<Float32Array[]>;
}

export function batchesItself(p: EmbeddingProvider): p is EmbeddingProvider & SelfBatching {
  return typeof (p as Partial<SelfBatching>).embedInBatches === 'function';
}
