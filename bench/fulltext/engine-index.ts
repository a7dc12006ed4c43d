// bench/fulltext.ts, the engine side: BM25 indexes over chunks built as the engine builds them,
// their quality on SciFact, and builds timed with the memory they take.
import { analyze } from '../../engine';
import type { Bm25Query } from '../../engine/bm25/inverted-index';
import { expandQuery } from '../../engine/search/expansion';
import { arrayItems, syncItems, type ItemView } from '../../engine/search/items';
import { parseQuery } from '../../engine/search/query-syntax';
import { fullTextCandidates, fullTextDepth } from '../../engine/search/legs';
import { InvertedIndex, processContent, type ProcessedChunk } from '../lib/engine-internals';
import { evaluate, rankDocuments, type CorpusDoc, type Quality, type Query, type SciFact } from '../lib/eval-data';
import { settledMemory } from '../lib/memory';
import { LATENCY_K, QUALITY_DEPTH, typo, type Bm25Params, type ChunkingOptions } from './options';

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
  /** The items' chunks, for BM25 over items and the item-aware full-text leg (engine/search/legs.ts). */
  items: ItemView;
}

/**
 * The engine's full-text ranking (what the full-text endpoint and hybrid's full-text leg return):
 * item-aware leg scores over the leg's candidates; `plain` ranks chunks by their own BM25 alone
 * (the engine before item-aware scoring).
 */
export function rankFullText(index: InvertedIndex, items: ItemView, terms: Bm25Query, k: number, plain: boolean) {
  if (plain) return index.search(terms, k);
  syncItems(index, items);
  return fullTextCandidates(index, terms, fullTextDepth(k)).slice(0, k);
}

export function processItems(items: readonly CorpusDoc[], options: ChunkingOptions): ProcessedChunk[][] {
  return items.map((d) => processContent({ text: d.text, chunking: options }));
}

/** Chunks get dense increasing document numbers, as KnowledgeBase.applyIndexed hands them out. */
export function indexChunks(processed: readonly ProcessedChunk[][], texts: readonly string[], params: Bm25Params): ChunkIndex {
  const index = new InvertedIndex(params);
  const owner: number[] = [];
  const docs: number[][] = [];
  processed.forEach((chunks, item) => {
    docs.push([]);
    for (const chunk of chunks) {
      docs[item]!.push(owner.length);
      index.add(owner.length, chunk);
      owner.push(item);
    }
  });
  return { index, owner, items: arrayItems(owner, docs, texts) };
}

/**
 * The query as the full-text endpoint reads it: its syntax parsed, its words expanded by typo
 * tolerance and the last as a prefix (unless --typo off); --plain: its analyzed terms alone.
 */
export function benchQuery(index: InvertedIndex, items: ItemView, text: string, plain: boolean, typoTolerance = typo): Bm25Query {
  if (plain) return analyze(text);
  syncItems(index, items);
  return expandQuery(index, parseQuery(text), typoTolerance);
}

export function engineQuality(data: SciFact, built: ChunkIndex, queries?: readonly Query[], plain = false, typoTolerance = typo): Quality {
  return evaluate(
    data,
    (q) =>
      rankDocuments(
        rankFullText(built.index, built.items, benchQuery(built.index, built.items, q.text, plain, typoTolerance), QUALITY_DEPTH, plain),
        (hit) => data.corpus[built.owner[hit.doc]!]!.id,
      ).map((d) => d.id),
    queries,
  );
}

export interface ReplicaIndex {
  index: InvertedIndex;
  items: ItemView;
  chunks: number;
  analyzeMs: number;
  insertMs: number;
}

/** Analyze every item (copies too: that is the real ingestion cost) and index its chunks. */
export function buildEngine(items: readonly CorpusDoc[], options: ChunkingOptions, params: Bm25Params): ReplicaIndex {
  const index = new InvertedIndex(params);
  const owner: number[] = [];
  const docs: number[][] = [];
  let doc = 0;
  let analyzeMs = 0;
  let insertMs = 0;
  for (const item of items) {
    const t0 = performance.now();
    const chunks = processContent({ text: item.text, chunking: options });
    const t1 = performance.now();
    const mine: number[] = [];
    for (const chunk of chunks) {
      mine.push(doc);
      owner.push(docs.length);
      index.add(doc++, chunk);
    }
    docs.push(mine);
    insertMs += performance.now() - t1;
    analyzeMs += t1 - t0;
  }
  return {
    index,
    items: arrayItems(
      owner,
      docs,
      items.map((i) => i.text),
    ),
    chunks: doc,
    analyzeMs,
    insertMs,
  };
}

export const engineSearch = (index: InvertedIndex, items: ItemView, plain: boolean) => (query: string) =>
  rankFullText(index, items, benchQuery(index, items, query, plain), LATENCY_K, plain);
