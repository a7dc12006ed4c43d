// Knowledge base type → the configuration recorded at creation (and never changed afterwards).
// Which model serves which type is server configuration; a knowledge base keeps the model it was
// created with even if the server's choice changes later.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EmbeddingSpec, EmbeddingConfig, KnowledgeBaseConfig } from '../engine';
import type { Config } from './config';

export const KB_TYPES = ['TEXT_COST_EFFECTIVE', 'TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY'] as const;
export type KbType = (typeof KB_TYPES)[number];

const BGE_QUERY_PREFIX = 'Represent this sentence for searching relevant passages: ';

/** Sentence-transformers whose pooling and query instruction we know. */
const KNOWN_MODELS: Record<string, Omit<Extract<EmbeddingSpec, { provider: 'transformers' }>, 'provider' | 'model'>> = {
  'Xenova/bge-small-en-v1.5': { dimensions: 384, pooling: 'cls', queryPrefix: BGE_QUERY_PREFIX, maxTokens: 512 },
  'Xenova/bge-base-en-v1.5': { dimensions: 768, pooling: 'cls', queryPrefix: BGE_QUERY_PREFIX, maxTokens: 512 },
  'Xenova/all-MiniLM-L6-v2': { dimensions: 384, pooling: 'mean', maxTokens: 256 },
  'Xenova/all-MiniLM-L12-v2': { dimensions: 384, pooling: 'mean', maxTokens: 256 },
};

/** What `auto` picks, best first: the first one present in the model directory serves. */
export const AUTO_PREFERENCE = ['Xenova/bge-base-en-v1.5', 'Xenova/bge-small-en-v1.5', 'Xenova/all-MiniLM-L12-v2', 'Xenova/all-MiniLM-L6-v2'];

const USE_LITE: EmbeddingSpec = { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512 };

function hasLocalModel(modelDir: string, id: string): boolean {
  const dir = join(modelDir, id, 'onnx');
  return existsSync(join(dir, 'model.onnx')) || existsSync(join(dir, 'model_quantized.onnx'));
}

/**
 * Parse a model setting: `use-lite`, `transformers:<hf-id>`, `http:<model>`, or `auto` (the
 * high-quality default: the best model of AUTO_PREFERENCE in the model directory, else USE-Lite).
 */
export function resolveModel(setting: string, config: Config): EmbeddingSpec {
  const { modelDir } = config.embedding;
  if (setting === 'auto') {
    const best = AUTO_PREFERENCE.find((id) => hasLocalModel(modelDir, id));
    return best ? resolveModel(`transformers:${best}`, config) : USE_LITE;
  }
  if (setting === 'use-lite') return USE_LITE;
  const [provider, ...rest] = setting.split(':');
  const model = rest.join(':');
  if (provider === 'transformers' && model) {
    const known = KNOWN_MODELS[model];
    if (known) return { provider: 'transformers', model, ...known };
    // Unknown model: dimensions from its config.json, mean pooling (the sentence-transformers default).
    const configPath = join(modelDir, model, 'config.json');
    if (!existsSync(configPath)) throw new Error(`model ${model} not found under ${modelDir} (config.json missing)`);
    const hidden = (JSON.parse(readFileSync(configPath, 'utf8')) as { hidden_size?: number }).hidden_size;
    if (!hidden) throw new Error(`cannot tell the dimensions of ${model}: no hidden_size in its config.json`);
    return { provider: 'transformers', model, dimensions: hidden, pooling: 'mean', maxTokens: 512 };
  }
  if (provider === 'http' && model) {
    if (!config.embedding.http.dimensions) throw new Error('EMBEDDING_HTTP_DIMENSIONS is required for an http model');
    return { provider: 'http', model, dimensions: config.embedding.http.dimensions };
  }
  throw new Error(`unknown model setting "${setting}" (use use-lite, transformers:<id>, http:<model> or auto)`);
}

/** The embedding configuration of each type, resolved once at start-up. */
export function typeEmbeddings(config: Config): Record<KbType, EmbeddingConfig> {
  const hq = resolveModel(config.embedding.highQualityModel, config);
  const cheap = resolveModel(config.embedding.costEffectiveModel, config);
  return {
    // Cost-effective: the cheaper model and i8 vectors (a quarter of the memory of f32).
    TEXT_COST_EFFECTIVE: { ...cheap, metric: 'cosine', quantization: config.embedding.costEffectiveQuantization },
    TEXT_HIGH_QUALITY: { ...hq, metric: 'cosine', quantization: 'f32' },
    TEXT_AND_MEDIA_HIGH_QUALITY: { ...hq, metric: 'cosine', quantization: 'f32' },
  };
}

/** The types meant for a real sentence-transformer. */
const HIGH_QUALITY_TYPES: readonly KbType[] = ['TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY'];

/** Why a high-quality type is served by USE-Lite, to say at start-up, in /ready and in its configuration. */
export function useLiteFallback(type: string, embedding: Pick<EmbeddingConfig, 'provider'>): string | undefined {
  if (!HIGH_QUALITY_TYPES.includes(type as KbType) || embedding.provider !== 'use-lite') return undefined;
  return `${type} is served by the small Universal Sentence Encoder Lite, not a sentence-transformer: none was found in EMBEDDING_MODEL_DIR (get one with: bun run models pull Xenova/all-MiniLM-L6-v2)`;
}

/** The fallback warnings of the server's current type → model choice. */
export function modelWarnings(embeddings: Record<KbType, EmbeddingConfig>): string[] {
  return KB_TYPES.map((type) => useLiteFallback(type, embeddings[type])).filter((w): w is string => w !== undefined);
}

/** Chunks sized to what the model reads: USE-Lite reads ~128 tokens, 512-token models ~2,000 characters. */
function chunkingFor(embedding: EmbeddingConfig, config: Config): { size: number; overlap: number } {
  if (config.chunking.size !== undefined) return { size: config.chunking.size, overlap: config.chunking.overlap ?? Math.round(config.chunking.size / 10) };
  const size = embedding.provider === 'use-lite' ? 1000 : 2000;
  return { size, overlap: config.chunking.overlap ?? size / 10 };
}

export function configForType(type: KbType, config: Config, embeddings: Record<KbType, EmbeddingConfig>): Omit<KnowledgeBaseConfig, 'id' | 'createdAt'> {
  const embedding = embeddings[type];
  return {
    type,
    embedding,
    chunking: chunkingFor(embedding, config),
    bm25: { ...config.bm25 },
    hnsw: { ...config.hnsw },
    modalities: type === 'TEXT_AND_MEDIA_HIGH_QUALITY' ? ['text', 'image'] : ['text'],
  };
}
