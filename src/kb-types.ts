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

const ONNX_FILE = { fp32: 'model.onnx', int8: 'model_quantized.onnx' } as const;
type Precision = keyof typeof ONNX_FILE;

function hasLocalModel(modelDir: string, id: string): boolean {
  return localPrecision(modelDir, id, 'fp32') !== undefined;
}

/** The configured precision when its export is present, else the other one; undefined when neither is. */
function localPrecision(modelDir: string, id: string, preferred: Precision): Precision | undefined {
  const other: Precision = preferred === 'fp32' ? 'int8' : 'fp32';
  return [preferred, other].find((p) => existsSync(join(modelDir, id, 'onnx', ONNX_FILE[p])));
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
    const precision = localPrecision(modelDir, model, config.embedding.precision) ?? config.embedding.precision;
    const known = KNOWN_MODELS[model];
    if (known) return { provider: 'transformers', model, ...known, precision };
    // Unknown model: dimensions from its config.json, mean pooling (the sentence-transformers default).
    const configPath = join(modelDir, model, 'config.json');
    if (!existsSync(configPath)) throw new Error(`model ${model} not found under ${modelDir} (config.json missing)`);
    const hidden = (JSON.parse(readFileSync(configPath, 'utf8')) as { hidden_size?: number }).hidden_size;
    if (!hidden) throw new Error(`cannot tell the dimensions of ${model}: no hidden_size in its config.json`);
    return { provider: 'transformers', model, dimensions: hidden, pooling: 'mean', maxTokens: 512, precision };
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

/**
 * Characters per word piece to size chunks by: English prose averages ~4.5 (4.51 measured on the
 * SciFact corpus with the MiniLM tokenizer); 4 leaves room for denser text, so a chunk fits what the
 * model reads instead of losing its end to truncation.
 */
const CHARS_PER_TOKEN = 4;

/**
 * Chunks sized to what the model reads: a transformers model's token limit (MiniLM 256 → 1,024
 * characters, bge 512 → 2,048); USE-Lite 1,000; 2,000 where no model reads them. Overlap a tenth.
 */
export function chunkingFor(embedding: EmbeddingConfig, config: Config): { size: number; overlap: number } {
  const size = config.chunking.size ?? (embedding.provider === 'transformers' ? (embedding.maxTokens ?? 512) * CHARS_PER_TOKEN : embedding.provider === 'use-lite' ? 1000 : 2000);
  return { size, overlap: config.chunking.overlap ?? Math.round(size / 10) };
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
