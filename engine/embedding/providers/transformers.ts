// Embedding provider backed by transformers.js (ONNX Runtime on CPU through onnxruntime-node).
//
// Models are read from a local directory in the Hugging Face layout:
//   <modelDir>/<org>/<name>/{config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx}
// (onnx/model_quantized.onnx serves int8 precision; a knowledge base that records no precision
// uses fp32 when its file is present, else int8), or else from the first of `fallbackModelDirs`
// that holds it (the model shipped with the server). Nothing is downloaded unless `allowRemote` is
// set; downloads then land in <modelDir> in the same layout.
//
// Tokenizer and model are loaded with AutoTokenizer/AutoModel rather than pipeline(): we need
// truncation to the spec's maxTokens (the pipeline always truncates to model_max_length), and
// pipeline() memoizes config.json by model id alone, so two directories holding the same id
// would share one config.

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { endianness } from 'node:os';
import { AutoModel, AutoTokenizer, env, Tensor, type DataType, type PreTrainedModel, type PreTrainedTokenizer } from '@huggingface/transformers';
import { planBatches, type SelfBatching, type TokenBatchLimits } from '../batches';
import { locateModel } from '../hub';
import { EmbeddingError, normalize, type EmbedKind, type EmbeddingProvider, type EmbeddingSpec } from '../provider';

export type TransformersSpec = Extract<EmbeddingSpec, { provider: 'transformers' }>;

export interface TransformersProviderOptions {
  /** Directory holding <org>/<name>/… model folders. Default: transformers.js' env.localModelPath. */
  modelDir?: string;
  /** Searched in order after modelDir for a model it lacks (whole: every file of the spec's precision). */
  fallbackModelDirs?: readonly string[];
  /** Allow downloading missing files from the Hugging Face hub. Default false. */
  allowRemote?: boolean;
  /** ONNX Runtime intra-op threads. Default: ONNX Runtime's choice (all cores). */
  threads?: number;
}

const DEFAULT_MAX_TOKENS = 512;
/**
 * Calls of embed(): at most 16 texts, and at most 256 word pieces once padded to the longest (one
 * full MiniLM chunk; short texts share a call). On CPU the per-token cost is lowest there: a call's
 * activations stay in the core's cache (bench/semantic.ts limit part). The document workers pass
 * their own limits (EMBEDDING_BATCH_SIZE; engine/ingest/handlers.ts).
 */
export const DEFAULT_TOKEN_BATCH: TokenBatchLimits = { texts: 16, tokens: 256 };

/**
 * ONNX Runtime session options of every transformers model (besides threads). At its default
 * optimization level ORT fuses each residual Add and LayerNormalization into one
 * SkipLayerNormalization; in the int8 MiniLM export that fused CPU kernel took a quarter of the
 * inference time, several times what the two unfused nodes take (onnxruntime-node 1.30, AVX-512:
 * 12.6 → 9.8 ms of CPU a 256-token chunk without it). Every other fusion is kept (disabling them
 * measured no better). Where the fusion does not occur (the fp32 export) this changes nothing.
 * Several optimizers would be separated by ";".
 */
export const SESSION_OPTIONS = { extra: { optimization: { disable_specified_optimizers: 'SkipLayerNormFusion' } } } as const;

/**
 * Token ids of each text as the model reads it: special tokens added, cut to `limit` with the
 * closing token put back. transformers.js truncates by cutting the token list, which drops the
 * closing special token ([SEP] for BERT); Python's tokenizers keep it, so long texts embed as they
 * would there. A text of exactly `limit` tokens already ends with it.
 */
export function encodeTexts(tokenizer: PreTrainedTokenizer, texts: readonly string[], limit: number, closingToken: number | null): Int32Array[] {
  return texts.map((text) => {
    const ids = tokenizer.encode(text);
    if (ids.length <= limit) return Int32Array.from(ids);
    const cut = Int32Array.from(ids.slice(0, limit));
    if (closingToken !== null) cut[limit - 1] = closingToken;
    return cut;
  });
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** int64 tensor data from small non-negative ints, without a BigInt per element where the layout allows. */
function int64(values: Int32Array): BigInt64Array {
  const out = new BigInt64Array(values.length);
  if (LITTLE_ENDIAN) {
    const words = new Int32Array(out.buffer);
    for (let i = 0; i < values.length; i++) words[2 * i] = values[i]!;
  } else {
    for (let i = 0; i < values.length; i++) out[i] = BigInt(values[i]!);
  }
  return out;
}

/**
 * One model call's inputs: the texts' token ids padded on the right with `padId` to the longest,
 * the attention mask (1 over each text's tokens), and token types (all 0: one segment).
 */
export function padBatch(
  batch: readonly Int32Array[],
  padId: number,
): { seq: number; inputIds: BigInt64Array; attentionMask: BigInt64Array; tokenTypeIds: BigInt64Array } {
  const seq = Math.max(1, ...batch.map((ids) => ids.length));
  const ids = new Int32Array(batch.length * seq).fill(padId);
  const mask = new Int32Array(batch.length * seq);
  batch.forEach((row, b) => {
    ids.set(row, b * seq);
    mask.fill(1, b * seq, b * seq + row.length);
  });
  return { seq, inputIds: int64(ids), attentionMask: int64(mask), tokenTypeIds: new BigInt64Array(batch.length * seq) };
}

// env is process-global (per worker) and read while files load, so loads are serialized.
let loadChain: Promise<unknown> = Promise.resolve();

function serialize<T>(fn: () => Promise<T>): Promise<T> {
  const run = loadChain.then(fn, fn);
  loadChain = run.catch(() => undefined);
  return run;
}

const ONNX_FILES = { fp32: 'onnx/model.onnx', int8: 'onnx/model_quantized.onnx' } as const;
const DTYPES: Record<keyof typeof ONNX_FILES, DataType> = { fp32: 'fp32', int8: 'q8' };

/** The files a model needs, and which ONNX export serves the requested precision (see EmbeddingSpec). */
function modelFiles(root: string, precision: TransformersSpec['precision']): { missing: string[]; dtype: DataType | null } {
  const missing = ['config.json', 'tokenizer.json', 'tokenizer_config.json'].filter((f) => !existsSync(join(root, f)));
  const wanted = precision ? [precision] : (['fp32', 'int8'] as const);
  const found = wanted.find((p) => existsSync(join(root, ONNX_FILES[p])));
  if (!found) missing.push(wanted.map((p) => ONNX_FILES[p]).join(' or '));
  return { missing, dtype: found ? DTYPES[found] : null };
}

export async function createTransformersProvider(spec: TransformersSpec, options: TransformersProviderOptions = {}): Promise<EmbeddingProvider> {
  const dirs = [...new Set([options.modelDir ?? env.localModelPath, ...(options.fallbackModelDirs ?? [])].map((d) => resolve(d)))];
  const allowRemote = options.allowRemote ?? false;
  const maxTokens = spec.maxTokens ?? DEFAULT_MAX_TOKENS;
  if (spec.pooling !== 'mean' && spec.pooling !== 'cls') {
    throw new EmbeddingError(`Unsupported pooling "${String(spec.pooling)}" for ${spec.model}`);
  }
  if (!Number.isInteger(maxTokens) || maxTokens < 2) {
    throw new EmbeddingError(`maxTokens must be an integer >= 2, got ${maxTokens}`);
  }

  // A Hugging Face id ("org/name" or "name"); anything else (absolute or "../" paths) would make
  // transformers.js read from outside modelDir.
  if (!/^[\w.-]+(\/[\w.-]+)?$/.test(spec.model) || spec.model.includes('..') || spec.model.includes('--')) {
    throw new EmbeddingError(`Invalid model id "${spec.model}": expected "<org>/<name>"`);
  }

  // The first directory holding the whole model; none: the first (downloads land there).
  const modelDir = locateModel(dirs, spec.model, spec.precision)?.dir ?? dirs[0]!;
  const root = join(modelDir, spec.model);
  const { missing, dtype } = modelFiles(root, spec.precision);
  if (missing.length > 0 && !allowRemote) {
    const elsewhere =
      dirs.length > 1
        ? ` (nor in ${dirs
            .slice(1)
            .map((d) => join(d, spec.model))
            .join(', ')})`
        : '';
    throw new EmbeddingError(
      `Embedding model "${spec.model}" is not available locally: missing ${missing.join(', ')} in ${root}${elsewhere} ` +
        `(remote downloads are disabled; put the model files there or allow remote loading)`,
    );
  }

  const sessionOptions: Record<string, unknown> = { ...SESSION_OPTIONS };
  if (options.threads !== undefined) {
    if (!Number.isInteger(options.threads) || options.threads < 1) {
      throw new EmbeddingError(`threads must be a positive integer, got ${options.threads}`);
    }
    sessionOptions.intraOpNumThreads = options.threads;
    sessionOptions.interOpNumThreads = 1;
  }

  const loadOptions = {
    local_files_only: !allowRemote,
    // The file cache is consulted before the local path; point it at modelDir so a stale
    // global cache can never shadow the local model, and downloads land next to local models.
    cache_dir: modelDir,
    device: 'cpu' as const,
    dtype: dtype ?? DTYPES[spec.precision ?? 'fp32'],
    session_options: sessionOptions,
  };

  let tokenizer: PreTrainedTokenizer;
  let model: PreTrainedModel;
  try {
    [tokenizer, model] = await serialize(async () => {
      env.localModelPath = modelDir;
      env.allowLocalModels = true;
      env.allowRemoteModels = allowRemote;
      return Promise.all([AutoTokenizer.from_pretrained(spec.model, loadOptions), AutoModel.from_pretrained(spec.model, loadOptions)]);
    });
  } catch (err) {
    throw new EmbeddingError(`Failed to load embedding model "${spec.model}" from ${root}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }

  // The closing token (put back after truncation, see encodeTexts) is the last of those the
  // post-processor wraps an empty text in ([CLS] [SEP] → [SEP]); with fewer than two there is no
  // opening/closing pair to restore.
  const emptyIds = tokenizer.encode('');
  const closingToken = emptyIds.length >= 2 ? emptyIds[emptyIds.length - 1]! : null;
  // The tokenizer never goes past its own model_max_length.
  const tokenLimit = Math.min(maxTokens, tokenizer.model_max_length ?? Infinity);
  const padId = tokenizer.pad_token_id ?? 0;

  let closed = false;

  /** One model call: token ids (at most tokenLimit each) → unit vectors, in order. */
  async function run(batch: Int32Array[]): Promise<Float32Array[]> {
    const { seq, inputIds, attentionMask, tokenTypeIds } = padBatch(batch, padId);
    const dims = [batch.length, seq];
    // The model picks the inputs its session takes (token_type_ids only where it has them).
    const outputs = (await model({
      input_ids: new Tensor('int64', inputIds, dims),
      attention_mask: new Tensor('int64', attentionMask, dims),
      token_type_ids: new Tensor('int64', tokenTypeIds, dims),
    })) as Record<string, Tensor | undefined>;
    const hidden = outputs.last_hidden_state ?? outputs.token_embeddings ?? outputs.logits;
    if (hidden?.dims.length !== 3) {
      throw new EmbeddingError(`Model "${spec.model}" returned no [batch, seq, dim] output (got ${Object.keys(outputs).join(', ')})`);
    }
    const [, outSeq, dim] = hidden.dims as [number, number, number];
    if (dim !== spec.dimensions) {
      throw new EmbeddingError(`Model "${spec.model}" produces ${dim}-dimensional vectors, but its spec says ${spec.dimensions}`);
    }
    const data = hidden.data as Float32Array;
    const result: Float32Array[] = [];
    for (let b = 0; b < batch.length; b++) {
      const v = new Float32Array(dim);
      const base = b * outSeq * dim;
      if (spec.pooling === 'cls') {
        v.set(data.subarray(base, base + dim));
      } else {
        // Mean over the text's own tokens: the first batch[b].length positions (padding is on the right).
        const count = Math.min(batch[b]!.length, outSeq);
        for (let s = 0; s < count; s++) {
          const off = base + s * dim;
          for (let i = 0; i < dim; i++) v[i]! += data[off + i]!;
        }
        if (count > 0) for (let i = 0; i < dim; i++) v[i]! /= count;
      }
      result.push(normalize(v));
    }
    return result;
  }

  /**
   * Every text tokenized first, then model calls formed by token count (engine/embedding/batches.ts):
   * the fewest padded tokens, and calls no larger than `limits`. Vectors come back in input order.
   */
  async function embedInBatches(texts: string[], kind: EmbedKind, limits: TokenBatchLimits): Promise<Float32Array[]> {
    if (closed) throw new EmbeddingError(`Embedding provider for "${spec.model}" is closed`);
    if (texts.length === 0) return [];
    const prefix = kind === 'query' ? (spec.queryPrefix ?? '') : '';
    const out = new Array<Float32Array>(texts.length);
    try {
      const ids = encodeTexts(tokenizer, prefix ? texts.map((t) => prefix + t) : texts, tokenLimit, closingToken);
      for (const batch of planBatches(
        ids.map((t) => t.length),
        { texts: limits.texts, padded: limits.tokens },
      )) {
        const vectors = await run(batch.map((i) => ids[i]!));
        batch.forEach((i, k) => (out[i] = vectors[k]!));
      }
    } catch (err) {
      if (err instanceof EmbeddingError) throw err;
      throw new EmbeddingError(`Embedding with "${spec.model}" failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    return out;
  }

  const provider: EmbeddingProvider & SelfBatching = {
    model: spec.model,
    dimensions: spec.dimensions,
    embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]> {
      return embedInBatches(texts, kind, DEFAULT_TOKEN_BATCH);
    },
    embedInBatches,
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await model.dispose();
    },
  };

  // Check the dimension once at load time, so a wrong spec fails here and not at first use.
  try {
    await provider.embed(['dimension check'], 'document');
  } catch (err) {
    await model.dispose().catch(() => undefined);
    throw err;
  }
  return provider;
}
