// Knowledge base type → the configuration recorded at creation (and never changed afterwards).
import type { KnowledgeBaseConfig } from '../../engine/records';
import type { Config } from '../config';

export const KB_TYPES = ['TEXT_COST_EFFECTIVE', 'TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY'] as const;
export type KbType = (typeof KB_TYPES)[number];

export function configForType(type: KbType, config: Config): Omit<KnowledgeBaseConfig, 'id' | 'createdAt'> {
  const media = type === 'TEXT_AND_MEDIA_HIGH_QUALITY';
  return {
    type,
    // Embeddings arrive with the semantic search work; until then no vectors are computed.
    embedding: { provider: 'none', model: 'none', dimensions: 0, metric: 'cosine', quantization: 'f32' },
    chunking: { ...config.chunking },
    bm25: { ...config.bm25 },
    hnsw: { connectivity: 16, expansionAdd: 128, expansionSearch: 64 },
    modalities: media ? ['text', 'image'] : ['text'],
  };
}
