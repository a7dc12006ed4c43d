// What an ingestion worker does with each request. Kept apart from the Worker wiring so a test
// worker can wrap it.
import { createProvider, specKey, type EmbeddingSettings } from '../embedding/factory';
import { batchesItself, planBatches } from '../embedding/batches';
import type { EmbedKind, EmbeddingProvider, EmbeddingSpec } from '../embedding/provider';
import { chunkText, type ChunkingOptions } from '../chunking/chunker';
import { processContent, type ProcessedChunk, type ProcessJob } from './process';
import { lowerThreadPriority } from '../workers/priority';

/** A worker's set-up: where models come from, and a lower priority for the document lane. */
export type WorkerSettings = EmbeddingSettings & { niceness?: number };

export type WorkerRequest =
  | { type: 'init'; settings: WorkerSettings }
  | { type: 'process'; jobId: number; items: ProcessJob[]; embedding?: EmbeddingSpec; batch: EmbeddingBatch }
  | { type: 'embed'; jobId: number; texts: string[]; kind: EmbedKind; embedding: EmbeddingSpec }
  | { type: 'load'; jobId: number; embedding: EmbeddingSpec }
  | { type: 'chunk'; jobId: number; text: string; chunking: ChunkingOptions };

/**
 * A failure with `chunks` failed only at embedding (the model or its endpoint): worth retrying, and
 * its chunks can answer full-text search meanwhile. Without `chunks`, the text itself failed.
 */
export type ItemResult = { ok: true; chunks: ProcessedChunk[]; vectors?: Float32Array[] } | { ok: false; error: string; chunks?: ProcessedChunk[] };

let settings: EmbeddingSettings = {};
// One provider per model per worker: a model loads once and serves every later request.
const providers = new Map<string, Promise<EmbeddingProvider>>();

function provider(spec: EmbeddingSpec): Promise<EmbeddingProvider> {
  const key = specKey(spec);
  let p = providers.get(key);
  if (!p) {
    p = createProvider(spec, settings);
    providers.set(key, p);
    p.catch(() => providers.delete(key)); // a failed load may succeed later (e.g. endpoint back up)
  }
  return p;
}

/**
 * How many texts one model call may take: at most `texts`, and once padded to the longest at most
 * `tokens` word pieces (transformers.js models, which tokenize first) or `chars` characters (the
 * others, which only see text).
 */
export interface EmbeddingBatch {
  texts: number;
  chars: number;
  /** Default 256 (one full MiniLM chunk). */
  tokens?: number;
}

/**
 * Embed in batches of similar length: a batch is padded to its longest text, so sorting the whole
 * request first (not each batch) wastes the least work on padding (engine/embedding/batches.ts).
 * Batches are kept small: on CPU the cost per token is lowest when a call's activations stay in
 * cache (about one full MiniLM chunk, 256 word pieces; bench/semantic.ts limit part), while short
 * texts still share a call. A provider that batches by tokens itself gets the whole request.
 * Vectors come back in input order.
 */
export async function embedAll(p: EmbeddingProvider, texts: string[], kind: EmbedKind, limits: EmbeddingBatch): Promise<Float32Array[]> {
  if (batchesItself(p)) return p.embedInBatches(texts, kind, { texts: limits.texts, tokens: limits.tokens ?? 256 });
  const out = new Array<Float32Array>(texts.length);
  for (const batch of planBatches(
    texts.map((t) => t.length),
    { texts: limits.texts, padded: limits.chars },
  )) {
    const vectors = await p.embed(
      batch.map((k) => texts[k]!),
      kind,
    );
    batch.forEach((k, j) => (out[k] = vectors[j]!));
  }
  return out;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Handle one request; returns the reply value and the buffers to transfer with it. */
export async function handle(req: WorkerRequest): Promise<{ value: unknown; transfer: ArrayBuffer[] }> {
  switch (req.type) {
    case 'init':
      settings = req.settings;
      if (req.settings.niceness) lowerThreadPriority(req.settings.niceness);
      return { value: undefined, transfer: [] };
    case 'load': {
      const started = performance.now();
      const p = await provider(req.embedding);
      return { value: { model: p.model, dimensions: p.dimensions, millis: Math.round(performance.now() - started) }, transfer: [] };
    }
    case 'chunk':
      return { value: chunkText(req.text, req.chunking), transfer: [] };
    case 'embed': {
      const vectors = await (await provider(req.embedding)).embed(req.texts, req.kind);
      return { value: vectors, transfer: vectors.map((v) => v.buffer as ArrayBuffer) };
    }
    case 'process': {
      const results: ItemResult[] = req.items.map((item) => {
        try {
          return { ok: true, chunks: processContent(item) };
        } catch (err) {
          return { ok: false, error: `chunking failed: ${message(err)}` };
        }
      });
      const transfer: ArrayBuffer[] = [];
      if (req.embedding) {
        // Every chunk of every item in one stream of batches: small items share a batch.
        const texts: string[] = [];
        req.items.forEach((item, i) => {
          const r = results[i]!;
          if (r.ok) for (const c of r.chunks) texts.push(item.text.slice(c.start, c.end));
        });
        try {
          const p = await provider(req.embedding);
          // A remote endpoint (OpenAI-compatible) batches on its side and pads nothing here: what
          // costs is each round trip, so it gets the whole request (the provider sends calls of at
          // most its maxBatch inputs). Small character budgets made a 16-chunk batch 8 calls.
          const vectors = req.embedding.provider === 'http' ? await p.embed(texts, 'document') : await embedAll(p, texts, 'document', req.batch);
          let next = 0;
          for (const r of results) {
            if (!r.ok) continue;
            r.vectors = vectors.slice(next, next + r.chunks.length);
            next += r.chunks.length;
          }
          for (const v of vectors) transfer.push(v.buffer as ArrayBuffer);
        } catch (err) {
          for (let i = 0; i < results.length; i++) {
            const r = results[i]!;
            if (r.ok) results[i] = { ok: false, error: `embedding failed: ${message(err)}`, chunks: r.chunks };
          }
        }
      }
      return { value: results, transfer };
    }
  }
}
