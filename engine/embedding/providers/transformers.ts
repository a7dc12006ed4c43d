// Embedding provider backed by transformers.js (ONNX Runtime on CPU through onnxruntime-node).
//
// Models are read from a local directory in the Hugging Face layout:
//   <modelDir>/<org>/<name>/{config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx}
// (onnx/model_quantized.onnx serves int8 precision; a knowledge base that records no precision
// uses fp32 when its file is present, else int8). Nothing is downloaded unless `allowRemote` is
// set; downloads then land in <modelDir> in the same layout.
//
// Tokenizer and model are loaded with AutoTokenizer/AutoModel rather than pipeline(): we need
// truncation to the spec's maxTokens (the pipeline always truncates to model_max_length), and
// pipeline() memoizes config.json by model id alone, so two directories holding the same id
// would share one config.

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  AutoModel,
  AutoTokenizer,
  env,
  type DataType,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type Tensor,
} from '@huggingface/transformers';
import { EmbeddingError, normalize, type EmbedKind, type EmbeddingProvider, type EmbeddingSpec } from '../provider';

export type TransformersSpec = Extract<EmbeddingSpec, { provider: 'transformers' }>;

export interface TransformersProviderOptions {
  /** Directory holding <org>/<name>/… model folders. Default: transformers.js' env.localModelPath. */
  modelDir?: string;
  /** Allow downloading missing files from the Hugging Face hub. Default false. */
  allowRemote?: boolean;
  /** ONNX Runtime intra-op threads. Default: ONNX Runtime's choice (all cores). */
  threads?: number;
}

const DEFAULT_MAX_TOKENS = 512;
/** Texts per model call: bounds memory (attention is batch × seq²) and padding waste. */
const BATCH_SIZE = 16;

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
  const missing = ['config.json', 'tokenizer.json', 'tokenizer_config.json'].filter(
    (f) => !existsSync(join(root, f)),
  );
  const wanted = precision ? [precision] : (['fp32', 'int8'] as const);
  const found = wanted.find((p) => existsSync(join(root, ONNX_FILES[p])));
  if (!found) missing.push(wanted.map((p) => ONNX_FILES[p]).join(' or '));
  return { missing, dtype: found ? DTYPES[found] : null };
}

export async function createTransformersProvider(
  spec: TransformersSpec,
  options: TransformersProviderOptions = {},
): Promise<EmbeddingProvider> {
  const modelDir = resolve(options.modelDir ?? env.localModelPath);
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

  const root = join(modelDir, spec.model);
  const { missing, dtype } = modelFiles(root, spec.precision);
  if (missing.length > 0 && !allowRemote) {
    throw new EmbeddingError(
      `Embedding model "${spec.model}" is not available locally: missing ${missing.join(', ')} in ${root} ` +
        `(remote downloads are disabled; put the model files there or allow remote loading)`,
    );
  }

  const sessionOptions: Record<string, unknown> = {};
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
      return Promise.all([
        AutoTokenizer.from_pretrained(spec.model, loadOptions),
        AutoModel.from_pretrained(spec.model, loadOptions),
      ]);
    });
  } catch (err) {
    throw new EmbeddingError(
      `Failed to load embedding model "${spec.model}" from ${root}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }

  // transformers.js truncates by cutting the token list, which drops the closing special token
  // ([SEP] for BERT). Python's tokenizers keep it; put it back so long texts embed as they would
  // there. The closing token is the last of those the post-processor wraps an empty text in
  // ([CLS] [SEP] → [SEP]); with fewer than two there is no opening/closing pair to restore.
  const emptyIds = (tokenizer('').input_ids as Tensor).data as BigInt64Array;
  const closingToken = emptyIds.length >= 2 ? emptyIds[emptyIds.length - 1]! : null;
  // The tokenizer never goes past its own model_max_length.
  const tokenLimit = Math.min(maxTokens, tokenizer.model_max_length ?? Infinity);

  async function run(texts: string[]): Promise<Float32Array[]> {
    const inputs = tokenizer(texts, { padding: true, truncation: true, max_length: maxTokens });
    if (closingToken !== null) {
      const ids = (inputs.input_ids as Tensor).data as BigInt64Array;
      const attention = (inputs.attention_mask as Tensor).data as BigInt64Array;
      const seqLen = (inputs.input_ids as Tensor).dims[1]!;
      if (seqLen === tokenLimit) {
        for (let b = 0; b < texts.length; b++) {
          const last = b * seqLen + seqLen - 1;
          // A row that fills maxTokens and does not end with the closing token was truncated.
          if (attention[last] === 1n && ids[last] !== closingToken) ids[last] = closingToken;
        }
      }
    }
    const outputs = (await model(inputs)) as Record<string, Tensor | undefined>;
    const hidden = outputs.last_hidden_state ?? outputs.token_embeddings ?? outputs.logits;
    if (!hidden || hidden.dims.length !== 3) {
      throw new EmbeddingError(
        `Model "${spec.model}" returned no [batch, seq, dim] output (got ${Object.keys(outputs).join(', ')})`,
      );
    }
    const [batch, seq, dim] = hidden.dims as [number, number, number];
    if (dim !== spec.dimensions) {
      throw new EmbeddingError(
        `Model "${spec.model}" produces ${dim}-dimensional vectors, but its spec says ${spec.dimensions}`,
      );
    }
    const data = hidden.data as Float32Array;
    const mask = (inputs.attention_mask as Tensor).data as BigInt64Array;
    const result: Float32Array[] = [];
    for (let b = 0; b < batch; b++) {
      const v = new Float32Array(dim);
      const base = b * seq * dim;
      if (spec.pooling === 'cls') {
        v.set(data.subarray(base, base + dim));
      } else {
        let count = 0;
        for (let s = 0; s < seq; s++) {
          if (mask[b * seq + s] === 0n) continue;
          count++;
          const off = base + s * dim;
          for (let i = 0; i < dim; i++) v[i]! += data[off + i]!;
        }
        if (count > 0) for (let i = 0; i < dim; i++) v[i]! /= count;
      }
      result.push(normalize(v));
    }
    return result;
  }

  let closed = false;
  const provider: EmbeddingProvider = {
    model: spec.model,
    dimensions: spec.dimensions,
    async embed(texts: string[], kind: EmbedKind): Promise<Float32Array[]> {
      if (closed) throw new EmbeddingError(`Embedding provider for "${spec.model}" is closed`);
      if (texts.length === 0) return [];
      const prefix = kind === 'query' ? (spec.queryPrefix ?? '') : '';
      const prepared = texts.map((t) => prefix + t);
      // Sort by length so each batch pads little; results go back in input order.
      const order = prepared.map((_, i) => i).sort((a, b) => prepared[a]!.length - prepared[b]!.length);
      const out = new Array<Float32Array>(texts.length);
      for (let start = 0; start < order.length; start += BATCH_SIZE) {
        const idx = order.slice(start, start + BATCH_SIZE);
        let vectors: Float32Array[];
        try {
          vectors = await run(idx.map((i) => prepared[i]!));
        } catch (err) {
          if (err instanceof EmbeddingError) throw err;
          throw new EmbeddingError(
            `Embedding with "${spec.model}" failed: ${err instanceof Error ? err.message : String(err)}`,
            { cause: err },
          );
        }
        idx.forEach((i, k) => (out[i] = vectors[k]!));
      }
      return out;
    },
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
