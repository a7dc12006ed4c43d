// The query's vector, by the knowledge base's own model (through the query lane's cache).
import { EmbeddingError, toSpec } from '../embedding/provider';
import type { Compute } from '../ingest/compute';
import type { KnowledgeBase } from '../kb/knowledge-base';

export function queryVector(compute: Compute, kb: KnowledgeBase, query: string): Promise<Float32Array> {
  const { embedding } = kb.record.config;
  if (embedding.dimensions === 0) throw new EmbeddingError('this knowledge base has no embedding model');
  return compute.embedQuery(toSpec(embedding), query);
}
