// Semantic search: the nearest chunks by cosine similarity to the query vector (HNSW, or exact
// below the graph threshold and for selective filters).
import type { MetadataFilter } from '../filter/metadata';
import type { AllowedDocs, ChunkHit, KnowledgeBase } from '../kb/knowledge-base';

/** `filter`: a metadata filter, or the documents it allows (kb.allowedSet), computed once for a request's every depth. */
export function searchSemantic(kb: KnowledgeBase, queryVector: Float32Array, limit: number, filter?: MetadataFilter | AllowedDocs): ChunkHit[] {
  return kb.hits(kb.semanticTop(queryVector, limit, kb.allowedSet(filter)));
}
