// Full-text benchmark of the engine's BM25 index on SciFact, in process (no HTTP, no log):
//   quality   nDCG@10 / Recall@100 on the training split, chunk hits folded into documents;
//   latency   search times and memory on the corpus replicated R times;
//   peers     Orama and MiniSearch on the same documents and queries, in the same process;
//   sizes     latency, build time and memory at growing item counts.
//
//   bun bench/fulltext.ts [--quick | --full] [--json out.json] [--no-curve] [--plain] [--typo on|off]
//                         [--k1 1.2] [--b 0.75] [--size 2000] [--overlap 200] [--replicas 10]
//   --no-curve skips the size curve (`bun run bench` does: its engine part measures every size).
//   The engine ranks as its full-text endpoint does: item-aware leg scores (engine/search/legs.ts)
//   over the leg's candidates; --plain ranks chunks by their own BM25 alone (the engine before).
//   --size 512 --overlap 51 is the default chunking of all-MiniLM (src/kb-types.ts chunkingFor).
//   bun bench/fulltext.ts --sweep [--json out.json]     quality over a grid of k1, b and chunk size
import { cpus } from 'node:os';
import { analyze } from '../engine';
import { syncItems } from '../engine/search/items';
import { DEFAULT_BM25 } from './lib/engine-internals';
import { evaluate, loadSciFact, scifactDir, type Quality, type SciFact } from './lib/eval-data';
import { f4 } from './lib/format';
import { phaseTimer } from './lib/phases';
import { spread, summarize, timeEach } from './lib/stats';
import { printTable } from './lib/table';
import {
  benchQuery,
  buildEngine,
  engineQuality,
  engineSearch,
  indexChunks,
  measureBuild,
  processItems,
  rankFullText,
  replicate,
} from './fulltext/engine-index';
import {
  args,
  bm25,
  chunking,
  curveSizes,
  LATENCY_K,
  MINISEARCH_TIMED_QUERIES,
  ORAMA_TIMED_QUERIES,
  passes,
  plain,
  typo,
  quick,
  QUICK_QUALITY_QUERIES,
  QUALITY_DEPTH,
  replicas,
  SWEEP_B,
  SWEEP_K1,
  SWEEP_OVERLAP_RATIO,
  SWEEP_SIZES,
} from './fulltext/options';
import { measurePeer, PEERS } from './fulltext/peers';

// --- printing ---------------------------------------------------------------------------------

// Three decimals below 10 ms: full-text latencies sit there.
const ms = (x: number) => (x < 10 ? x.toFixed(3) : x < 1000 ? x.toFixed(1) : x.toFixed(0));
const kib = (bytes: number) => (bytes / 1024).toFixed(2);
const ratio = (x: number) => `${x.toFixed(1)}×`;

const { phases, phase } = phaseTimer();

// --- sections ---------------------------------------------------------------------------------

function sweep(data: SciFact) {
  const results: { size: number; overlap: number; k1: number; b: number; quality: Quality }[] = [];
  for (const size of SWEEP_SIZES) {
    const options = { size, overlap: Math.round(size * SWEEP_OVERLAP_RATIO) };
    const processed = processItems(data.corpus, options);
    const texts = data.corpus.map((d) => d.text);
    const rows: (string | number)[][] = [];
    for (const k1 of SWEEP_K1) {
      const row: (string | number)[] = [k1];
      for (const b of SWEEP_B) {
        const quality = engineQuality(data, indexChunks(processed, texts, { k1, b }), undefined, plain);
        results.push({ ...options, k1, b, quality });
        row.push(`${f4(quality.ndcg10)} / ${f4(quality.recall100)}`);
      }
      rows.push(row);
    }
    printTable(`nDCG@10 / Recall@100, chunk size ${options.size}, overlap ${options.overlap} (rows k1, columns b)`, ['k1 \\ b', ...SWEEP_B.map(String)], rows);
  }
  const best = [...results].sort((x, y) => y.quality.ndcg10 - x.quality.ndcg10 || y.quality.recall100 - x.quality.recall100);
  printTable(
    'Best 10 settings by nDCG@10',
    ['size/overlap', 'k1', 'b', 'nDCG@10', 'Recall@100'],
    best.slice(0, 10).map((r) => [`${r.size}/${r.overlap}`, r.k1, r.b, f4(r.quality.ndcg10), f4(r.quality.recall100)]),
  );
  const current = results.find((r) => r.size === 2000 && r.k1 === DEFAULT_BM25.k1 && r.b === DEFAULT_BM25.b);
  if (current)
    console.log(
      `\n  engine defaults (2000/200, k1 ${DEFAULT_BM25.k1}, b ${DEFAULT_BM25.b}): nDCG@10 ${f4(current.quality.ndcg10)}, Recall@100 ${f4(current.quality.recall100)}`,
    );
  return { grid: results, best: best[0] };
}

async function quality(data: SciFact) {
  const t = performance.now();
  const built = indexChunks(
    processItems(data.corpus, chunking),
    data.corpus.map((d) => d.text),
    bm25,
  );
  const buildMs = performance.now() - t;
  const engine = engineQuality(data, built, undefined, plain);
  console.log(
    `  engine${plain ? ' --plain (chunk BM25 alone)' : ` (item-aware, typo tolerance ${typo ? 'on' : 'off'})`} (size ${chunking.size}, overlap ${chunking.overlap}, k1 ${bm25.k1}, b ${bm25.b}): ` +
      `nDCG@10 ${f4(engine.ndcg10)}  Recall@100 ${f4(engine.recall100)}  over ${engine.queries} queries`,
  );
  console.log(`  ${data.corpus.length} documents → ${built.owner.length} chunks, built in ${ms(buildMs)} ms`);

  // Peers index whole documents (title + text as one field, their defaults otherwise).
  const queries = quick ? spread(data.queries, QUICK_QUALITY_QUERIES) : data.queries;
  const rows: { name: string; quality: Quality }[] = [{ name: 'engine', quality: engineQuality(data, built, queries, plain) }];
  for (const peer of PEERS) {
    const search = await peer.build(data.corpus);
    rows.push({ name: peer.name, quality: evaluate(data, (q) => search(q.text, QUALITY_DEPTH), queries) });
  }
  printTable(
    `Quality, 1× corpus, ${rows[0]!.quality.queries} queries${quick ? ' (--quick: a spread sample)' : ''}`,
    ['system', 'nDCG@10', 'Recall@100'],
    rows.map((r) => [r.name, f4(r.quality.ndcg10), f4(r.quality.recall100)]),
  );
  return { engine, chunks: built.owner.length, buildMs, comparison: rows };
}

async function latency(data: SciFact) {
  const queries = data.queries.map((q) => q.text);
  const items = replicate(data.corpus, data.corpus.length * replicas);
  const built = await measureBuild(() => buildEngine(items, chunking, bm25));
  const { index, items: itemView, chunks, analyzeMs, insertMs } = built.value;
  const search = engineSearch(index, itemView, plain);
  // The first search after the index was built tells it every item (BM25 counts items): timed apart.
  const tSync = performance.now();
  if (!plain) syncItems(index, itemView);
  const syncMs = performance.now() - tSync;
  const terms = queries.map((q) => benchQuery(index, itemView, q, plain));
  timeEach(queries, 1, search); // warm-up: JIT, stem memo, scratch arrays
  const engine = {
    analyze: summarize(timeEach(queries, passes, analyze)),
    search: summarize(timeEach(terms, passes, (t) => rankFullText(index, itemView, t, LATENCY_K, plain))),
    total: summarize(timeEach(queries, passes, search)),
  };
  const memoryPerItem = { heap: built.heapBytes / items.length, rss: built.rssBytes / items.length, index: index.memoryBytes() / items.length };
  printTable(
    `Engine latency, ${items.length} items (${replicas}× corpus, ${chunks} chunks), top ${LATENCY_K}, ${queries.length} queries × ${passes} passes, ms`,
    ['', 'p50', 'p95', 'p99', 'mean'],
    [
      ['query analysis', ms(engine.analyze.p50), ms(engine.analyze.p95), ms(engine.analyze.p99), ms(engine.analyze.mean)],
      ['index search', ms(engine.search.p50), ms(engine.search.p95), ms(engine.search.p99), ms(engine.search.mean)],
      ['search incl. analysis', ms(engine.total.p50), ms(engine.total.p95), ms(engine.total.p99), ms(engine.total.mean)],
    ],
  );
  console.log(
    `  build ${ms(built.ms)} ms (analysis ${ms(analyzeMs)}, insertion ${ms(insertMs)}); ` +
      `${Math.round(items.length / (built.ms / 1000))} items/s on one thread` +
      (plain ? '' : `; then the first search tells the index every item in ${ms(syncMs)} ms`),
  );
  console.log(
    `  memory per item: heap ${kib(memoryPerItem.heap)} KiB, rss ${kib(memoryPerItem.rss)} KiB, ` +
      `InvertedIndex.memoryBytes() ${kib(memoryPerItem.index)} KiB (texts not included: the index does not keep them)`,
  );

  // The engine on exactly the queries each peer is timed on, so the ratios compare like with like.
  const samples = PEERS.map((peer) => spread(queries, peer.timedQueries));
  const engineOnSamples = samples.map((sample) => summarize(timeEach(sample, passes, search)));

  const peers = [];
  for (const [i, peer] of PEERS.entries()) {
    const measured = await measurePeer(peer, items, samples[i]!);
    peers.push({
      ...measured,
      engine: engineOnSamples[i]!,
      p50Ratio: measured.latency.p50 / engineOnSamples[i]!.p50,
      p99Ratio: measured.latency.p99 / engineOnSamples[i]!.p99,
    });
  }
  printTable(
    `Peers, same ${items.length} items, top ${LATENCY_K}, ms; each peer timed once on an evenly spread query sample, the engine on the same sample`,
    ['system', 'queries', 'p50', 'p99', 'engine p50', 'engine p99', 'p50 ratio', 'p99 ratio', 'build ms', 'heap KiB/item'],
    [
      ['engine', queries.length, ms(engine.total.p50), ms(engine.total.p99), '', '', '', '', ms(built.ms), kib(memoryPerItem.heap)],
      ...peers.map((p) => [
        p.name,
        p.timedQueries,
        ms(p.latency.p50),
        ms(p.latency.p99),
        ms(p.engine.p50),
        ms(p.engine.p99),
        ratio(p.p50Ratio),
        ratio(p.p99Ratio),
        ms(p.buildMs),
        kib(p.heapBytesPerItem),
      ]),
    ],
  );
  console.log(`  Orama is timed on ${ORAMA_TIMED_QUERIES} queries only (about half a second each at 52k items); MiniSearch on ${MINISEARCH_TIMED_QUERIES}.`);
  console.log('  Ratio = peer / engine (search incl. analysis). Peers run on their defaults: no stemming, no stop words,');
  console.log('  and Orama matches every query word as a prefix ("a" matches "and", "apple", ...), which costs it time and quality.');
  return {
    items: items.length,
    replicas,
    chunks,
    passes,
    buildMs: built.ms,
    analyzeMs,
    insertMs,
    syncMs,
    memoryBytesPerItem: memoryPerItem,
    engine,
    peers,
  };
}

async function measureSize(data: SciFact, count: number) {
  const queries = data.queries.map((q) => q.text);
  const items = replicate(data.corpus, count);
  const built = await measureBuild(() => buildEngine(items, chunking, bm25));
  const search = engineSearch(built.value.index, built.value.items, plain);
  timeEach(queries, 1, search);
  return {
    items: count,
    chunks: built.value.chunks,
    buildMs: built.ms,
    analyzeMs: built.value.analyzeMs,
    insertMs: built.value.insertMs,
    heapBytesPerItem: built.heapBytes / count,
    indexBytesPerItem: built.value.index.memoryBytes() / count,
    latency: summarize(timeEach(queries, passes, search)),
  };
}

async function sizeCurve(data: SciFact) {
  const points = [];
  for (const count of curveSizes) points.push(await measureSize(data, count));
  printTable(
    `Engine by size (search incl. analysis, top ${LATENCY_K}, ${data.queries.length} queries × ${passes} passes)`,
    ['items', 'chunks', 'p50 ms', 'p95 ms', 'p99 ms', 'build ms', 'items/s', 'heap KiB/item', 'index KiB/item'],
    points.map((p) => [
      p.items,
      p.chunks,
      ms(p.latency.p50),
      ms(p.latency.p95),
      ms(p.latency.p99),
      ms(p.buildMs),
      Math.round(p.items / (p.buildMs / 1000)),
      kib(p.heapBytesPerItem),
      kib(p.indexBytesPerItem),
    ]),
  );
  return points;
}

// --- main -------------------------------------------------------------------------------------

const data = await loadSciFact();
if (!data) {
  console.log(`SciFact not found at ${scifactDir()} (set SCIFACT_DIR); skipping the full-text benchmark.`);
  process.exit(0);
}

const started = performance.now();
const mode = args.sweep ? 'sweep' : quick ? 'quick' : 'full';
console.log(
  `Full-text benchmark (${mode}): ${data.corpus.length} documents, ${data.queries.length} queries, ${data.relevant.size} judged; ` +
    `Bun ${Bun.version}, ${cpus().length}× ${cpus()[0]?.model ?? 'unknown CPU'}`,
);

const results: Record<string, unknown> = {
  mode,
  date: new Date().toISOString(),
  bun: Bun.version,
  cpu: { model: cpus()[0]?.model, count: cpus().length },
  data: { dir: data.dir, documents: data.corpus.length, queries: data.queries.length, judged: data.relevant.size },
};
if (args.sweep) {
  results.sweep = await phase('quality sweep (k1 × b × chunk size)', () => sweep(data));
} else {
  results.settings = { bm25, chunking, replicas, passes, curveSizes, ranking: plain ? 'plain chunk BM25' : 'item-aware' };
  results.quality = await phase('quality', () => quality(data));
  results.latency = await phase(`latency and peers (${replicas}× corpus)`, () => latency(data));
  if (!args['no-curve']) results.sizes = await phase('size curve', () => sizeCurve(data));
}
results.phasesMs = phases;
console.log(`\nTotal ${((performance.now() - started) / 1000).toFixed(1)} s`);

if (args.json) {
  await Bun.write(args.json, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`Results written to ${args.json}`);
}
