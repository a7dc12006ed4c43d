// Semantic search: the nearest chunks by cosine similarity to the query vector (HNSW, or exact
// below the graph threshold and for selective filters).
import type { MetadataFilter } from '../filter/metadata';
import type { ChunkHit, KnowledgeBase } from '../kb/knowledge-base';

export function searchSemantic(kb: KnowledgeBase, queryVector: Float32Array, limit: number, filter?: MetadataFilter): ChunkHit[] {
  return kb.hits(kb.semanticTop(queryVector, limit, kb.allowedSet(filter)));
}
