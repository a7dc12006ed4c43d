// A text knowledge base's configuration for engine-level tests and benches (the HTTP API picks
// one from the knowledge base type): the service's defaults, with the embedding and any field given.
import { ANALYZER_VERSION, type KnowledgeBaseConfig } from '../engine';

export type KbConfigInput = Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>;

/** No embedding model: full-text only. */
export const NO_EMBEDDING: KbConfigInput['embedding'] = { provider: 'none', model: 'none', dimensions: 0, metric: 'cosine', quantization: 'f32' };

export function textKbConfig(embedding: KbConfigInput['embedding'], overrides: Partial<Omit<KbConfigInput, 'embedding'>> = {}): KbConfigInput {
  return {
    type: 'TEXT_HIGH_QUALITY',
    embedding,
    chunking: { size: 2000, overlap: 200 },
    bm25: { k1: 1.2, b: 0.75 },
    hnsw: { connectivity: 32, expansionAdd: 128, expansionSearch: 256 },
    modalities: ['text'],
    analyzer: ANALYZER_VERSION,
    ...overrides,
  };
}
