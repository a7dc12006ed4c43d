// What a search body may ask beyond the ranking itself, the same in every mode: a minimum score,
// at most n hits per content item (Ragie's max_chunks_per_document, OpenAI file_search per file),
// and highlighted matches. Both limits apply to the ranking before it is cut to `limit`: a search
// keeps looking deeper until `limit` hits survive them or the ranking runs out, so a filtered page
// is never short merely because the first candidates were dropped.
import type { ChunkHit, KnowledgeBase } from '../kb/knowledge-base';
import { highlightsOf, snippetOf, type Highlight, type Snippet } from './highlight';
import { constrains, satisfies, type ParsedQuery } from './query-syntax';

/** A neighbouring chunk of the same content item. */
export interface ContextChunk {
  id: string;
  text: string;
}

/** A hit with its highlights and its neighbouring chunks, when they were asked for. */
export type Highlighted<H> = H & { highlights?: Highlight[]; snippet?: Snippet; context?: { before: ContextChunk[]; after: ContextChunk[] } };

export interface Refinements {
  /** Hits scoring below are dropped (the mode's own score: BM25, cosine or the blend). */
  minScore?: number;
  /** At most this many hits of one content item, the best ones. */
  maxChunksPerContent?: number;
  /** Add `highlights` (offsets of the matched words in the chunk) and a `snippet` around the best match. */
  highlight?: boolean;
  /** Add up to `before` and `after` neighbouring chunks of the same item (in the item's order) to each hit. */
  context?: { before: number; after: number };
  /** A condition on the chunk's text (the query's phrases and exclusions: query-syntax.ts). */
  matches?: (text: string) => boolean;
}

/** The refinements with the query's phrases and exclusions as a condition on each hit's text. */
export function withSyntax(refinements: Refinements, q: ParsedQuery): Refinements {
  return constrains(q) ? { ...refinements, matches: (text) => satisfies(q, text) } : refinements;
}

/** Hits in rank order that the refinements keep, at most `limit`. */
export function refine<H extends Pick<ChunkHit, 'score' | 'contentId' | 'text'>>(ranked: readonly H[], refinements: Refinements, limit: number): H[] {
  const { minScore, maxChunksPerContent, matches } = refinements;
  const perContent = new Map<string, number>();
  const out: H[] = [];
  for (const hit of ranked) {
    if (out.length >= limit) break;
    if (minScore !== undefined && !(hit.score >= minScore)) continue;
    if (matches && !matches(hit.text)) continue;
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
export function rankRefined<H extends Pick<ChunkHit, 'score' | 'contentId' | 'text'>>(
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

/** The hits with what was asked for: highlights of the query's terms and a snippet, neighbouring chunks. */
export function decorate<H extends ChunkHit>(kb: KnowledgeBase, hits: H[], terms: readonly string[], refinements: Refinements): Highlighted<H>[] {
  const { highlight, context } = refinements;
  if (!highlight && !context) return hits;
  const wanted = new Set(terms);
  return hits.map((hit) => {
    const out: Highlighted<H> = { ...hit };
    if (highlight) {
      out.highlights = highlightsOf(hit.text, wanted);
      out.snippet = snippetOf(hit.text, out.highlights);
    }
    if (context) out.context = neighbours(kb, hit, context);
    return out;
  });
}

/** The chunks around `hit` in its item's order (the item's chunks answering searches now). */
function neighbours(kb: KnowledgeBase, hit: ChunkHit, around: { before: number; after: number }): { before: ContextChunk[]; after: ContextChunk[] } {
  const docs = kb.contents.get(hit.contentId)?.live?.docs ?? [];
  const at = docs.indexOf(hit.doc);
  if (at < 0) return { before: [], after: [] };
  const chunks = (range: number[]) => kb.hits(range.map((doc) => ({ doc, score: 0 }))).map((h) => ({ id: h.chunkId, text: h.text }));
  return { before: chunks(docs.slice(Math.max(0, at - around.before), at)), after: chunks(docs.slice(at + 1, at + 1 + around.after)) };
}
