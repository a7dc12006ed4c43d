// Full-text search: BM25 over the analyzed query terms, filtered while scoring (a filter never
// truncates the results).
import type { MetadataFilter } from '../filter/metadata';
import type { ChunkHit, KnowledgeBase } from '../kb/knowledge-base';

export function searchFullText(kb: KnowledgeBase, terms: readonly string[], limit: number, filter?: MetadataFilter): ChunkHit[] {
  return kb.hits(kb.fullTextTop(terms, limit, kb.allowedSet(filter)));
}
