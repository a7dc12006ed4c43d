// Hybrid search: both legs over-fetch candidates (filtered inside each leg), every candidate is
// scored by both legs exactly, then the pure fusion functions (fusion.ts) rank them. The full-text
// leg scores as full-text search does (legs.ts: a chunk weighed with its item), the semantic leg as
// semantic search does (cosine). The legs are put on fixed scales, never normalized over the
// candidates: a candidate no query term matches counts 0 on the full-text side, and a lone weak
// keyword match stays weak. Candidates of one content item share their best evidence: the item's
// best candidate in the blend scores with the item's best of each leg (fusion.ts weightedFusion).
import { exactTerms, type Bm25Query } from '../bm25/inverted-index';
import type { MetadataFilter } from '../filter/metadata';
import type { AllowedDocs, ChunkHit, KnowledgeBase } from '../kb/knowledge-base';
import type { Scored } from '../topk';
import type { GraphSearcher } from '../vector/graph-searcher';
import { candidatePool, reciprocalRankFusion, weightedFusion } from './fusion';
import { kbItems, syncItems } from './items';
import { fullTextDepth, FullTextLeg } from './legs';

export interface HybridOptions {
  semanticWeight: number;
  fusion: 'weighted' | 'rrf';
}

export interface HybridHit extends ChunkHit {
  fullTextScore: number;
  /** Absent when no query vector was computed (a pure full-text blend). */
  semanticScore?: number;
}

/**
 * Candidates the semantic leg contributes: enough that fusion rarely misses what it ranks high.
 * Each is a vector row read from disk and re-scored (twice as many rows as candidates at 1M: about
 * 5 µs a row). For 10 hits, 40 scored as 100 did on SciFact (all-MiniLM-L6-v2 int8, bench/semantic.ts:
 * nDCG@10 weighted 0.7385 against 0.7387, rrf 0.7055 against 0.7041) and cut hybrid's p50 at 100k
 * (bench/engine-modes.ts) from 9.6 to 7.1–8.2 ms.
 */
export function hybridDepth(limit: number): number {
  return Math.min(1000, Math.max(4 * limit, 40));
}

/**
 * The one rule for whether a hybrid search needs a query vector (and so a model): the semantic
 * leg runs unless the blend is weighted entirely to full text.
 */
export function needsQueryVector(options: HybridOptions): boolean {
  return options.semanticWeight > 0 || options.fusion === 'rrf';
}

function fullTextLegRuns(options: HybridOptions): boolean {
  return options.semanticWeight < 1 || options.fusion === 'rrf';
}

/** Full-text leg scores of `docs`: those known from the leg's candidates, the rest computed. */
function knownOr(docs: readonly number[], known: readonly Scored[], compute: (docs: number[]) => number[]): number[] {
  const have = new Map(known.map((h) => [h.doc, h.score]));
  const missing = docs.filter((d) => !have.has(d));
  compute(missing).forEach((s, i) => have.set(missing[i]!, s));
  return docs.map((d) => have.get(d)!);
}

/**
 * `queryVector` is undefined exactly when needsQueryVector is false (or there are no embeddings).
 * `filter`: a metadata filter, or the documents it allows (kb.allowedSet), computed once for a request's every depth.
 * `searcher`: the semantic leg's graph search runs on its thread while this one ranks the full-text
 * leg (the same hits, sooner: the graph search is most of the semantic leg at scale).
 */
export function searchHybrid(
  kb: KnowledgeBase,
  terms: Bm25Query,
  queryVector: Float32Array | undefined,
  limit: number,
  options: HybridOptions,
  filter?: MetadataFilter | AllowedDocs,
  searcher?: GraphSearcher,
): HybridHit[] {
  const allowed = kb.allowedSet(filter);
  const w = options.semanticWeight;
  const vector = kb.hasVectors ? queryVector : undefined;
  const semantic = vector && needsQueryVector(options) ? vector : undefined;
  const semDepth = hybridDepth(limit);
  // Only with a full-text leg to rank meanwhile: handing the search over costs ~0.3 ms here.
  const started = semantic && searcher && fullTextLegRuns(options) ? kb.startSemanticTop(searcher, semantic, semDepth, allowed) : undefined;
  const index = kb.bm25;
  syncItems(index, kbItems(kb));
  const semScores = (docs: number[]) => (vector ? kb.semanticScores(vector, docs) : docs.map(() => 0));
  // The full-text leg's candidates are those full-text search ranks for this limit.
  const leg = new FullTextLeg(index, terms, fullTextDepth(limit), allowed);
  const ftScores = (docs: number[]) => leg.scoresOf(docs);
  const ft = fullTextLegRuns(options) ? leg.candidates : [];
  const sem = semantic ? kb.semanticTop(semantic, semDepth, allowed, started) : [];
  // Cosines known so far (the semantic leg's are exact already): each is read from the vector file once.
  const semKnown: Scored[] = [...sem];
  let ranked: { doc: number; score: number }[];
  if (options.fusion === 'rrf') {
    ranked = reciprocalRankFusion(
      ft.map((h) => h.doc),
      sem.map((h) => h.doc),
      w,
      limit,
    );
  } else {
    const pool = candidatePool(
      ft.map((h) => h.doc),
      sem.map((h) => h.doc),
      w,
    );
    const fullText = knownOr(pool, ft, ftScores);
    const semantic = knownOr(pool, semKnown, semScores);
    pool.forEach((doc, i) => semKnown.push({ doc, score: semantic[i]! }));
    ranked = weightedFusion(
      pool.map((doc, i) => ({ doc, fullText: fullText[i]!, semantic: semantic[i]!, item: index.groupIdOf(doc) })),
      w,
      limit,
      index.maxScore(exactTerms(terms)),
    );
  }
  const hits = kb.hits(ranked);
  const docs = hits.map((h) => h.doc);
  const ftLeg = knownOr(docs, ft, ftScores);
  const semExact = knownOr(docs, semKnown, semScores);
  return hits.map((hit, i) => ({ ...hit, fullTextScore: ftLeg[i]!, ...(vector ? { semanticScore: semExact[i]! } : {}) }));
}
