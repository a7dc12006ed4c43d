// What a search body may ask beyond the ranking itself, the same in every mode: a minimum score,
// at most n hits per content item (Ragie's max_chunks_per_document, OpenAI file_search per file),
// and highlighted matches. Both limits apply to the ranking before it is cut to `limit`: a search
// keeps looking deeper until `limit` hits survive them or the ranking runs out, so a filtered page
// is never short merely because the first candidates were dropped.
import type { ChunkHit } from '../kb/knowledge-base';
import { highlightsOf, snippetOf, type Highlight, type Snippet } from './highlight';

/** A hit with its highlights, when they were asked for. */
export type Highlighted<H> = H & { highlights?: Highlight[]; snippet?: Snippet };

export interface Refinements {
  /** Hits scoring below are dropped (the mode's own score: BM25, cosine or the blend). */
  minScore?: number;
  /** At most this many hits of one content item, the best ones. */
  maxChunksPerContent?: number;
  /** Add `highlights` (offsets of the matched words in the chunk) and a `snippet` around the best match. */
  highlight?: boolean;
}

/** Hits in rank order that the refinements keep, at most `limit`. */
export function refine<H extends Pick<ChunkHit, 'score' | 'contentId'>>(ranked: readonly H[], refinements: Refinements, limit: number): H[] {
  const { minScore, maxChunksPerContent } = refinements;
  const perContent = new Map<string, number>();
  const out: H[] = [];
  for (const hit of ranked) {
    if (out.length >= limit) break;
    if (minScore !== undefined && !(hit.score >= minScore)) continue;
    if (maxChunksPerContent !== undefined) {
      const seen = perContent.get(hit.contentId) ?? 0;
      if (seen >= maxChunksPerContent) continue;
      perContent.set(hit.contentId, seen + 1);
    }
    out.push(hit);
  }
  return out;
}

/**
 * Run a ranking (`rank(depth)`: the `depth` best hits, best first) deep enough that `limit` hits
 * survive the refinements, or until it is exhausted: the depth grows fourfold up to `maxDepth`.
 */
export function rankRefined<H extends Pick<ChunkHit, 'score' | 'contentId'>>(
  rank: (depth: number) => H[],
  limit: number,
  refinements: Refinements,
  maxDepth: number,
): H[] {
  let depth = limit;
  for (;;) {
    const ranked = rank(depth);
    const kept = refine(ranked, refinements, limit);
    const exhausted = ranked.length < depth || depth >= maxDepth;
    // Ranked by score: once the last one is below the minimum, deeper hits are too.
    const belowMinimum = refinements.minScore !== undefined && ranked.length > 0 && !(ranked[ranked.length - 1]!.score >= refinements.minScore);
    if (kept.length >= limit || exhausted || belowMinimum) return kept;
    depth = Math.min(maxDepth, depth * 4);
  }
}

/** The hits with highlights of the query's terms and a snippet, when asked for. */
export function withHighlights<H extends ChunkHit>(hits: H[], terms: readonly string[], refinements: Refinements): Highlighted<H>[] {
  if (!refinements.highlight) return hits;
  const wanted = new Set(terms);
  return hits.map((hit) => {
    const highlights = highlightsOf(hit.text, wanted);
    return { ...hit, highlights, snippet: snippetOf(hit.text, highlights) };
  });
}
