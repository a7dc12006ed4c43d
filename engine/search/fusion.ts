// Hybrid fusion as pure functions (Weaviate's split): given candidates with the exact score of each
// leg, put each leg on its fixed scale and blend. No index access here.

export interface Candidate {
  doc: number;
  fullText: number;
  semantic: number;
  /** The candidate's content item, when known: candidates of one item share their best evidence (weightedFusion). */
  item?: number;
}

export interface Fused extends Candidate {
  score: number;
}

/**
 * The legs on fixed scales, so that no candidate is lifted by being normalized against the
 * others: full-text as a share of the query's maximum BM25 (`fullTextScale`, InvertedIndex.maxScore:
 * a match of one common word of a longer query stays small however alone it is), in [0, 1);
 * semantic as the cosine itself, in [−1, 1].
 */
export function normalized(c: Candidate, fullTextScale: number): { fullText: number; semantic: number } {
  return { fullText: fullTextScale > 0 ? c.fullText / fullTextScale : 0, semantic: c.semantic };
}

/** Order: score descending, then document (and so chunk id) ascending. */
export function byScoreThenDoc(a: { score: number; doc: number }, b: { score: number; doc: number }): number {
  return b.score - a.score || a.doc - b.doc;
}

/**
 * `w · semantic + (1 − w) · fullText / fullTextScale` (see normalized) over the candidates, best
 * first. Candidates of one content item share their evidence: the item's best candidate in the
 * blend scores `w · (the item's best semantic) + (1 − w) · (its best full-text) / fullTextScale`
 * over the item's candidates (a title chunk's keywords and a body chunk's meaning count together),
 * its other candidates their own blend, so the item's other chunks do not crowd the first page.
 * Equal blends are ordered by the heavier leg's own score, then the other's, then document. With
 * w = 0 the order is exactly the full-text order, with w = 1 exactly the semantic order: the best
 * candidate in the blend is then the item's best in that leg, whose score the item's best is (the
 * scales are monotonic, and where they round two scores together the leg's own score decides).
 */
export function weightedFusion(candidates: readonly Candidate[], semanticWeight: number, limit: number, fullTextScale: number): Fused[] {
  const w = semanticWeight;
  const semanticFirst = w >= 0.5;
  const order = (a: Fused, b: Fused) =>
    b.score - a.score ||
    (semanticFirst ? b.semantic - a.semantic || b.fullText - a.fullText : b.fullText - a.fullText || b.semantic - a.semantic) ||
    a.doc - b.doc;
  const fused = candidates.map((c) => {
    const n = normalized(c, fullTextScale);
    return { ...c, score: w * n.semantic + (1 - w) * n.fullText };
  });
  const items = new Map<number, { best: Fused; semantic: number; fullText: number; count: number }>();
  for (const c of fused) {
    if (c.item === undefined) continue;
    const n = normalized(c, fullTextScale);
    const seen = items.get(c.item);
    if (!seen) items.set(c.item, { best: c, semantic: n.semantic, fullText: n.fullText, count: 1 });
    else {
      if (order(c, seen.best) < 0) seen.best = c;
      seen.semantic = Math.max(seen.semantic, n.semantic);
      seen.fullText = Math.max(seen.fullText, n.fullText);
      seen.count++;
    }
  }
  for (const item of items.values()) if (item.count > 1) item.best.score = w * item.semantic + (1 - w) * item.fullText;
  return fused.sort(order).slice(0, limit);
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
  return [...scores]
    .map(([doc, score]) => ({ doc, score }))
    .sort(byScoreThenDoc)
    .slice(0, limit);
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
