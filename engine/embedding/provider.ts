// One small interface for every embedding model: embed a batch of texts, as queries or as
// documents (some models prefix queries with an instruction). Vectors come back L2-normalized,
// so cosine similarity is a dot product.

import type { EmbeddingConfig } from '../records';
import { EngineError } from '../errors';

export type EmbedKind = 'query' | 'document';

export interface EmbeddingProvider {
  /** Stable id of the model, recorded in knowledge base configurations. */
  readonly model: string;
  readonly dimensions: number;
  embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]>;
  close?(): Promise<void>;
}

/** Serializable description of a provider: what a knowledge base configuration records. */
export type EmbeddingSpec =
  | { provider: 'use-lite'; model: 'universal-sentence-encoder-lite'; dimensions: 512 }
  | {
      provider: 'transformers';
      /** Hugging Face model id, e.g. "Xenova/bge-small-en-v1.5". */
      model: string;
      dimensions: number;
      pooling: 'mean' | 'cls';
      /** Prepended to queries only (bge's retrieval instruction). */
      queryPrefix?: string;
      /** Largest number of tokens the model reads; longer input is truncated. */
      maxTokens?: number;
      /**
       * Which ONNX export: fp32 (onnx/model.onnx) or int8 (onnx/model_quantized.onnx). Absent (knowledge
       * bases created before it was recorded): fp32 when its file is present, else int8.
       */
      precision?: 'fp32' | 'int8';
    }
  | { provider: 'http'; model: string; dimensions: number };

/** Scale a vector to unit length in place (zero vectors stay zero). */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const n = Math.sqrt(sum);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
}

export class EmbeddingError extends EngineError<'EMBEDDING_FAILED'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EMBEDDING_FAILED', message, {}, options);
    this.name = 'EmbeddingError';
  }
}

/** One key per model (provider, model id, dimensions, precision): caches and worker registries use it. */
export function specKey(spec: EmbeddingSpec): string {
  const precision = spec.provider === 'transformers' && spec.precision ? `:${spec.precision}` : '';
  return `${spec.provider}:${spec.model}:${spec.dimensions}${precision}`;
}

/** The provider spec a knowledge base's embedding configuration records. */
export function toSpec(embedding: EmbeddingConfig): EmbeddingSpec {
  if (embedding.provider === 'none') throw new EmbeddingError('this knowledge base has no embedding model');
  const { metric: _metric, quantization: _quantization, ...spec } = embedding;
  return spec as EmbeddingSpec;
}
