// The engine's worker threads in two lanes: documents (chunk, analyze, embed; several workers)
// and queries (embed only; a worker of its own, so a search never waits behind bulk ingestion).
// Query vectors are cached (LRU) per model.
import { LRUCache } from 'lru-cache';
import type { EmbeddingSettings } from '../embedding/factory';
import { EmbeddingError, specKey, type EmbeddingSpec } from '../embedding/provider';
import type { ChunkSpan } from '../chunking/chunker';
import type { EmbeddingBatch, ItemResult } from './handlers';
import { joinResults, splitSpans } from './split';
import { WorkerPool } from '../workers/pool';
import { workerUrl } from '../workers/entry-points';
import { BACKGROUND_NICENESS } from '../workers/priority';
import type { ProcessJob } from './process';

/** Items longer than this many chunks are split into runs (split.ts): across the document workers, and reported as each run is done. */
const SPLIT_CHUNKS = 32;
/** The most chunks in one run of a split item: a 400-chunk PDF reports its progress seven times, not once at the end. */
const RUN_CHUNKS = 64;

export interface ComputeOptions {
  documentWorkers: number;
  queryWorkers?: number;
  settings?: EmbeddingSettings;
  /** Most texts in one embedding call inside a worker (default 16). */
  batchSize?: number;
  /** Most characters in one embedding call, once padded (default 2,048), for models that see only text (HTTP, USE-Lite). */
  batchChars?: number;
  /** Most word pieces in one call of a transformers.js model, once padded (default 256: one full MiniLM chunk). */
  batchTokens?: number;
  queryCacheSize?: number;
  /** Worker script (tests substitute one that can crash on demand). */
  workerUrl?: URL;
}

export class Compute {
  readonly documents: WorkerPool;
  readonly queries: WorkerPool;
  private readonly cache: LRUCache<string, Float32Array>;
  readonly batch: EmbeddingBatch;

  constructor(options: ComputeOptions) {
    const url = options.workerUrl ?? workerUrl('ingest');
    const settings = options.settings ?? {};
    // On close, a batch being embedded finishes first: stopping a thread inside ONNX Runtime aborts the process.
    const closeGraceMs = 10_000;
    // Bulk work yields the CPU to requests and to the query lane (see workers/priority.ts).
    this.documents = new WorkerPool({ size: options.documentWorkers, workerUrl: url, init: { ...settings, niceness: BACKGROUND_NICENESS }, closeGraceMs });
    this.queries = new WorkerPool({ size: options.queryWorkers ?? 1, workerUrl: url, init: settings, closeGraceMs });
    this.cache = new LRUCache({ max: options.queryCacheSize ?? 2048 });
    this.batch = { texts: options.batchSize ?? 16, chars: options.batchChars ?? 2048, tokens: options.batchTokens ?? 256 };
  }

  /** `onChunks`: called as runs of a large item are done, with their chunk count (progress within the item). */
  process(items: ProcessJob[], embedding: EmbeddingSpec | undefined, onChunks?: (chunks: number) => void): Promise<ItemResult[]> {
    const only = items.length === 1 ? items[0]! : undefined;
    if (only && only.text.length > SPLIT_CHUNKS * only.chunking.size) {
      return this.processInRuns(only, embedding, onChunks).then((result) => [result]);
    }
    return this.documents.run<ItemResult[]>({ type: 'process', items, embedding, batch: this.batch });
  }

  /** A large item: its spans found by one worker, then runs of them processed by all (split.ts), each reported when done. */
  private async processInRuns(item: ProcessJob, embedding: EmbeddingSpec | undefined, onChunks?: (chunks: number) => void): Promise<ItemResult> {
    let spans: ChunkSpan[];
    try {
      spans = await this.documents.run<ChunkSpan[]>({ type: 'chunk', text: item.text, chunking: item.chunking });
    } catch (err) {
      return { ok: false, error: `chunking failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    const runs = splitSpans(spans, Math.max(this.documents.size, Math.ceil(spans.length / RUN_CHUNKS)));
    const parts = await Promise.all(
      runs.map((run) =>
        this.documents.run<ItemResult[]>({ type: 'process', items: [{ ...item, spans: run }], embedding, batch: this.batch }).then((result) => {
          if (result[0]?.ok) onChunks?.(run.length);
          return result;
        }),
      ),
    );
    return joinResults(parts.map((p) => p[0]!));
  }

  async embedQuery(spec: EmbeddingSpec, text: string): Promise<Float32Array> {
    const key = `${specKey(spec)}\u0000${text}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    let vectors: Float32Array[];
    try {
      vectors = await this.queries.run<Float32Array[]>({ type: 'embed', texts: [text], kind: 'query', embedding: spec });
    } catch (err) {
      throw new EmbeddingError(err instanceof Error ? err.message : String(err), { cause: err });
    }
    this.cache.set(key, vectors[0]!);
    return vectors[0]!;
  }

  /** Load a model in every worker of both lanes; resolves with the slowest load time. */
  async preload(spec: EmbeddingSpec): Promise<number> {
    const loads = [
      ...Array.from({ length: this.documents.size }, () => this.documents.run<{ millis: number }>({ type: 'load', embedding: spec })),
      ...Array.from({ length: this.queries.size }, () => this.queries.run<{ millis: number }>({ type: 'load', embedding: spec })),
    ];
    return Math.max(...(await Promise.all(loads)).map((l) => l.millis));
  }

  get pending(): number {
    return this.documents.busy + this.documents.queued;
  }

  async close(): Promise<void> {
    await Promise.all([this.documents.close(), this.queries.close()]);
  }
}
