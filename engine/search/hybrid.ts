// Hybrid search: both legs over-fetch candidates (filtered inside each leg), every candidate is
// scored by both legs exactly, then the pure fusion functions (fusion.ts) rank them. Normalization
// runs over the whole candidate pool, so a candidate no query term matches counts as the
// full-text minimum (0).
import type { MetadataFilter } from '../filter/metadata';
import type { ChunkHit, KnowledgeBase } from '../kb/knowledge-base';
import { candidatePool, reciprocalRankFusion, weightedFusion } from './fusion';

export interface HybridOptions {
  semanticWeight: number;
  fusion: 'weighted' | 'rrf';
}

export interface HybridHit extends ChunkHit {
  fullTextScore: number;
  /** Absent when no query vector was computed (a pure full-text blend). */
  semanticScore?: number;
}

/** Candidates each leg contributes: enough that fusion rarely misses what either leg ranks high. */
export function hybridDepth(limit: number): number {
  return Math.min(1000, Math.max(4 * limit, 100));
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

/** `queryVector` is undefined exactly when needsQueryVector is false (or there are no embeddings). */
export function searchHybrid(kb: KnowledgeBase, terms: readonly string[], queryVector: Float32Array | undefined, limit: number, options: HybridOptions, filter?: MetadataFilter): HybridHit[] {
  const allowed = kb.allowedSet(filter);
  const depth = hybridDepth(limit);
  const w = options.semanticWeight;
  const vector = kb.hasVectors ? queryVector : undefined;
  const semScores = (docs: number[]) => (vector ? kb.semanticScores(vector, docs) : docs.map(() => 0));
  const ft = fullTextLegRuns(options) ? kb.fullTextTop(terms, depth, allowed) : [];
  const sem = vector && needsQueryVector(options) ? kb.semanticTop(vector, depth, allowed) : [];
  let ranked: { doc: number; score: number }[];
  if (options.fusion === 'rrf') {
    ranked = reciprocalRankFusion(ft.map((h) => h.doc), sem.map((h) => h.doc), w, limit);
  } else {
    const pool = candidatePool(ft.map((h) => h.doc), sem.map((h) => h.doc), w);
    const ftScores = kb.fullTextScores(terms, pool);
    const semantic = semScores(pool);
    ranked = weightedFusion(pool.map((doc, i) => ({ doc, fullText: ftScores[i]!, semantic: semantic[i]! })), w, limit);
  }
  const hits = kb.hits(ranked);
  const docs = hits.map((h) => h.doc);
  const ftExact = kb.fullTextScores(terms, docs);
  const semExact = semScores(docs);
  return hits.map((hit, i) => ({ ...hit, fullTextScore: ftExact[i]!, ...(vector ? { semanticScore: semExact[i]! } : {}) }));
}
