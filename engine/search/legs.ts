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
//
// With typo tolerance (expansion.ts) the leg ranks in two tiers: first the chunks holding a query
// word as typed, scored with the expansions they also hold; then, when those run out before the
// depth, the chunks matched only through expansions, their scores scaled below the last of the
// first tier, so scores still fall as ranks do.
import { exactTerms, isExpanded, type Bm25Query, type InvertedIndex } from '../bm25/inverted-index';
import type { DocSet } from '../filter/doc-set';
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
export function fullTextLegScores(index: InvertedIndex, terms: Bm25Query, docs: readonly number[], own: readonly number[]): number[] {
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

/** Full-text leg scores of any documents (plain BM25 computed here), without tiers. */
export function fullTextScoresOf(index: InvertedIndex, terms: Bm25Query, docs: readonly number[]): number[] {
  return fullTextLegScores(index, terms, docs, index.scoreDocs(terms, docs));
}

/** `top` (as search gives them) re-scored as the leg scores, best first. */
function legRanked(index: InvertedIndex, query: Bm25Query, top: readonly Scored[]): Scored[] {
  const docs = top.map((h) => h.doc);
  const scores = fullTextLegScores(
    index,
    query,
    docs,
    top.map((h) => h.score),
  );
  return docs.map((doc, i) => ({ doc, score: scores[i]! })).sort(byScore);
}

/** Just below `score`: where the second tier's best may score. */
const below = (score: number) => score * (1 - 1e-9);

/**
 * The full-text leg of one search: its candidates (the `depth` best chunks, tiered) and the leg
 * score of any other chunk by the same rules (hybrid scores the semantic leg's candidates too).
 */
export class FullTextLeg {
  private ranking: { candidates: Scored[]; tier2Scale?: number } | undefined;
  /** Expansions rank in a tier of their own: the query has some and one of its words occurs. */
  private readonly tiered: boolean;

  constructor(
    private readonly index: InvertedIndex,
    readonly query: Bm25Query,
    private readonly depth: number,
    private readonly allowed?: DocSet,
  ) {
    this.tiered = isExpanded(query) && query.expansions.length > 0 && query.terms.some((t) => index.groupFreqOf(t) > 0);
  }

  /** The candidates, best first. */
  get candidates(): Scored[] {
    return this.ranked().candidates;
  }

  private ranked(): { candidates: Scored[]; tier2Scale?: number } {
    if (this.ranking) return this.ranking;
    const { index, query, depth, allowed } = this;
    const first = legRanked(index, query, index.search(query, depth, allowed));
    if (!this.tiered || first.length >= depth || !isExpanded(query)) return (this.ranking = { candidates: first });
    // Every chunk holding a query word is ranked: fill up with those matched only by expansions.
    const seen = new Set(first.map((h) => h.doc));
    const expansionsOnly = { terms: [], expansions: query.expansions };
    const second = legRanked(
      index,
      query,
      index.search(expansionsOnly, depth, allowed).filter((h) => !seen.has(h.doc)),
    ).slice(0, depth - first.length);
    const lowest = first.length > 0 ? first[first.length - 1]!.score : Infinity;
    const best = second[0]?.score ?? 0;
    const tier2Scale = best > 0 && best >= lowest ? below(lowest) / best : 1;
    return (this.ranking = { candidates: [...first, ...second.map((h) => ({ doc: h.doc, score: h.score * tier2Scale }))], tier2Scale });
  }

  /** Leg scores of `docs`: the candidates' as ranked, the others' by the same tiers. */
  scoresOf(docs: readonly number[]): number[] {
    const known = new Map(this.ranking?.candidates.map((h) => [h.doc, h.score]));
    const missing = docs.filter((d) => !known.has(d));
    if (missing.length > 0) {
      const { index, query } = this;
      const scores = fullTextScoresOf(index, query, missing);
      if (this.tiered) {
        const exact = index.scoreDocs(exactTerms(query), missing);
        let second: number | undefined;
        const scale = () => (second ??= this.secondTierScale());
        missing.forEach((d, i) => known.set(d, exact[i]! > 0 ? scores[i]! : scores[i]! * scale()));
      } else missing.forEach((d, i) => known.set(d, scores[i]!));
    }
    return docs.map((d) => known.get(d)!);
  }

  /**
   * What second-tier scores are multiplied by: as ranked, or, when the first tier filled the
   * candidates, what puts the most any chunk could score just below the lowest candidate.
   */
  private secondTierScale(): number {
    const { candidates, tier2Scale } = this.ranked();
    if (tier2Scale !== undefined) return tier2Scale;
    const lowest = candidates[candidates.length - 1]?.score ?? 0;
    const most = this.index.scoreBound(this.query);
    return most > lowest ? below(lowest) / most : 1;
  }
}

/** The full-text leg's candidates, best first: the `depth` best chunks by BM25, re-scored (tiered with expansions). */
export function fullTextCandidates(index: InvertedIndex, terms: Bm25Query, depth: number, allowed?: DocSet): Scored[] {
  return new FullTextLeg(index, terms, depth, allowed).candidates;
}
