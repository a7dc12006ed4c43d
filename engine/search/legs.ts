// The full-text leg's score of a chunk, one definition for the full-text endpoint and hybrid's
// full-text leg, so that hybrid at weight 0 ranks exactly as full-text search. A chunk's score
// weighs evidence from its own content item: the item's best chunk (the highest BM25 of the item's
// chunks; the first on ties) scores the higher of its own BM25 and the BM25 of the whole item
// (the item scored as one document: engine/bm25/inverted-index.ts groupScores); the item's other
// chunks score their own BM25. An item's title and its body then count together although chunking
// split them, the item is found by its best passage, and its other chunks stay where their own
// text puts them instead of crowding the first page. A chunk no query term matches scores 0 (it is
// no full-text hit). Where every item is one chunk, the score is exactly BM25.
//
// BM25's statistics count items (idf over items, the item's length against the average item):
// the index learns the items from the knowledge base before each search (items.ts syncItems).
//
// The leg ranks candidates: the fullTextDepth(limit) best chunks by BM25 (MaxScore), re-scored.
import type { InvertedIndex } from '../bm25/inverted-index';
import type { Scored } from '../topk';

/** Chunks the full-text leg re-scores for a search of `limit` hits (SciFact: deeper changes nothing). */
export function fullTextDepth(limit: number): number {
  return Math.min(1000, Math.max(2 * limit, 20));
}

/** Score descending, then document (and so chunk id) ascending. */
const byScore = (a: Scored, b: Scored) => b.score - a.score || a.doc - b.doc;

/**
 * Full-text leg scores of `docs`, given their plain BM25 scores `own` (as scoreDocs or search
 * gives them): 0 where no term matches.
 */
export function fullTextLegScores(index: InvertedIndex, terms: readonly string[], docs: readonly number[], own: readonly number[]): number[] {
  // Each matched chunk's item: its best chunk by BM25, found among all the item's live chunks.
  const bestOfItem = new Map<number, number>();
  docs.forEach((d, i) => {
    if (!(own[i]! > 0)) return;
    const item = index.groupIdOf(d);
    if (bestOfItem.has(item)) return;
    const members = index.membersOf(d);
    if (members.length === 1) {
      bestOfItem.set(item, d);
      return;
    }
    const scores = index.scoreDocs(terms, members);
    let best = 0;
    for (let k = 1; k < members.length; k++) if (scores[k]! > scores[best]!) best = k;
    bestOfItem.set(item, members[best]!);
  });
  const best = [...bestOfItem.values()];
  const itemScores = index.groupScores(terms, best);
  const itemScore = new Map(best.map((d, i) => [d, itemScores[i]!]));
  return docs.map((d, i) => {
    const s = own[i]!;
    if (!(s > 0)) return 0;
    const item = itemScore.get(d);
    return item !== undefined && item > s ? item : s;
  });
}

/** Full-text leg scores of any documents (plain BM25 computed here). */
export function fullTextScoresOf(index: InvertedIndex, terms: readonly string[], docs: readonly number[]): number[] {
  return fullTextLegScores(index, terms, docs, index.scoreDocs(terms, docs));
}

/** The full-text leg's candidates, best first: the `depth` best chunks by BM25, re-scored. */
export function fullTextCandidates(index: InvertedIndex, terms: readonly string[], depth: number, mask?: Uint8Array): Scored[] {
  const top = index.search(terms, depth, mask);
  const docs = top.map((h) => h.doc);
  const scores = fullTextLegScores(
    index,
    terms,
    docs,
    top.map((h) => h.score),
  );
  return docs.map((doc, i) => ({ doc, score: scores[i]! })).sort(byScore);
}
