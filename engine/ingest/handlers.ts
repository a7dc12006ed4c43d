// What an ingestion worker does with each request. Kept apart from the Worker wiring so a test
// worker can wrap it.
import { createProvider, specKey, type EmbeddingSettings } from '../embedding/factory';
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

/** How many texts one model call may take: at most `texts`, and `chars` characters once padded to the longest. */
export interface EmbeddingBatch {
  texts: number;
  chars: number;
}

/**
 * Embed in batches of similar length: a batch is padded to its longest text, so sorting the whole
 * request first (not each batch) wastes the least work on padding. Batches are kept small in
 * characters: on CPU a model call over two full chunks ran twice as fast per chunk as one over
 * sixteen (its activations stay in cache; bench/semantic.ts throughput), while short texts still
 * share a call. Vectors come back in input order.
 */
export async function embedAll(p: EmbeddingProvider, texts: string[], kind: EmbedKind, limits: EmbeddingBatch): Promise<Float32Array[]> {
  const order = texts.map((_, i) => i).sort((a, b) => texts[a]!.length - texts[b]!.length);
  const out = new Array<Float32Array>(texts.length);
  for (let i = 0; i < order.length; ) {
    const batch = [order[i++]!];
    // A call costs about its padded size: every text as long as its longest (the one added last).
    while (i < order.length && batch.length < limits.texts && (batch.length + 1) * texts[order[i]!]!.length <= limits.chars) batch.push(order[i++]!);
    const vectors = await p.embed(batch.map((k) => texts[k]!), kind);
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
          const vectors = await embedAll(await provider(req.embedding), texts, 'document', req.batch);
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
