// Hybrid fusion as pure functions (Weaviate's split): given candidates with the exact score of each
// leg, normalize each leg over the candidates and blend. No index access here.

export interface Candidate {
  doc: number;
  fullText: number;
  semantic: number;
}

export interface Fused extends Candidate {
  score: number;
}

/** Min-max normalization to 0..1; a leg where every candidate scores the same maps to 1 (0 if all are 0). */
export function minMax(values: readonly number[]): number[] {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (!(max > min)) return values.map((v) => (v > 0 ? 1 : 0));
  const range = max - min;
  return values.map((v) => (v - min) / range);
}

/** Order: score descending, then document (and so chunk id) ascending. */
export function byScoreThenDoc(a: { score: number; doc: number }, b: { score: number; doc: number }): number {
  return b.score - a.score || a.doc - b.doc;
}

/**
 * `w · norm(semantic) + (1 − w) · norm(full-text)` over the candidates, best first.
 * With w = 0 the order is exactly the full-text order, with w = 1 exactly the semantic order
 * (normalization is monotonic, ties fall back to the document order).
 */
export function weightedFusion(candidates: readonly Candidate[], semanticWeight: number, limit: number): Fused[] {
  const ft = minMax(candidates.map((c) => c.fullText));
  const sem = minMax(candidates.map((c) => c.semantic));
  return candidates
    .map((c, i) => ({ ...c, score: semanticWeight * sem[i]! + (1 - semanticWeight) * ft[i]! }))
    .sort(byScoreThenDoc)
    .slice(0, limit);
}

/**
 * Reciprocal rank fusion: Σ weight / (k + rank) over the legs that ranked the candidate.
 * Rank is 1-based within each leg's own order; a leg that did not return a candidate adds nothing.
 */
export function reciprocalRankFusion(
  fullTextRanking: readonly number[],
  semanticRanking: readonly number[],
  semanticWeight: number,
  limit: number,
  k = 60,
): { doc: number; score: number }[] {
  const scores = new Map<number, number>();
  const addLeg = (ranking: readonly number[], weight: number) => {
    if (weight <= 0) return;
    ranking.forEach((doc, i) => scores.set(doc, (scores.get(doc) ?? 0) + weight / (k + i + 1)));
  };
  addLeg(fullTextRanking, 1 - semanticWeight);
  addLeg(semanticRanking, semanticWeight);
  return [...scores].map(([doc, score]) => ({ doc, score })).sort(byScoreThenDoc).slice(0, limit);
}

/**
 * The candidate pool: documents from the legs that carry weight. A leg with weight 0 only
 * scores; it never brings candidates of its own, so w = 0 and w = 1 return the pure legs' results.
 */
export function candidatePool(fullTextDocs: readonly number[], semanticDocs: readonly number[], semanticWeight: number): number[] {
  const pool = new Set<number>();
  if (semanticWeight < 1) for (const d of fullTextDocs) pool.add(d);
  if (semanticWeight > 0) for (const d of semanticDocs) pool.add(d);
  return [...pool];
}
