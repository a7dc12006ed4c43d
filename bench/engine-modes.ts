// Engine-level latency of every search mode at growing corpus sizes, in process (no HTTP, no log):
//   full-text (BM25), semantic (HNSW, re-scored exactly), hybrid (weighted, w = 0.5), each through
//   KnowledgeBase as the engine runs them (hits materialized), and a peer for vectors: exact brute
//   force in plain JS over one flat Float32Array (with recall@10 of the engine against it);
//   quality (nDCG@10, Recall@100) of each mode on SciFact train at 1×; memory per chunk.
//
//   bun bench/engine-modes.ts [--sizes 10k,50k,200k] [--quick] [--json out.json] [--no-cache] [--typo on|off]
//
// HNSW graphs take most of the time (200k chunks: ~5 minutes on 2 cores), so each size's graph is
// saved under .bench-out/cache/, named by a SHA-256 of the HNSW settings and every vector added so
// far, and reused by later runs on the very same vectors (--no-cache builds them anew). Latency and
// recall are measured on the graph either way; the build time printed is that of the run that built it.
//
// Vectors come from the deterministic hashed embedder of bench/lib/hash-embed.ts (384-d, the same as the
// HTTP benchmark's stub): semantic numbers measure the engine, not a neural model, and semantic
// quality here is that of a lexical hash, not of an embedding model (bench/semantic.ts measures
// USE-Lite and transformers.js models). Each SciFact document is chunked and analyzed once; copies
// beyond 1× reuse its chunks, and their vectors get Gaussian noise (norm 0.2, cosine ≈ 0.98 with
// the original), so the corpus holds near duplicates rather than identical vectors.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  analyze,
  fullTextQuery,
  searchFullText,
  searchHybrid,
  searchSemantic,
  type EmbeddingConfig,
  type IndexedChunk,
  type KnowledgeBaseRecord,
  type MetadataFilter,
} from '../engine';
import { loadConfig } from '../src/config';
import { configForType } from '../src/kb-types';
import { mulberry32 } from '../support/random';
import { loadCorpus, sampleWorkload } from './lib/corpus';
import { KnowledgeBase, processContent, type ProcessedChunk } from './lib/engine-internals';
import { evaluate, rankDocuments, type Quality } from './lib/eval-data';
import { f4, fmtCount, fmtInt, fmtMs, parseCounts } from './lib/format';
import { HASH_DIMENSIONS, HASH_MODEL, hashEmbed } from './lib/hash-embed';
import { machine } from './lib/machine';
import { settledMemory } from './lib/memory';
import { BENCH_OUT } from './lib/paths';
import { spread, summarize, timeEach, type Latency } from './lib/stats';
import { printTable } from './lib/table';
import { gaussian, noisyCopy } from './lib/vectors';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    'no-cache': { type: 'boolean', default: false },
    /** Typo tolerance of the full-text side, as the endpoints' default (on) or off. */
    typo: { type: 'string', default: 'on' },
  },
  strict: true,
});
const GRAPH_CACHE = join(BENCH_OUT, 'cache');
const quick = args.quick;
if (args.typo !== 'on' && args.typo !== 'off') throw new Error(`--typo must be on or off, got "${args.typo}"`);
const typo = args.typo === 'on';
const sizes = parseCounts(args.sizes ?? (quick ? '2k,6k' : '10k,50k,200k')).sort((a, b) => a - b);
const passes = quick ? 1 : 2;
const K = 10;
const QUALITY_DEPTH = 100;
const BRUTE_QUERIES = quick ? 30 : 150;
const NOISE_NORM = 0.2;

// --- setup ------------------------------------------------------------------------------------

const started = performance.now();
const { data, generated } = await loadCorpus();
const serverConfig = loadConfig();
const embedding: EmbeddingConfig = {
  provider: 'http',
  model: HASH_MODEL,
  dimensions: HASH_DIMENSIONS,
  metric: 'cosine',
  quantization: 'f32',
} as EmbeddingConfig;
const kbConfig = configForType('TEXT_HIGH_QUALITY', serverConfig, {
  TEXT_COST_EFFECTIVE: embedding,
  TEXT_HIGH_QUALITY: embedding,
  TEXT_AND_MEDIA_HIGH_QUALITY: embedding,
});
// Quick: 150 judged queries over their relevant documents and an even spread of others (1,500 documents).
const work = quick ? sampleWorkload(data, 150, { documents: 1500 }) : { corpus: data.corpus, queries: data.queries };
const queries = work.queries;
console.log(
  `Engine modes: ${work.corpus.length} ${generated ? 'generated' : 'SciFact'} documents, ${queries.length} queries, sizes ${sizes.map(fmtCount).join(', ')} chunks; ` +
    `chunking ${kbConfig.chunking.size}/${kbConfig.chunking.overlap}, BM25 k1 ${kbConfig.bm25.k1} b ${kbConfig.bm25.b}, HNSW M ${kbConfig.hnsw.connectivity} ef ${kbConfig.hnsw.expansionAdd}/${kbConfig.hnsw.expansionSearch}; ` +
    `vectors: hashed ${HASH_DIMENSIONS}-d (not a neural model)`,
);

function newKb(): KnowledgeBase {
  const at = new Date().toISOString();
  const record: KnowledgeBaseRecord = {
    id: 'kb_bench',
    orgId: 'org_bench',
    name: 'engine modes',
    description: '',
    type: 'TEXT_HIGH_QUALITY',
    config: { ...kbConfig, id: 'cfg_bench', createdAt: at },
    createdAt: at,
    updatedAt: at,
  };
  return new KnowledgeBase(record);
}

interface Prepared {
  id: string;
  text: string;
  chunks: ProcessedChunk[];
  vectors: Float32Array[];
}

const tPrep = performance.now();
const prepared: Prepared[] = work.corpus.map((d) => {
  const chunks = processContent({ text: d.text, chunking: kbConfig.chunking });
  return { id: d.id, text: d.text, chunks, vectors: chunks.map((c) => hashEmbed(d.text.slice(c.start, c.end))) };
});
const prepMs = performance.now() - tPrep;
const baseChunks = prepared.reduce((s, p) => s + p.chunks.length, 0);
console.log(`  chunked, analyzed and embedded ${work.corpus.length} documents once → ${baseChunks} chunks in ${(prepMs / 1000).toFixed(1)} s`);

const queryTerms = queries.map((q) => analyze(q.text));
const queryVectors = queries.map((q) => hashEmbed(q.text));

const normal = gaussian(mulberry32(42));

// --- exact brute force (the peer) -------------------------------------------------------------

/** Flat row store of every vector added, for a plain-JS exact search. */
class BruteForce {
  private readonly rows: Float32Array;
  size = 0;
  constructor(
    capacity: number,
    private readonly d: number,
  ) {
    this.rows = new Float32Array(capacity * d);
  }
  add(v: Float32Array): void {
    this.rows.set(v, this.size * this.d);
    this.size++;
  }
  /** Top k by dot product (vectors are unit length: cosine), as [doc, score] best first. */
  search(q: Float32Array, k: number): { doc: number; score: number }[] {
    const { rows, d } = this;
    const topDoc = new Int32Array(k).fill(-1);
    const topScore = new Float64Array(k).fill(-Infinity);
    for (let doc = 0, o = 0; doc < this.size; doc++, o += d) {
      let s = 0;
      for (let j = 0; j < d; j++) s += rows[o + j]! * q[j]!;
      if (s <= topScore[k - 1]!) continue;
      let i = k - 1;
      while (i > 0 && topScore[i - 1]! < s) {
        topScore[i] = topScore[i - 1]!;
        topDoc[i] = topDoc[i - 1]!;
        i--;
      }
      topScore[i] = s;
      topDoc[i] = doc;
    }
    const out: { doc: number; score: number }[] = [];
    for (let i = 0; i < k; i++) if (topDoc[i]! >= 0) out.push({ doc: topDoc[i]!, score: topScore[i]! });
    return out;
  }
}

// --- quality at 1× ----------------------------------------------------------------------------

function quality(): Record<string, Quality> | undefined {
  if (generated) return undefined;
  const kb = newKb();
  prepared.forEach((p, i) => {
    const item = kb.putContent(`ct_${i}`, { version: 1, text: p.text, metadata: { sciId: p.id }, source: { kind: 'text' } }, new Date().toISOString());
    kb.applyIndexed(item, p.chunks.map((c, j) => ({ ...c, id: `ch_${i}_${j}` })) as IndexedChunk[], p.vectors, kb.docSpace);
  });
  while (!kb.vectors!.buildStep(1000, 256));
  const toIds = (hits: readonly { score: number; metadata: Record<string, unknown> }[]) =>
    rankDocuments(hits, (h) => String(h.metadata.sciId)).map((d) => d.id);
  const index = new Map(queries.map((q, i) => [q.id, i]));
  const modes: Record<string, (i: number) => string[]> = {
    'full-text': (i) => toIds(searchFullText(kb, fullTextQuery(kb, queries[i]!.text, typo), QUALITY_DEPTH)),
    semantic: (i) => toIds(searchSemantic(kb, queryVectors[i]!, QUALITY_DEPTH)),
    hybrid: (i) =>
      toIds(searchHybrid(kb, fullTextQuery(kb, queries[i]!.text, typo), queryVectors[i]!, QUALITY_DEPTH, { semanticWeight: 0.5, fusion: 'weighted' })),
  };
  const out: Record<string, Quality> = {};
  for (const [mode, rank] of Object.entries(modes)) out[mode] = evaluate(data, (q) => rank(index.get(q.id)!), queries);
  printTable(
    `Quality on SciFact train at 1× (${baseChunks} chunks, ${out['full-text']!.queries} queries, typo tolerance ${typo ? 'on' : 'off'}; semantic/hybrid with the hashed embedder, not a neural model)`,
    ['mode', 'nDCG@10', 'Recall@100'],
    Object.entries(out).map(([m, q]) => [m, f4(q.ndcg10), f4(q.recall100)]),
  );
  return out;
}

// --- latency by size --------------------------------------------------------------------------

interface Point {
  chunks: number;
  items: number;
  insertMs: number;
  graphMs: number;
  graphCached: boolean;
  heapBytesPerChunk: number;
  rssBytesPerChunk: number;
  vectorBytesPerChunk: number;
  postingBytesPerChunk: number;
  latency: Record<'full-text' | 'semantic' | 'hybrid' | 'exact brute force', Latency>;
  queriesPerSecond: Record<string, number>;
  recall10: number;
  bruteQueries: number;
  /** Filtered searches: the share of chunks a filter lets through, the time to evaluate it, and each mode with it. */
  filters: Record<string, { share: number; evaluate: Latency; 'full-text': Latency; semantic: Latency }>;
}

/** Filters at about 1% and 50% of the items: equality, a range, and a compound. */
const FILTERS: Record<string, MetadataFilter> = {
  '1% equal': { bucket: 7 },
  '50% equal': { half: true },
  '1% range': { n: { $lt: 10 } },
  '50% range': { n: { $gte: 500 } },
  '1.5% $or': { $or: [{ bucket: 7 }, { n: { $gte: 995 } }] },
  '49% $ne+range': { half: { $ne: true }, n: { $lt: 990 } },
};

async function latencyCurve(): Promise<Point[]> {
  const maxChunks = sizes[sizes.length - 1]!;
  const brute = new BruteForce(maxChunks + 64, HASH_DIMENSIONS);
  const kb = newKb();
  const before = await settledMemory();
  const points: Point[] = [];
  let items = 0;
  let insertMs = 0;
  let graphMs = 0;
  const at = new Date().toISOString();
  // Names the graph of the vectors added so far (see the cache note at the top).
  const vectorHash = new Bun.CryptoHasher('sha256');
  // The graph's own storage is part of the key: graphs hold i8 vectors since issue 25 (an older f32 cache is not loaded).
  vectorHash.update(JSON.stringify({ dims: HASH_DIMENSIONS, hnsw: kbConfig.hnsw, quantization: embedding.quantization, graph: 'i8' }));
  for (const target of sizes) {
    const t0 = performance.now();
    while (kb.chunkCount < target) {
      const p = prepared[items % prepared.length]!;
      const copy = Math.floor(items / prepared.length);
      const vectors = copy === 0 ? p.vectors : p.vectors.map((v) => noisyCopy(v, normal, NOISE_NORM));
      const item = kb.putContent(
        `ct_${items}`,
        { version: 1, text: p.text, metadata: { sciId: p.id, bucket: items % 100, half: items % 2 === 0, n: items % 1000 }, source: { kind: 'text' } },
        at,
      );
      kb.applyIndexed(item, p.chunks.map((c, j) => ({ ...c, id: `ch_${items}_${j}` })) as IndexedChunk[], vectors, kb.docSpace);
      for (const v of vectors) {
        brute.add(v);
        vectorHash.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      }
      items++;
    }
    const t1 = performance.now();
    const cacheFile = join(GRAPH_CACHE, `hnsw-${(vectorHash.copy().digest('hex') as string).slice(0, 24)}.usearch`);
    const cached = !args['no-cache'] && existsSync(cacheFile) && existsSync(`${cacheFile}.json`);
    if (cached) {
      const { builtMs } = JSON.parse(readFileSync(`${cacheFile}.json`, 'utf8')) as { builtMs: number };
      kb.vectors!.attachGraph(cacheFile, kb.vectors!.aliveDocs());
      graphMs = builtMs;
    } else {
      while (!kb.vectors!.buildStep(1000, 256));
      graphMs += performance.now() - t1;
      mkdirSync(GRAPH_CACHE, { recursive: true });
      kb.vectors!.saveGraph(`${cacheFile}.tmp`);
      renameSync(`${cacheFile}.tmp`, cacheFile);
      writeFileSync(`${cacheFile}.json`, JSON.stringify({ builtMs: graphMs, chunks: kb.chunkCount }));
    }
    insertMs += t1 - t0;
    const mem = await settledMemory();
    const chunks = kb.chunkCount;

    const ids = queries.map((_, i) => i);
    const ft = (i: number) => searchFullText(kb, queryTerms[i]!, K);
    const sem = (i: number) => searchSemantic(kb, queryVectors[i]!, K);
    const hyb = (i: number) => searchHybrid(kb, queryTerms[i]!, queryVectors[i]!, K, { semanticWeight: 0.5, fusion: 'weighted' });
    const sample = spread(ids, BRUTE_QUERIES);
    const bf = (i: number) => brute.search(queryVectors[i]!, K);
    // Warm-up (JIT, stem memo, scratch arrays), then timed passes.
    timeEach(spread(ids, 100), 1, ft);
    timeEach(spread(ids, 100), 1, sem);
    timeEach(spread(ids, 100), 1, hyb);
    timeEach(sample.slice(0, 3), 1, bf);
    const ftS = timeEach(ids, passes, ft);
    const semS = timeEach(ids, passes, sem);
    const hybS = timeEach(ids, passes, hyb);
    const bfS = timeEach(sample, 1, bf);
    let recall = 0;
    for (const i of sample) {
      const truth = new Set(brute.search(queryVectors[i]!, K).map((h) => h.doc));
      recall += searchSemantic(kb, queryVectors[i]!, K).filter((h) => truth.has(h.doc)).length / Math.max(1, truth.size);
    }
    const filters: Point['filters'] = {};
    const filterIds = spread(ids, 200);
    for (const [name, filter] of Object.entries(FILTERS)) {
      const share = (kb.allowedSet(filter)?.size ?? chunks) / chunks;
      timeEach(filterIds.slice(0, 20), 1, (i) => searchFullText(kb, queryTerms[i]!, K, filter));
      filters[name] = {
        share,
        evaluate: summarize(timeEach(filterIds, 1, () => kb.allowedSet(filter))),
        'full-text': summarize(timeEach(filterIds, 1, (i) => searchFullText(kb, queryTerms[i]!, K, filter))),
        semantic: summarize(timeEach(filterIds, 1, (i) => searchSemantic(kb, queryVectors[i]!, K, filter))),
      };
    }
    const sum = (s: number[]) => s.reduce((a, b) => a + b, 0);
    const point: Point = {
      chunks,
      items,
      insertMs,
      graphMs,
      graphCached: cached,
      heapBytesPerChunk: (mem.heap - before.heap) / chunks,
      rssBytesPerChunk: (mem.rss - before.rss) / chunks,
      vectorBytesPerChunk: kb.vectors!.memoryBytes() / chunks,
      postingBytesPerChunk: kb.bm25.memoryBytes() / chunks,
      latency: { 'full-text': summarize(ftS), semantic: summarize(semS), hybrid: summarize(hybS), 'exact brute force': summarize(bfS) },
      queriesPerSecond: {
        'full-text': ftS.length / (sum(ftS) / 1000),
        semantic: semS.length / (sum(semS) / 1000),
        hybrid: hybS.length / (sum(hybS) / 1000),
        'exact brute force': bfS.length / (sum(bfS) / 1000),
      },
      recall10: recall / sample.length,
      bruteQueries: sample.length,
      filters,
    };
    points.push(point);
    console.log(
      `  ${fmtInt(chunks)} chunks (${fmtInt(items)} items): inserted in ${(insertMs / 1000).toFixed(1)} s, HNSW graph ${(graphMs / 1000).toFixed(1)} s${cached ? ' (when built; loaded from the cache now)' : ''}; ` +
        `p50 full-text ${fmtMs(point.latency['full-text'].p50)} ms, semantic ${fmtMs(point.latency.semantic.p50)} ms, hybrid ${fmtMs(point.latency.hybrid.p50)} ms, ` +
        `brute force ${fmtMs(point.latency['exact brute force'].p50)} ms; recall@10 ${f4(point.recall10)}`,
    );
    for (const [name, f] of Object.entries(filters)) {
      console.log(
        `    filter ${name.padEnd(14)} (${(f.share * 100).toFixed(1)}% of chunks): evaluated p50 ${fmtMs(f.evaluate.p50)} / p99 ${fmtMs(f.evaluate.p99)} ms; ` +
          `full-text p50 ${fmtMs(f['full-text'].p50)} / p99 ${fmtMs(f['full-text'].p99)} ms; semantic p50 ${fmtMs(f.semantic.p50)} / p99 ${fmtMs(f.semantic.p99)} ms`,
      );
    }
  }
  printTable(
    `Engine latency by size, top ${K}, ms (${queries.length} queries × ${passes} passes; brute force on ${BRUTE_QUERIES} of them; hits materialized as the engine returns them; query vectors precomputed)`,
    ['chunks', 'mode', 'p50', 'p95', 'p99', 'mean', 'queries/s'],
    points.flatMap((p) =>
      (Object.keys(p.latency) as (keyof Point['latency'])[]).map((mode) => [
        fmtInt(p.chunks),
        mode,
        fmtMs(p.latency[mode].p50),
        fmtMs(p.latency[mode].p95),
        fmtMs(p.latency[mode].p99),
        fmtMs(p.latency[mode].mean),
        fmtInt(p.queriesPerSecond[mode]),
      ]),
    ),
  );
  printTable(
    'Engine memory per chunk (growth since the empty knowledge base, after a full GC), bytes',
    ['chunks', 'JS heap', 'RSS', 'vectors (memoryBytes)', 'postings (memoryBytes)', 'HNSW recall@10'],
    points.map((p) => [
      fmtInt(p.chunks),
      fmtInt(p.heapBytesPerChunk),
      fmtInt(p.rssBytesPerChunk),
      fmtInt(p.vectorBytesPerChunk),
      fmtInt(p.postingBytesPerChunk),
      f4(p.recall10),
    ]),
  );
  return points;
}

const qualityResult = quality();
const curve = await latencyCurve();
const results = {
  part: 'engine',
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  machine: machine(),
  corpus: { source: generated ? 'generated' : 'scifact-train', documents: work.corpus.length, baseChunks, queries: queries.length },
  settings: {
    chunking: kbConfig.chunking,
    bm25: kbConfig.bm25,
    hnsw: kbConfig.hnsw,
    embedding: `${HASH_MODEL} ${HASH_DIMENSIONS}-d (hashed, deterministic)`,
    k: K,
    passes,
    noiseNorm: NOISE_NORM,
  },
  quality: qualityResult,
  sizes: curve,
  millis: Math.round(performance.now() - started),
};
console.log(`\nEngine modes done in ${(results.millis / 1000).toFixed(1)} s`);
if (args.json) await Bun.write(args.json, `${JSON.stringify(results, null, 2)}\n`);
