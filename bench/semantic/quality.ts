// bench/semantic.ts, part 1: nDCG@10 / Recall@100 of full-text, semantic and hybrid search (and
// exact f32 and i8 references) for one model, through the engine in process; its ingestion.
import { analyze, VectorIndex, type ChunkHit } from '../../engine';
import { CORES } from '../lib/machine';
import { DEFAULT_EXACT_THRESHOLD } from '../lib/engine-internals';
import { evaluate, rankDocuments, type Quality, type Query, type SciFact } from '../lib/eval-data';
import { f4, fmtInt, fmtMs, pct, secs } from '../lib/format';
import { printTable } from '../lib/table';
import type { ModelChoice } from './models';
import { DOCUMENT_WORKERS, ORG, quick } from './options';
import { prepare, queryVectors } from './prepare';
import { readWal } from './wal';
import type { Workload } from './workload';

interface Variant {
  name: string;
  run: (q: Query) => Promise<ChunkHit[]> | ChunkHit[];
}

export async function qualityForModel(data: SciFact, work: Workload, model: ModelChoice) {
  const prepared = await prepare(model, work);
  const { engine, kbId } = prepared;
  const kb = engine.knowledgeBase(kbId)!;
  const vectors = kb.vectors!;
  console.log(
    `  ${model.spec.model}: ${fmtInt(prepared.documents)} documents → ${fmtInt(prepared.chunks)} chunks (chunking ${kb.record.config.chunking.size}/${kb.record.config.chunking.overlap}), ` +
      `semantic leg ${vectors.graphReady ? 'HNSW' : 'exact'} (${fmtInt(vectors.size)} vectors, exact below ${DEFAULT_EXACT_THRESHOLD})` +
      (prepared.graphBuildMs !== undefined ? `, HNSW graph finished in ${secs(prepared.graphBuildMs)}` : ''),
  );
  const ing = prepared.ingest;
  if (ing) {
    console.log(
      `  ingest${prepared.ingestFromCache ? ` (measured ${ing.measuredAt} when the cache was built)` : ''}: ${fmtInt(ing.documents)} documents, ${fmtInt(ing.chunks)} chunks in ${ing.seconds.toFixed(1)} s ` +
        `(acks ${ing.ackSeconds.toFixed(1)} s) = ${ing.chunksPerSecond.toFixed(1)} chunks/s, ${ing.documentsPerSecond.toFixed(1)} documents/s with ${DOCUMENT_WORKERS} workers; ${ing.failed} failed`,
    );
    console.log(
      `  CPU during ingestion: process ${pct(ing.cpu.processShare)} of ${CORES} cores (process.cpuUsage ${ing.cpu.cpuUsageSeconds.toFixed(1)} s, /proc/self/stat ${ing.cpu.procStatSeconds.toFixed(1)} s ` +
        `over ${ing.cpu.wallSeconds.toFixed(1)} s wall; 1-s windows median ${pct(ing.cpu.windowMedianShare)}, p10 ${pct(ing.cpu.windowP10Share)}); whole machine ${pct(ing.cpu.machineShare)} busy`,
    );
    const cpuPerChunk = ing.cpu.cpuUsageSeconds / Math.max(1, ing.chunks);
    console.log(
      `  CPU per chunk ${(1000 * cpuPerChunk).toFixed(1)} ms (chunking, analysis, embedding, indexing, log): at most ${(DOCUMENT_WORKERS / cpuPerChunk).toFixed(1)} chunks/s ` +
        `with ${DOCUMENT_WORKERS} workers on otherwise idle cores`,
    );
    if (ing.cpu.threads)
      console.log(`  busiest threads (share of one core): ${ing.cpu.threads.map((t) => `${t.name}#${t.tid} ${pct(t.coreShare)}`).join(', ')}`);
  }

  // The engine's own query embedding, timed once per query (the LRU cache answers later calls).
  const tEmbed = performance.now();
  for (const q of work.queries) await engine.searchSemantic(ORG, kbId, { query: q.text, limit: 1 });
  const engineEmbedMs = (performance.now() - tEmbed) / work.queries.length;

  const { vectors: qv, msPerQuery: batchEmbedMs } = await queryVectors(model, prepared.dir, work.queries);

  // i8 copy of the same vectors, searched exactly (what TEXT_COST_EFFECTIVE would store). The log is
  // read directly: nothing is being written to it now.
  const i8 = new VectorIndex({
    dimensions: vectors.dimensions,
    quantization: 'i8',
    connectivity: 16,
    expansionAdd: 128,
    expansionSearch: 64,
    exactThreshold: Infinity,
  });
  const i8Rows: string[] = [];
  for (const item of readWal(prepared.dir).items) {
    for (const v of item.vectors!) {
      i8.add(i8Rows.length, i8.quantize(v));
      i8Rows.push(String(item.metadata.sciId));
    }
  }
  const search = engine;
  const skb = kb;

  const req = (q: Query, limit = 100) => ({ query: q.text, limit });
  const hybrid = (w: number, fusion: 'weighted' | 'rrf' = 'weighted', limit = 100): Variant => ({
    name: `hybrid ${fusion === 'rrf' ? 'rrf' : 'weighted'} w=${w}${limit === 100 ? '' : `, ${limit} hits`}`,
    run: async (q) => (await search.searchHybrid(ORG, kbId, { ...req(q, limit), semanticWeight: w, fusion }))!,
  });
  const queryTerms = new Map(work.queries.map((q) => [q.id, analyze(q.text)]));
  const variants: Variant[] = [
    { name: 'full-text (BM25)', run: (q) => search.searchFullText(ORG, kbId, req(q))! },
    { name: `semantic (engine: ${skb.vectors!.graphReady ? 'HNSW' : 'exact'})`, run: async (q) => (await search.searchSemantic(ORG, kbId, req(q)))! },
    hybrid(0),
    hybrid(0.3),
    hybrid(0.5),
    hybrid(0.7),
    hybrid(1),
    hybrid(0.5, 'rrf'),
    // Typo tolerance is on by default: the same searches without it.
    { name: 'full-text (BM25), typo tolerance off', run: (q) => search.searchFullText(ORG, kbId, { ...req(q), typoTolerance: false })! },
    {
      name: 'hybrid weighted w=0.5, typo tolerance off',
      run: async (q) => (await search.searchHybrid(ORG, kbId, { ...req(q), semanticWeight: 0.5, fusion: 'weighted', typoTolerance: false }))!,
    },
    { name: 'full-text, 10 hits', run: (q) => search.searchFullText(ORG, kbId, req(q, 10))! },
    { name: 'semantic, 10 hits', run: async (q) => (await search.searchSemantic(ORG, kbId, req(q, 10)))! },
    hybrid(0.5, 'weighted', 10),
    hybrid(0.5, 'rrf', 10),
    // Each chunk by its own BM25 (with the items' statistics), without its item's evidence.
    { name: 'full-text, chunk BM25 alone (reference)', run: (q) => skb.hits(skb.bm25.search(queryTerms.get(q.id)!, 100)) },
    { name: 'semantic, exact f32 (reference)', run: (q) => skb.hits(skb.vectors!.exact(qv.get(q.id)!, 100)) },
  ];
  // How many items the first 10 hits show (10 = no item twice on the first page).
  const rows: { name: string; quality: Quality; msPerQuery: number; itemsTop10?: number }[] = [];
  const toIds = (hits: readonly ChunkHit[]) => rankDocuments(hits, (h) => String(h.metadata.sciId)).map((d) => d.id);
  for (const v of variants) {
    const rankings = new Map<string, string[]>();
    const t = performance.now();
    let items = 0;
    for (const q of work.queries) {
      const hits = await v.run(q);
      rankings.set(q.id, toIds(hits));
      items += new Set(hits.slice(0, 10).map((h) => h.contentId)).size;
    }
    const msPerQuery = (performance.now() - t) / work.queries.length;
    rows.push({ name: v.name, quality: evaluate(data, (q) => rankings.get(q.id)!, work.queries), msPerQuery, itemsTop10: items / work.queries.length });
  }
  {
    const rankings = new Map<string, string[]>();
    const t = performance.now();
    for (const q of work.queries) {
      const hits = i8.exact(qv.get(q.id)!, 100).map((s) => ({ score: s.score, id: i8Rows[s.doc]! }));
      rankings.set(
        q.id,
        rankDocuments(hits, (h) => h.id).map((d) => d.id),
      );
    }
    rows.push({
      name: 'semantic, exact i8 (TEXT_COST_EFFECTIVE storage)',
      quality: evaluate(data, (q) => rankings.get(q.id)!, work.queries),
      msPerQuery: (performance.now() - t) / work.queries.length,
    });
  }
  await search.close();

  printTable(
    `Quality of ${model.spec.model} on SciFact train, ${rows[0]!.quality.queries} queries, ${fmtInt(prepared.documents)} documents${quick ? ' (--quick sample)' : ''}; limit 100 chunks (unless said), best chunk per document`,
    ['search', 'nDCG@10', 'Recall@100', 'items in top 10', 'ms/query'],
    rows.map((r) => [r.name, f4(r.quality.ndcg10), f4(r.quality.recall100), r.itemsTop10 === undefined ? '' : r.itemsTop10.toFixed(2), fmtMs(r.msPerQuery)]),
  );
  console.log(
    `  ms/query: in-process engine calls, query vector already cached (engine query embedding took ${fmtMs(engineEmbedMs)} ms/query, one at a time` +
      (batchEmbedMs !== undefined ? `; batched over ${DOCUMENT_WORKERS} workers ${fmtMs(batchEmbedMs)} ms/query` : '') +
      ')',
  );
  return {
    model: model.spec,
    dir: prepared.dir,
    documents: prepared.documents,
    chunks: prepared.chunks,
    chunking: skb.record.config.chunking,
    ingest: prepared.ingest,
    ingestFromCache: prepared.ingestFromCache,
    reopened: prepared.reopened,
    engineQueryEmbedMs: engineEmbedMs,
    rows,
  };
}
