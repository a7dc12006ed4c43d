// BM25 as pure functions, separate from the index that feeds them (tantivy's split), so tests can
// check scores by hand and explanations reuse the exact same arithmetic.

export interface Bm25Params {
  k1: number;
  b: number;
}

export const DEFAULT_BM25: Bm25Params = { k1: 1.2, b: 0.75 };

/** Lucene's non-negative idf: ln(1 + (N − df + 0.5) / (df + 0.5)). */
export function idf(docCount: number, docFreq: number): number {
  return Math.log(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5));
}

/** The length normalization K = k1 · (1 − b + b · dl / avgdl). */
export function lengthNorm(params: Bm25Params, docLength: number, avgDocLength: number): number {
  return params.k1 * (1 - params.b + (params.b * docLength) / (avgDocLength || 1));
}

/** One term's contribution: idf · tf · (k1 + 1) / (tf + K). */
export function termScore(params: Bm25Params, termIdf: number, tf: number, norm: number): number {
  return weightedTermScore(termWeight(params, termIdf, 1), tf, norm);
}

/** A query term's weight: qtf · idf · (k1 + 1), the part of its score no document changes. */
export function termWeight(params: Bm25Params, termIdf: number, queryTf: number): number {
  return queryTf * termIdf * (params.k1 + 1);
}

/**
 * A term's contribution from its weight: w · tf / (tf + K). Every scoring path (top-k search,
 * exact re-scoring, explanations) calls this, so a document gets the same score bit for bit.
 */
export function weightedTermScore(weight: number, tf: number, norm: number): number {
  return (weight * tf) / (tf + norm);
}

/**
 * K = k1 · (1 − b + b · dl / avgdl) as base + perLength · dl, the form every scoring path uses
 * (hoisted out of the loops; the two forms round differently).
 */
export function lengthNormParts(params: Bm25Params, avgDocLength: number): { base: number; perLength: number } {
  return { base: params.k1 * (1 - params.b), perLength: (params.k1 * params.b) / (avgDocLength || 1) };
}

export interface TermExplanation {
  term: string;
  tf: number;
  docFreq: number;
  idf: number;
  score: number;
}

export interface ScoreExplanation {
  score: number;
  docLength: number;
  avgDocLength: number;
  docCount: number;
  terms: TermExplanation[];
}
