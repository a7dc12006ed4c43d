// SciFact (BEIR format) for the benchmarks: the loader (support/retrieval-eval.ts, shared with the tests),
// and the two BEIR metrics (nDCG@10, Recall@100) with trec_eval's definitions.
import type { Query, SciFact } from '../../support/retrieval-eval';

export { loadSciFact, scifactDir, type CorpusDoc, type Query, type SciFact } from '../../support/retrieval-eval';

export interface Quality {
  ndcg10: number;
  recall100: number;
  /** Queries evaluated (those with at least one relevant document). */
  queries: number;
}

/** Gain of a hit at 0-based `rank`: binary relevance with trec_eval's log2(rank + 1) discount (1-based rank). */
const discount = (rank: number): number => 1 / Math.log2(rank + 2);

/** nDCG@k; the ideal ranking puts every relevant document first. `ranked` holds unique ids. */
export function ndcgAt(ranked: readonly string[], relevant: ReadonlySet<string>, k = 10): number {
  let dcg = 0;
  for (let i = 0; i < Math.min(k, ranked.length); i++) if (relevant.has(ranked[i]!)) dcg += discount(i);
  let ideal = 0;
  for (let i = 0; i < Math.min(k, relevant.size); i++) ideal += discount(i);
  return ideal === 0 ? 0 : dcg / ideal;
}

/** Share of the relevant documents found in the first k. `ranked` holds unique ids. */
export function recallAt(ranked: readonly string[], relevant: ReadonlySet<string>, k = 100): number {
  if (relevant.size === 0) return 0;
  let found = 0;
  for (let i = 0; i < Math.min(k, ranked.length); i++) if (relevant.has(ranked[i]!)) found++;
  return found / relevant.size;
}

/**
 * Chunk hits → document ranking: each document scores its best chunk, and documents are ordered
 * by that score (ties keep the order in which they were first seen).
 */
export function rankDocuments<H extends { score: number }>(hits: readonly H[], idOf: (hit: H) => string): { id: string; score: number }[] {
  const best = new Map<string, { id: string; score: number; first: number }>();
  hits.forEach((hit, i) => {
    const id = idOf(hit);
    const seen = best.get(id);
    if (!seen) best.set(id, { id, score: hit.score, first: i });
    else if (hit.score > seen.score) seen.score = hit.score;
  });
  return [...best.values()].sort((a, b) => b.score - a.score || a.first - b.first).map(({ id, score }) => ({ id, score }));
}

/**
 * Mean nDCG@10 and Recall@100 of a ranking function over the queries that have relevance
 * judgments (as trec_eval does: unjudged queries are left out, not scored 0).
 */
export function evaluate(data: SciFact, rank: (query: Query) => readonly string[], queries: readonly Query[] = data.queries): Quality {
  let ndcg = 0;
  let recall = 0;
  let n = 0;
  for (const query of queries) {
    const relevant = data.relevant.get(query.id);
    if (!relevant) continue;
    const ranked = rank(query);
    ndcg += ndcgAt(ranked, relevant, 10);
    recall += recallAt(ranked, relevant, 100);
    n++;
  }
  return { ndcg10: n === 0 ? 0 : ndcg / n, recall100: n === 0 ? 0 : recall / n, queries: n };
}
