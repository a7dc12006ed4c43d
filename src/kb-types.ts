// Knowledge base type → the configuration it gets: at creation, and again (re-embedding, see
// engine/methods/reembed.ts) when the model serving the type changes. Which model serves which type
// is server configuration.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ANALYZER_VERSION, locateModel, type EmbeddingSpec, type EmbeddingConfig, type KnowledgeBaseConfig } from '../engine';
import type { Config } from './config';
import { SHIPPED_MODEL_ID, shippedModelDir } from './shipped-model';
import { commandFor } from './invocation';

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

/**
 * What `auto` picks, best first: the first one present in EMBEDDING_MODEL_DIR serves, else the
 * shipped all-MiniLM-L6-v2 (int8).
 */
export const AUTO_PREFERENCE = ['Xenova/bge-base-en-v1.5', 'Xenova/bge-small-en-v1.5', 'Xenova/all-MiniLM-L12-v2', 'Xenova/all-MiniLM-L6-v2'];

const USE_LITE: EmbeddingSpec = { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512 };

type Precision = 'fp32' | 'int8';

/**
 * Where a model's files are looked for, in order: EMBEDDING_MODEL_DIR, then, for the shipped model,
 * the folder it ships in (beside the code, or unpacked from the binary). The workers get the same
 * list (`fallbackModelDirs`), so they load what was resolved here.
 */
export function modelDirs(config: Config, id: string): string[] {
  const { modelDir } = config.embedding;
  return id === SHIPPED_MODEL_ID ? [...new Set([modelDir, shippedModelDir()])] : [modelDir];
}

/** The model directories the workers search after EMBEDDING_MODEL_DIR. */
export function fallbackModelDirs(config: Config): string[] {
  return modelDirs(config, SHIPPED_MODEL_ID).filter((d) => d !== config.embedding.modelDir);
}

function hasLocalModel(config: Config, id: string): boolean {
  return locateModel([config.embedding.modelDir], id) !== undefined;
}

/**
 * The configured precision when some folder holds its export, else the other one; undefined when
 * neither is present. The shipped folder has int8 only, so the shipped model resolves to int8
 * unless EMBEDDING_MODEL_DIR holds its fp32 export.
 */
function localPrecision(config: Config, id: string, preferred: Precision): Precision | undefined {
  const other: Precision = preferred === 'fp32' ? 'int8' : 'fp32';
  return [preferred, other].find((p) => locateModel(modelDirs(config, id), id, p) !== undefined);
}

/**
 * Parse a model setting: `auto` (the high-quality default: the best model of AUTO_PREFERENCE in the
 * model directory, else the shipped MiniLM), `shipped` (the cost-effective default: the shipped
 * MiniLM), `use-lite`, `transformers:<hf-id>`, `http:<model>`.
 */
export function resolveModel(setting: string, config: Config): EmbeddingSpec {
  if (setting === 'shipped') return resolveModel(`transformers:${SHIPPED_MODEL_ID}`, config);
  if (setting === 'auto') {
    const best = AUTO_PREFERENCE.find((id) => hasLocalModel(config, id)) ?? SHIPPED_MODEL_ID;
    return resolveModel(`transformers:${best}`, config);
  }
  if (setting === 'use-lite') return USE_LITE;
  const [provider, ...rest] = setting.split(':');
  const model = rest.join(':');
  if (provider === 'transformers' && model) {
    const precision = localPrecision(config, model, config.embedding.precision) ?? (model === SHIPPED_MODEL_ID ? 'int8' : config.embedding.precision);
    const known = KNOWN_MODELS[model];
    if (known) return { provider: 'transformers', model, ...known, precision };
    // Unknown model: dimensions from its config.json, mean pooling (the sentence-transformers default).
    const { modelDir } = config.embedding;
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
  throw new Error(`unknown model setting "${setting}" (use auto, shipped, use-lite, transformers:<id> or http:<model>)`);
}

/** The embedding configuration of each type, resolved once at start-up. */
export function typeEmbeddings(config: Config): Record<KbType, EmbeddingConfig> {
  const hq = resolveModel(config.embedding.highQualityModel, config);
  const cheap = resolveModel(config.embedding.costEffectiveModel, config);
  return {
    // Cost-effective: i8 vectors (a quarter of the memory of f32); by default the shipped model.
    TEXT_COST_EFFECTIVE: { ...cheap, metric: 'cosine', quantization: config.embedding.costEffectiveQuantization },
    TEXT_HIGH_QUALITY: { ...hq, metric: 'cosine', quantization: 'f32' },
    TEXT_AND_MEDIA_HIGH_QUALITY: { ...hq, metric: 'cosine', quantization: 'f32' },
  };
}

/** The types meant for a real sentence-transformer. */
const HIGH_QUALITY_TYPES: readonly KbType[] = ['TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY'];

/**
 * Why a high-quality type (or knowledge base) is served by USE-Lite, to say at start-up, in /ready
 * and in its configuration. Since a sentence-transformer ships with the server, that happens only
 * when it is asked for (HIGH_QUALITY_MODEL=use-lite), or for knowledge bases made before.
 */
export function useLiteFallback(type: string, embedding: Pick<EmbeddingConfig, 'provider'>): string | undefined {
  if (!HIGH_QUALITY_TYPES.includes(type as KbType) || embedding.provider !== 'use-lite') return undefined;
  return `${type} is served by the small Universal Sentence Encoder Lite, not a sentence-transformer: semantic search is much weaker (SciFact nDCG@10 0.25 against 0.66 for the shipped all-MiniLM-L6-v2)`;
}

/** The warnings of the server's current type → model choice. */
export function modelWarnings(embeddings: Record<KbType, EmbeddingConfig>): string[] {
  return KB_TYPES.map((type) => useLiteFallback(type, embeddings[type]))
    .filter((w): w is string => w !== undefined)
    .map(
      (w) =>
        `${w}; HIGH_QUALITY_MODEL=use-lite asks for it (unset it to serve the shipped model, or pull a better one: ${commandFor('models')} pull Xenova/bge-small-en-v1.5)`,
    );
}

/**
 * Characters per word piece to size chunks by: English prose averages ~4.5 (4.51 measured on the
 * SciFact corpus with the MiniLM tokenizer); 4 leaves room for denser text, so a chunk fits what the
 * model reads instead of losing its end to truncation.
 */
const CHARS_PER_TOKEN = 4;

/**
 * Chunks sized to what the model embeds best: the input length a transformers model was trained
 * on, where its card says so and it is shorter than what the model reads (the all-MiniLM models:
 * trained on 128 word pieces, read 256 → 512 characters), else its token limit (bge 512 → 2,048);
 * USE-Lite 1,000; 2,000 where no model reads them. Overlap a tenth. SciFact, MiniLM int8, nDCG@10
 * at 512 / 1,024 characters: semantic 0.680 / 0.657 (README "Real models").
 */
export function chunkingFor(embedding: EmbeddingConfig, config: Config): { size: number; overlap: number } {
  const trainedTokens = embedding.provider === 'transformers' && /(^|\/)all-MiniLM-L\d+-v2$/.test(embedding.model) ? 128 : undefined;
  const modelTokens = embedding.provider === 'transformers' ? Math.min(trainedTokens ?? Infinity, embedding.maxTokens ?? 512) : undefined;
  const size = config.chunking.size ?? (modelTokens !== undefined ? modelTokens * CHARS_PER_TOKEN : embedding.provider === 'use-lite' ? 1000 : 2000);
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
    // Built with today's analysis: a newer analyzer later re-embeds it (engine/records.ts indexesAlike).
    analyzer: ANALYZER_VERSION,
  };
}
