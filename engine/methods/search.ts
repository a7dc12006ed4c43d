// The three searches of a knowledge base held here: each mode's ranking (search/), run deep enough
// for the refinements (a minimum score, a per-item cap, the query's phrases and exclusions:
// search/refine.ts), then decorated as asked (highlights, neighbouring chunks).
import { analyze } from '../analysis/analyzer';
import type { Compute } from '../ingest/compute';
import type { ChunkHit } from '../kb/knowledge-base';
import type { SearchRequest } from '../options';
import { kbQuery, matchedTerms } from '../search/expansion';
import { searchFullText } from '../search/full-text';
import { needsQueryVector, searchHybrid, type HybridHit, type HybridOptions } from '../search/hybrid';
import { parseQuery } from '../search/query-syntax';
import { queryVector } from '../search/query-vector';
import { decorate, rankRefined, withSyntax, type Highlighted } from '../search/refine';
import { searchSemantic } from '../search/semantic';
import { heldKbOf, type EngineCore } from './core';

/** BM25; the query's phrases and exclusions (search/query-syntax.ts) hold on every hit. */
export function fullText(core: EngineCore, orgId: string, kbId: string, req: SearchRequest): Highlighted<ChunkHit>[] {
  const kb = heldKbOf(core, orgId, kbId);
  const q = parseQuery(req.query);
  const query = kbQuery(kb, q, req.typoTolerance);
  // The filter's documents once for every depth the ranking is run to.
  const allowed = kb.allowedSet(req.filter);
  const ranked = rankRefined((depth) => searchFullText(kb, query, depth, allowed), req.limit, withSyntax(req, q), kb.chunkCount);
  return decorate(kb, ranked, matchedTerms(query), req);
}

/** Nearest chunks by cosine similarity (the query as written; no query syntax). EMBEDDING_FAILED when the model fails. */
export async function semantic(core: EngineCore, compute: Compute, orgId: string, kbId: string, req: SearchRequest): Promise<Highlighted<ChunkHit>[]> {
  const kb = heldKbOf(core, orgId, kbId);
  const vector = await queryVector(compute, kb, req.query);
  const allowed = kb.allowedSet(req.filter);
  const ranked = rankRefined((depth) => searchSemantic(kb, vector, depth, allowed), req.limit, req, kb.chunkCount);
  return decorate(kb, ranked, analyze(req.query), req);
}

/** The blend of both legs; the query's syntax applies to the full-text leg and to every hit, the model reads the words without it. */
export async function hybrid(
  core: EngineCore,
  compute: Compute,
  orgId: string,
  kbId: string,
  req: SearchRequest & HybridOptions,
): Promise<Highlighted<HybridHit>[]> {
  const kb = heldKbOf(core, orgId, kbId);
  const q = parseQuery(req.query);
  const vector = needsQueryVector(req) ? await queryVector(compute, kb, q.semanticText || req.query) : undefined;
  const query = kbQuery(kb, q, req.typoTolerance);
  const allowed = kb.allowedSet(req.filter);
  const ranked = rankRefined((depth) => searchHybrid(kb, query, vector, depth, req, allowed, core.searcher), req.limit, withSyntax(req, q), kb.chunkCount);
  return decorate(kb, ranked, matchedTerms(query), req);
}
