// Full-text search: BM25 over the analyzed query terms, filtered while scoring (a filter never
// truncates the results), each candidate chunk weighed with its item (legs.ts).
import type { Bm25Query } from '../bm25/inverted-index';
import type { MetadataFilter } from '../filter/metadata';
import type { AllowedDocs, ChunkHit, KnowledgeBase } from '../kb/knowledge-base';
import { kbItems, syncItems } from './items';
import { fullTextCandidates, fullTextDepth } from './legs';

/** `filter`: a metadata filter, or the documents it allows (kb.allowedSet), computed once for a request's every depth. */
export function searchFullText(kb: KnowledgeBase, terms: Bm25Query, limit: number, filter?: MetadataFilter | AllowedDocs): ChunkHit[] {
  syncItems(kb.bm25, kbItems(kb));
  const ranked = fullTextCandidates(kb.bm25, terms, fullTextDepth(limit), kb.allowedSet(filter));
  return kb.hits(ranked.slice(0, limit));
}
