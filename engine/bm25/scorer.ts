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
  return (termIdf * tf * (params.k1 + 1)) / (tf + norm);
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
