// bench/fulltext.ts, the engine side: BM25 indexes over chunks built as the engine builds them,
// their quality on SciFact, and builds timed with the memory they take.
import { analyze } from '../../engine';
import { InvertedIndex, processContent, type ProcessedChunk } from '../lib/engine-internals';
import { evaluate, rankDocuments, type CorpusDoc, type Quality, type Query, type SciFact } from '../lib/eval-data';
import { settledMemory } from '../lib/memory';
import { LATENCY_K, QUALITY_DEPTH, type Bm25Params, type ChunkingOptions } from './options';

export interface Built<T> {
  value: T;
  ms: number;
  /** Growth of the JS heap (typed-array storage included) and of the resident set, after full GCs. */
  heapBytes: number;
  rssBytes: number;
}

export async function measureBuild<T>(build: () => T | Promise<T>): Promise<Built<T>> {
  const before = await settledMemory();
  const t = performance.now();
  const value = await build();
  const ms = performance.now() - t;
  const after = await settledMemory();
  return { value, ms, heapBytes: after.heap - before.heap, rssBytes: after.rss - before.rss };
}

/**
 * The corpus repeated until `count` items, each copy a separate document with its own id and the
 * very same text (lib/corpus.ts replicaTexts tags copies instead, for text-derived vectors).
 */
export function replicate(corpus: readonly CorpusDoc[], count: number): CorpusDoc[] {
  return Array.from({ length: count }, (_, i) => {
    const doc = corpus[i % corpus.length]!;
    return { id: `${doc.id}#${Math.floor(i / corpus.length)}`, text: doc.text };
  });
}

/** An index over chunks; `owner[doc]` is the position in the item list of the chunk's item. */
export interface ChunkIndex {
  index: InvertedIndex;
  owner: number[];
}

export function processItems(items: readonly CorpusDoc[], options: ChunkingOptions): ProcessedChunk[][] {
  return items.map((d) => processContent({ text: d.text, chunking: options }));
}

/** Chunks get dense increasing document numbers, as KnowledgeBase.applyIndexed hands them out. */
export function indexChunks(processed: readonly ProcessedChunk[][], params: Bm25Params): ChunkIndex {
  const index = new InvertedIndex(params);
  const owner: number[] = [];
  processed.forEach((chunks, item) => {
    for (const chunk of chunks) {
      index.add(owner.length, chunk);
      owner.push(item);
    }
  });
  return { index, owner };
}

export function engineQuality(data: SciFact, built: ChunkIndex, terms: ReadonlyMap<string, string[]>, queries?: readonly Query[]): Quality {
  return evaluate(
    data,
    (q) => rankDocuments(built.index.search(terms.get(q.id)!, QUALITY_DEPTH), (hit) => data.corpus[built.owner[hit.doc]!]!.id).map((d) => d.id),
    queries,
  );
}

export interface ReplicaIndex {
  index: InvertedIndex;
  chunks: number;
  analyzeMs: number;
  insertMs: number;
}

/** Analyze every item (copies too: that is the real ingestion cost) and index its chunks. */
export function buildEngine(items: readonly CorpusDoc[], options: ChunkingOptions, params: Bm25Params): ReplicaIndex {
  const index = new InvertedIndex(params);
  let doc = 0;
  let analyzeMs = 0;
  let insertMs = 0;
  for (const item of items) {
    const t0 = performance.now();
    const chunks = processContent({ text: item.text, chunking: options });
    const t1 = performance.now();
    for (const chunk of chunks) index.add(doc++, chunk);
    insertMs += performance.now() - t1;
    analyzeMs += t1 - t0;
  }
  return { index, chunks: doc, analyzeMs, insertMs };
}

export const engineSearch = (index: InvertedIndex) => (query: string) => index.search(analyze(query), LATENCY_K);
