// One node at growing size (issue 25, "A million chunks is a small node"): for each size, a fresh
// real server (bun src/main.ts) is bulk-loaded through HTTP, searched through HTTP, stopped
// gracefully, restarted on its files, and finally opened by the engine alone in this process:
//   load      chunks/s of many concurrent writers (POST …/contents without ?wait) until every item
//             is ready (/metrics), then the seconds until the HNSW graph holds every vector;
//   memory    server RSS per chunk after the load and after a restart (the 384-d f32 vector is
//             1,536 B of it), peak RSS; the engine alone's breakdown: vector rows, HNSW graph,
//             BM25 postings, the rest of the JS heap, native memory outside it;
//   disk      snapshot (records.log, HNSW graph files) and write-ahead log bytes;
//   restart   graceful shutdown (snapshot at shutdown included), spawn → /ready split into runtime
//             start, snapshot load and log replay (the server's own /ready `recovery`), the rest;
//   search    p50/p99 per mode through HTTP (one connection) and in the engine alone; recall@10 of
//             semantic (HNSW, re-scored) against exact search over the same stored vectors.
// Sizes not measured (10M always, 1M unless asked) are projected from the two largest measured
// sizes: totals (memory, disk, seconds) along the straight line through them (its slope is what one
// more chunk costs), median latency by a power law; every row says measured or projected.
//
//   bun bench/scale.ts [--sizes 10k,100k,1m] [--quick] [--json out.json] [--connections 16]
//                      [--duration 5] [--queries 300] [--from earlier.json]
//                      [--bulk jsonl] [--batch-lines 2000] [--load-only] [--stop-after-load] [--keep]
//   --quick: 10k chunks, short search runs (about a minute under light load).
//   --bulk jsonl: load through POST …/contents/import, --batch-lines items a request (up to 4 at a
//   time) instead of one item per POST; --load-only: stop after the load (rate, CPU per chunk).
//   --stop-after-load: no snapshot once writes pause (SNAPSHOT_IDLE_S=0), so the graceful stop
//   after the load (and the graph) writes it, as a stop in the seconds after a load does.
//   --keep: leave each size's data directory (its path is printed) for a closer look.
//   --from: re-project and print the measured sizes of an earlier --json (starts no server).
//
// Embeddings cost nothing here: every knowledge base type is served by the server's OpenAI-
// compatible HTTP provider pointed at the hashing stub of bench/snapshot/stub.ts (a child process,
// deterministic 384-d vectors: hashed words plus noise seeded by the whole text, so replicated
// abstracts stay distinct). Items are SciFact train abstracts replicated with a tag per copy (or
// generated text without ../shared/eval), chunked as the server chunks for an HTTP model. The
// 1-minute load average is recorded at every phase: the machine has 2 shared cores.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { analyze, GraphSearcher, searchFullText, searchHybrid, searchSemantic, type RecoveryReport } from '../engine';
import { listSnapshotDirs, openEngine } from '../snapshots';
import { headers, ORG, KEY } from './http/auth';
import { ingestThroughHttp } from './http/ingestion';
import { cannon } from './http/load';
import { cpuSecondsOf } from './lib/cpu';
import { loadCorpus, replicaText } from './lib/corpus';
import { chunkText } from './lib/engine-internals';
import { dirBytes } from './lib/files';
import { fmtCount, fmtInt, fmtMs, kcount, parseCounts, f3 } from './lib/format';
import { HASH_DIMENSIONS, HASH_MODEL, hashEmbedWithTextNoise } from './lib/hash-embed';
import { machine } from './lib/machine';
import { procStatusBytes, rssOf, settledMemory } from './lib/memory';
import { metricSum, scrapeMetrics } from './lib/metrics';
import { phaseTimer } from './lib/phases';
import { launchServer, waitFor, type Server } from './lib/server';
import { spread, summarize, timeEach, type Latency } from './lib/stats';
import { printTable } from './lib/table';
import { spawnStub, TEXT_NOISE } from './snapshot/stub';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    connections: { type: 'string' },
    duration: { type: 'string' },
    queries: { type: 'string' },
    from: { type: 'string' },
    'load-only': { type: 'boolean', default: false },
    'stop-after-load': { type: 'boolean', default: false },
    bulk: { type: 'string' },
    'batch-lines': { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
  strict: true,
});
const quick = args.quick;
const sizes = parseCounts(args.sizes ?? (quick ? '10k' : '10k,100k,1m')).sort((a, b) => a - b);
const writers = Number(args.connections ?? 16);
const durationS = Math.max(1, Math.round(Number(args.duration ?? (quick ? 2 : 5))));
// --bulk jsonl: the load goes through POST …/contents/import, --batch-lines items a request.
if (args.bulk !== undefined && args.bulk !== 'jsonl') throw new Error('--bulk takes jsonl');
const bulk = args.bulk === 'jsonl';
const batchLines = Number(args['batch-lines'] ?? 2000);
const bulkLabel = bulk ? `JSONL import, ${batchLines} items a request, ${Math.min(writers, 4)} at a time` : `${writers} writers, one item per POST …/contents`;
const queryCount = Number(args.queries ?? (quick ? 100 : 300));
const MODES = ['full-text', 'semantic', 'hybrid'] as const;
type Mode = (typeof MODES)[number];
const K = 10;
const F32_VECTOR_BYTES = HASH_DIMENSIONS * 4;
const PROJECT_TO = [1_000_000, 10_000_000];

const started = performance.now();
const { phases, phase } = phaseTimer({ load: true });
const load1 = () => +loadavg()[0]!.toFixed(2);
const { data, generated } = await loadCorpus();
const queries = spread(
  data.queries.map((q) => q.text),
  queryCount,
);
const problems: string[] = [];
console.log(
  `Scale benchmark: ${args.from ? `re-projecting the sizes measured in ${args.from}; ` : ''}sizes ${(args.from ? [] : sizes).map(fmtCount).join(', ')} chunks; ${generated ? 'generated text' : 'SciFact train abstracts'} replicated; ${writers} concurrent writers; ` +
    `search ${durationS} s per mode through HTTP over ${queries.length} queries; ${HASH_DIMENSIONS}-d vectors from a hashing stub (NOT a neural model); RAM ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
);

// Not needed when only re-projecting an earlier run (--from).
const stub = args.from ? undefined : await spawnStub();
const env = (dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  KB_API_KEYS: `${ORG}:${KEY}`,
  RATE_LIMIT_RPS: '0',
  // A million chunks are ~900k items: above the default quota of contents per organization.
  MAX_CONTENTS_PER_ORG: '0',
  HIGH_QUALITY_MODEL: `http:${HASH_MODEL}`,
  COST_EFFECTIVE_MODEL: `http:${HASH_MODEL}`,
  EMBEDDING_HTTP_URL: stub?.url ?? '',
  EMBEDDING_HTTP_DIMENSIONS: String(HASH_DIMENSIONS),
  ...(args['stop-after-load'] ? { SNAPSHOT_IDLE_S: '0' } : {}),
});

async function call(s: Server, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: (await res.json().catch(() => undefined)) as any };
}

/** Process memory gauges of the server's /metrics (prom-client defaults), bytes. */
async function memoryMetrics(s: Server): Promise<Record<string, number>> {
  const m = await scrapeMetrics(s.base).catch(() => new Map<string, number>());
  return Object.fromEntries([...m].filter(([k]) => /^kb_(process_resident|process_heap|nodejs_heap_size|nodejs_external)/.test(k)));
}

/** Bytes of the newest snapshot (what a restart loads) by kind of file; `kept`: every snapshot kept (SNAPSHOT_KEEP). */
function snapshotFiles(dataDir: string, newest: { dir: string } | undefined) {
  const out = { records: 0, graphs: 0, other: 0, total: 0, kept: dirBytes(join(dataDir, 'snapshots')) };
  if (!newest) return out;
  for (const name of readdirSync(newest.dir)) {
    const bytes = statSync(join(newest.dir, name)).size;
    if (name === 'records.log') out.records += bytes;
    else if (name.endsWith('.usearch')) out.graphs += bytes;
    else out.other += bytes;
    out.total += bytes;
  }
  return out;
}

/** `count` single-connection requests per mode's warm-up, then `durationS` of timed ones. */
async function httpLatency(s: Server, kbId: string) {
  type Measured = Latency & { requestsPerSecond: number; firstMs: number; load1: number };
  const out = {} as Record<Mode, Measured> & { fullTextExactWords?: Measured };
  // The engine-alone figures search the query's terms only; through HTTP a search also expands its
  // words by typos and the last one as a prefix (the default). Full-text once more without that.
  const runs: { mode: Mode; label: string; extra: Record<string, unknown>; key: Mode | 'fullTextExactWords' }[] = [
    ...MODES.map((mode) => ({ mode, label: mode, extra: {}, key: mode })),
    { mode: 'full-text', label: 'full-text, typoTolerance false', extra: { typoTolerance: false }, key: 'fullTextExactWords' },
  ];
  for (const { mode, label, extra, key } of runs) {
    const path = `/api/v1/knowledge-bases/${kbId}/search/${mode}`;
    const bodies = queries.map((q) => JSON.stringify({ query: q, limit: K, ...extra }));
    // The first search of a mode after a load pays one-off work (full-text: every item's statistics).
    const t = performance.now();
    await call(s, 'POST', path, { query: queries[0], limit: K, ...extra });
    const firstMs = performance.now() - t;
    // Every query once: the server's query-vector cache then answers, as for repeated queries.
    for (const q of queries) await call(s, 'POST', path, { query: q, limit: K, ...extra });
    const run = await cannon(s, { route: mode, method: 'POST', path, bodies }, 1, { duration: durationS });
    if (run.non2xx + run.errors) problems.push(`${label} through HTTP: ${run.non2xx} non-2xx and ${run.errors} errors`);
    out[key] = { ...run.latency, requestsPerSecond: run.requestsPerSecond, firstMs, load1: load1() };
    console.log(
      `  HTTP ${label.padEnd(9)} p50 ${fmtMs(run.latency.p50)} ms  p99 ${fmtMs(run.latency.p99)} ms  (${fmtInt(run.requestsPerSecond)} req/s on one connection; first search ${fmtMs(firstMs)} ms)`,
    );
  }
  return out;
}

/** Spawn the server on a loaded directory: readiness split by what its log lines and /ready tell. */
async function restart(dataDir: string) {
  const at: Record<string, number> = {};
  const warnings: string[] = [];
  const s = await launchServer({
    env: env(dataDir),
    logLevel: 'info',
    keep: 50,
    onLine: (line) => {
      const msg = /"msg":"([^"]+)"/.exec(line)?.[1];
      if (msg && !(msg in at)) at[msg] = performance.now();
      if (/"level":(4|5|6)\d/.test(line)) warnings.push(line.slice(0, 300));
    },
  });
  const readyMs = await waitFor(s, '/ready', { intervalMs: 10, timeoutMs: 60 * 60_000 });
  const ready = (await (await fetch(`${s.base}/ready`)).json()) as { recovery: RecoveryReport };
  const rec = ready.recovery;
  const since = (msg: string) => (at[msg] === undefined ? NaN : at[msg] - s.spawnedAt);
  const snapshotLoadMs = rec.snapshot?.millis ?? 0;
  const recoveredMs = since('state recovered');
  const split = {
    // Spawn → "listening": Bun starts, modules load, the key log opens.
    runtimeStartMs: s.listenMs,
    snapshotLoadMs,
    logReplayMs: rec.millis - snapshotLoadMs,
    // Listening → engine open, plus the full collection after recovery and the snapshot manager start.
    otherRecoveryMs: recoveredMs - s.listenMs - rec.millis,
    // "state recovered" → /ready answering: models preloaded (the stub: one call), ingestion started.
    modelsAndReadyMs: readyMs - recoveredMs,
  };
  return { server: s, readyMs, recovery: rec, split, warnings };
}

/** The engine alone on the same directory: memory breakdown, latency per mode, recall@10. */
async function engineAlone(dataDir: string, kbId: string) {
  const before = await settledMemory();
  const t = performance.now();
  const { engine } = await openEngine({
    dataDir,
    compute: {
      documentWorkers: 1,
      queryWorkers: 1,
      settings: { modelDir: join(dataDir, 'models'), allowRemoteModels: false, threads: 1, http: { url: stub!.url, timeoutMs: 30_000, retries: 0 } },
    },
    log: () => {},
  });
  // Hybrid's semantic leg searches the graph on this thread of its own, as the engine's does.
  const searcher = new GraphSearcher();
  try {
    const openMs = performance.now() - t;
    const kb = engine.knowledgeBase(kbId)!;
    // The restarted graph may still be taking the vectors the snapshot's graph lacked.
    while (kb.vectors && !kb.vectors.buildStep(1000, 256));
    const after = await settledMemory();
    const chunks = kb.chunkCount;
    const vectors = kb.vectors!;
    const { rows: vectorRowBytes, graph: hnswBytes } = vectors.memoryByPart();
    const postingBytes = kb.bm25.memoryBytes();
    const rssGrowth = after.rss - before.rss;
    const memory = {
      chunks,
      rssGrowth,
      heapGrowth: after.heap - before.heap,
      perChunk: {
        rss: rssGrowth / chunks,
        /** Flat rows (their capacity doubles: up to 2× the live f32 vectors), norms, alive flags. */
        vectorRows: vectorRowBytes / chunks,
        /** USearch's own estimate: a copy of each vector plus its links (native memory). */
        hnswGraph: hnswBytes / chunks,
        bm25Postings: postingBytes / chunks,
        /** Everything else: items, chunk texts and ids, metadata, maps, allocator slack. */
        rest: (rssGrowth - vectorRowBytes - hnswBytes - postingBytes) / chunks,
        /** JS heap growth (postings and the rest's objects; typed array contents may count outside it). */
        jsHeap: (after.heap - before.heap) / chunks,
      },
    };
    const qTerms = queries.map((q) => analyze(q));
    const qVectors = queries.map((q) => hashEmbedWithTextNoise(q, TEXT_NOISE));
    const ids = queries.map((_, i) => i);
    const run: Record<Mode, (i: number) => unknown> = {
      'full-text': (i) => searchFullText(kb, qTerms[i]!, K),
      semantic: (i) => searchSemantic(kb, qVectors[i]!, K),
      hybrid: (i) => searchHybrid(kb, qTerms[i]!, qVectors[i]!, K, { semanticWeight: 0.5, fusion: 'weighted' }, undefined, searcher),
    };
    const oneThread = (i: number) => searchHybrid(kb, qTerms[i]!, qVectors[i]!, K, { semanticWeight: 0.5, fusion: 'weighted' });
    const latency = {} as Record<Mode | 'exact' | 'hybridOneThread', Latency>;
    for (const mode of MODES) {
      timeEach(ids, 1, run[mode]);
      latency[mode] = summarize(timeEach(ids, 2, run[mode]));
    }
    // For comparison: both legs on this thread, one after the other.
    latency.hybridOneThread = summarize(timeEach(ids, 2, oneThread));
    const searcherStats = { ...searcher.stats };
    const exactSample = spread(ids, quick ? 30 : 100);
    latency.exact = summarize(timeEach(exactSample, 1, (i) => vectors.exact(qVectors[i]!, K)));
    let recall = 0;
    for (const i of exactSample) {
      const truth = new Set(vectors.exact(qVectors[i]!, K).map((h) => h.doc));
      recall += searchSemantic(kb, qVectors[i]!, K).filter((h) => truth.has(h.doc)).length / Math.max(1, truth.size);
    }
    const recall10 = recall / exactSample.length;
    console.log(
      `  engine alone (opened in ${fmtInt(openMs)} ms): ${MODES.map((m) => `${m} p50 ${fmtMs(latency[m].p50)} / p99 ${fmtMs(latency[m].p99)} ms`).join('; ')} (on one thread ${fmtMs(latency.hybridOneThread.p50)} / ${fmtMs(latency.hybridOneThread.p99)}; graph searches answered off-thread ${searcherStats.answered}, declined ${searcherStats.declined}); exact ${fmtMs(latency.exact.p50)} ms; recall@10 ${f3(recall10)}`,
    );
    return { openMs, memory, latency, recall10, recallQueries: exactSample.length, graphReady: vectors.graphReady, searcher: searcherStats };
  } finally {
    await searcher.stop();
    await engine.close();
  }
}

/**
 * Waits (up to 10 minutes) until the newest snapshot covers the whole log, as the snapshot taken
 * once writes pause makes it: seconds waited and that snapshot's own duration, or covered: false.
 */
async function snapshotCoveringLog(s: Server): Promise<{ covered: boolean; waitedSeconds: number; snapshotMs?: number; seq?: number }> {
  const started = performance.now();
  for (;;) {
    const snap = (await call(s, 'GET', '/ready')).json?.snapshots as { lastSeq?: number; logSeq: number; lastDurationMs?: number } | undefined;
    const waitedSeconds = (performance.now() - started) / 1000;
    if (snap && snap.lastSeq !== undefined && snap.lastSeq >= snap.logSeq) {
      console.log(`  snapshot ${snap.lastSeq} covers the log after ${waitedSeconds.toFixed(1)} s (it took ${fmtInt(snap.lastDurationMs ?? NaN)} ms)`);
      return { covered: true, waitedSeconds, snapshotMs: snap.lastDurationMs, seq: snap.lastSeq };
    }
    if (waitedSeconds > 600) {
      console.log('  no snapshot covered the log within 10 minutes: the stop takes one');
      return { covered: false, waitedSeconds };
    }
    await Bun.sleep(1000);
  }
}

/** CPU seconds of a process's main thread (its JavaScript event loop): what serializes a load. */
function mainThreadCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/**
 * --bulk jsonl: every item through POST …/contents/import, `batchLines` a request, `connections`
 * requests at a time (no ?wait), then /metrics polled until every item is indexed and the HNSW
 * graph is built: the same measures as ingestThroughHttp's.
 */
async function importThroughHttp(
  s: Server,
  kbId: string,
  items: { count: number; bodyAt: (i: number) => string },
  { batchLines, connections, pollMs }: { batchLines: number; connections: number; pollMs: number },
) {
  const tStart = performance.now();
  const cpu0 = cpuSecondsOf(s.pid);
  const main0 = mainThreadCpuSeconds(s.pid);
  const latencies: number[] = [];
  let next = 0;
  let acked = 0;
  const sender = async () => {
    while (next < items.count) {
      const from = next;
      next = Math.min(items.count, next + batchLines);
      const lines: string[] = [];
      for (let i = from; i < next; i++) lines.push(items.bodyAt(i));
      const t = performance.now();
      const res = await fetch(`${s.base}/api/v1/knowledge-bases/${kbId}/contents/import`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        body: `${lines.join('\n')}\n`,
      });
      latencies.push(performance.now() - t);
      if (res.status !== 201) {
        problems.push(`import of items ${from}–${next - 1}: ${res.status} ${(await res.text()).slice(0, 200)}`);
        continue;
      }
      acked += ((await res.json()) as { data: { count: number } }).data.count;
    }
  };
  await Promise.all(Array.from({ length: connections }, sender));
  const ackSeconds = (performance.now() - tStart) / 1000;
  const serverCoresDuringAcks = (cpuSecondsOf(s.pid) - cpu0) / ackSeconds;
  const progress: { t: number; chunks: number; queue: number; rss: number }[] = [];
  let final: { chunks: number; failed: number };
  // Progress from the knowledge base's own counts (a /metrics reading once walked every item and,
  // until the heap-space gauges went, the whole heap: a tenth of the main thread at a 500 ms poll).
  for (;;) {
    const kb = (await call(s, 'GET', `/api/v1/knowledge-bases/${kbId}`)).json?.data?.ingestion?.contents as
      | { pending: number; processing: number; ready: number; failed: number }
      | undefined;
    if (kb) {
      progress.push({ t: (performance.now() - tStart) / 1000, chunks: NaN, queue: kb.pending + kb.processing, rss: rssOf(s.pid) });
      if (kb.pending + kb.processing === 0) {
        const m = await scrapeMetrics(s.base);
        final = { chunks: metricSum(m, 'kb_chunks'), failed: kb.failed };
        break;
      }
    }
    if (performance.now() - tStart > 30 * 60_000) throw new Error('not indexed after 30 minutes');
    await Bun.sleep(pollMs);
  }
  const indexedAt = performance.now();
  const indexedSeconds = (indexedAt - tStart) / 1000;
  const cpuIndexed = cpuSecondsOf(s.pid) - cpu0;
  const mainIndexed = mainThreadCpuSeconds(s.pid) - main0;
  while (metricSum(await scrapeMetrics(s.base), 'kb_vectors_graph_pending') > 0) {
    await Bun.sleep(1000);
    if (performance.now() - tStart > 30 * 60_000) throw new Error('HNSW graph not built after 30 minutes');
  }
  const graphSeconds = (performance.now() - indexedAt) / 1000;
  if (final.failed) problems.push(`ingestion: ${final.failed} items failed`);
  const out = {
    items: items.count,
    chunks: final.chunks,
    failed: final.failed,
    connections,
    ackSeconds,
    acksPerSecond: acked / ackSeconds,
    ackLatency: summarize(latencies),
    serverCoresDuringAcks,
    benchCoresDuringAcks: NaN,
    indexedSeconds,
    itemsIndexedPerSecond: items.count / indexedSeconds,
    chunksIndexedPerSecond: final.chunks / indexedSeconds,
    graphSeconds,
    embedderCalls: undefined as unknown,
    /** Server CPU seconds until every item was indexed (graph steps meanwhile included), all threads and the main thread. */
    cpuUntilIndexed: cpuIndexed,
    mainCpuUntilIndexed: mainIndexed,
    progress,
  };
  console.log(
    `  ${fmtInt(acked)} items imported in ${ackSeconds.toFixed(1)} s = ${fmtInt(out.acksPerSecond)} items/s (${latencies.length} requests of ${batchLines}, ${connections} at a time, p50 ${fmtMs(out.ackLatency.p50)} ms); ` +
      `${fmtInt(final.chunks)} chunks indexed in ${indexedSeconds.toFixed(1)} s = ${fmtInt(out.chunksIndexedPerSecond)} chunks/s (${fmtInt(out.itemsIndexedPerSecond)} items/s); ` +
      `HNSW graph done ${graphSeconds.toFixed(1)} s later; ${final.failed} failed; server CPU ${serverCoresDuringAcks.toFixed(2)} cores while importing; ` +
      `until indexed: server CPU ${fmtInt((cpuIndexed / final.chunks) * 1e6)} µs/chunk, main thread ${fmtInt((mainIndexed / final.chunks) * 1e6)} µs/chunk (${(mainIndexed / indexedSeconds).toFixed(2)} of a core)`,
  );
  return out;
}

async function measureSize(targetChunks: number) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-bench-scale-'));
  const load: Record<string, number> = { start: load1() };
  let server: Server | undefined;
  try {
    // With BENCH_SERVER_LOG (bench/lib/server.ts), at info: the snapshots' steps, the shutdown's.
    server = await launchServer({ env: env(dataDir), ...(process.env.BENCH_SERVER_LOG ? { logLevel: 'info' as const } : {}) });
    await waitFor(server, '/ready');
    const s = server;
    const rssEmpty = rssOf(s.pid);
    const created = await call(s, 'POST', '/api/v1/knowledge-bases', { name: `scale ${fmtCount(targetChunks)}`, type: 'TEXT_HIGH_QUALITY' });
    if (created.status !== 201) throw new Error(`create knowledge base: ${created.status} ${JSON.stringify(created.json)}`);
    const kbId = created.json.data.id as string;
    const chunking = (await call(s, 'GET', `/api/v1/knowledge-bases/${kbId}/configuration`)).json?.data?.chunking as { size: number; overlap: number };
    // As many items as make the target at the server's chunking.
    const chunksOf = new Map<string, number>();
    let items = 0;
    for (let expected = 0; expected < targetChunks; items++) {
      const doc = data.corpus[items % data.corpus.length]!;
      if (!chunksOf.has(doc.id)) chunksOf.set(doc.id, chunkText(doc.text, chunking).length);
      expected += chunksOf.get(doc.id)!;
    }
    const bodyAt = (i: number) => {
      const it = replicaText(data.corpus, i);
      return JSON.stringify({ text: it.text, metadata: { sciId: it.source } });
    };
    const cpu0 = cpuSecondsOf(s.pid);
    const main0 = mainThreadCpuSeconds(s.pid);
    const ingestion = await phase(`${fmtCount(targetChunks)}: bulk load of ${fmtInt(items)} items through HTTP (${bulkLabel}, no ?wait)`, () =>
      bulk
        ? importThroughHttp(s, kbId, { count: items, bodyAt }, { batchLines, connections: Math.min(writers, 4), pollMs: targetChunks > 200_000 ? 2000 : 500 })
        : // /metrics read seldom at large sizes: each reading is a request the load's requests wait behind.
          ingestThroughHttp(s, kbId, { count: items, bodyAt }, problems, {
            connections: writers,
            pollMs: targetChunks > 200_000 ? 2000 : 500,
            // A million chunks took 17–36 minutes on 2 shared cores: room for a slow machine.
            boundMinutes: Math.max(30, Math.ceil((90 * targetChunks) / 1_000_000)),
          }),
    );
    // Server CPU (all threads) per chunk, up to every item indexed and the graph built: what the load
    // costs whatever the neighbours on this shared machine take.
    const serverCpuSeconds = cpuSecondsOf(s.pid) - cpu0;
    const mainCpuSeconds = mainThreadCpuSeconds(s.pid) - main0;
    console.log(
      `  server CPU ${serverCpuSeconds.toFixed(1)} s for the load = ${fmtInt((serverCpuSeconds / ingestion.chunks) * 1e6)} µs per chunk (indexing and graph), ` +
        `of which the main thread ${fmtInt((mainCpuSeconds / ingestion.chunks) * 1e6)} µs (load average ${load1()})`,
    );
    load.loaded = load1();
    const { progress, ...ingestionSummary } = ingestion;
    const chunks = ingestion.chunks;
    const rssLoaded = rssOf(s.pid);
    const peakRssLoad = procStatusBytes(s.pid, 'VmHWM') ?? NaN;
    const metricsLoaded = await memoryMetrics(s);
    const snapshotsDuringLoad = (await call(s, 'GET', '/ready')).json?.snapshots;
    console.log(
      `  RSS ${(rssEmpty / 2 ** 20).toFixed(0)} MiB empty → ${(rssLoaded / 2 ** 20).toFixed(0)} MiB loaded = ${fmtInt((rssLoaded - rssEmpty) / chunks)} B/chunk (peak ${(peakRssLoad / 2 ** 20).toFixed(0)} MiB)`,
    );

    if (args['load-only']) {
      await s.stop(5 * 60_000);
      server = undefined;
      return { chunks, items, loadOnly: true as const, loadAverage: load, ingestion: ingestionSummary, serverCpuSeconds, mainCpuSeconds };
    }

    // Writes paused: the server snapshots (SNAPSHOT_IDLE_S), which holds up searches while it takes
    // the dumps. Searched once that is over, so the latencies are those of a node at rest.
    const idleSnapshot = args['stop-after-load']
      ? { covered: false, waitedSeconds: 0 }
      : await phase(`${fmtCount(targetChunks)}: the snapshot once writes paused`, () => snapshotCoveringLog(s));
    const http = await phase(`${fmtCount(targetChunks)}: search through HTTP, one connection, ${durationS} s per mode`, () => httpLatency(s, kbId));
    load.searched = load1();

    // The stop snapshots unless the newest snapshot already covers the log (one taken once writes paused, SNAPSHOT_IDLE_S) or a small tail is left to it.
    const before = (await listSnapshotDirs(join(dataDir, 'snapshots')))[0]?.seq;
    const shutdownMs = await phase(`${fmtCount(targetChunks)}: graceful shutdown`, () => s.stop(30 * 60_000));
    const exitCode = await s.exited;
    if (exitCode !== 0) problems.push(`${fmtCount(targetChunks)}: server exited ${exitCode} at shutdown`);
    server = undefined;
    const newest = (await listSnapshotDirs(join(dataDir, 'snapshots')))[0];
    const stopSnapshot = newest?.seq !== before;
    const disk = { snapshot: snapshotFiles(dataDir, newest), walBytes: dirBytes(join(dataDir, 'wal')), dataDirBytes: dirBytes(dataDir) };
    console.log(
      `  shutdown ${fmtInt(shutdownMs)} ms (${stopSnapshot ? 'it wrote a snapshot' : `no snapshot: the newest, ${newest?.seq ?? 'none'}, was taken before it`}); snapshot ${(disk.snapshot.total / 2 ** 20).toFixed(1)} MiB (records ${(disk.snapshot.records / 2 ** 20).toFixed(1)}, graphs ${(disk.snapshot.graphs / 2 ** 20).toFixed(1)}) = ${fmtInt(disk.snapshot.total / chunks)} B/chunk (all kept: ${(disk.snapshot.kept / 2 ** 20).toFixed(1)} MiB); log ${(disk.walBytes / 2 ** 20).toFixed(1)} MiB`,
    );

    const restarted = await phase(`${fmtCount(targetChunks)}: restart on the loaded directory`, async () => {
      const r = await restart(dataDir);
      server = r.server;
      const rssReady = rssOf(r.server.pid);
      const metricsReady = await memoryMetrics(r.server);
      const graphPendingAtReady = metricSum(await scrapeMetrics(r.server.base), 'kb_vectors_graph_pending');
      // First search of each mode after the restart (one-off work included), then RSS once warm.
      const firstSearchMs: Record<string, number> = {};
      for (const mode of MODES) {
        const t = performance.now();
        const res = await call(r.server, 'POST', `/api/v1/knowledge-bases/${kbId}/search/${mode}`, { query: queries[1], limit: K });
        firstSearchMs[mode] = performance.now() - t;
        if (res.status !== 200) problems.push(`${fmtCount(targetChunks)}: ${mode} after restart answered ${res.status}`);
      }
      const rssWarm = rssOf(r.server.pid);
      const peakRss = procStatusBytes(r.server.pid, 'VmHWM') ?? NaN;
      const secondShutdownMs = await r.server.stop(30 * 60_000);
      server = undefined;
      console.log(
        `  /ready ${fmtInt(r.readyMs)} ms after spawn: runtime start ${fmtInt(r.split.runtimeStartMs)}, snapshot load ${fmtInt(r.split.snapshotLoadMs)} (from its ${r.recovery.snapshot?.from ?? 'records'}${r.recovery.snapshot?.checksWaitMillis !== undefined ? `; ${fmtInt(r.recovery.snapshot.checksWaitMillis)} of it waiting for the file checks` : ''}), log replay ${fmtInt(r.split.logReplayMs)} (${fmtInt(r.recovery.records)} records), ` +
          `other recovery ${fmtInt(r.split.otherRecoveryMs)}, models + ready ${fmtInt(r.split.modelsAndReadyMs)} ms; RSS ${(rssReady / 2 ** 20).toFixed(0)} MiB at ready, ${(rssWarm / 2 ** 20).toFixed(0)} MiB after first searches ` +
          `(${fmtInt((rssWarm - rssEmpty) / chunks)} B/chunk), peak ${(peakRss / 2 ** 20).toFixed(0)} MiB; first searches ${MODES.map((m) => `${m} ${fmtMs(firstSearchMs[m])}`).join(', ')} ms`,
      );
      return {
        readyMs: r.readyMs,
        split: r.split,
        recovery: r.recovery,
        rssReady,
        rssWarm,
        peakRss,
        metricsReady,
        graphPendingAtReady,
        firstSearchMs,
        secondShutdownMs,
        warnings: r.warnings.slice(0, 10),
      };
    });
    load.restarted = load1();

    const engine = await phase(`${fmtCount(targetChunks)}: the engine alone on the same directory`, () => engineAlone(dataDir, kbId));
    load.engine = load1();

    return {
      chunks,
      items,
      measured: true,
      loadAverage: load,
      chunking,
      ingestion: ingestionSummary,
      progress: progress.filter((_, i) => i % Math.max(1, Math.ceil(progress.length / 200)) === 0),
      memory: {
        rssEmpty,
        rssLoaded,
        peakRssLoad,
        rssAfterRestart: restarted.rssReady,
        rssAfterRestartWarm: restarted.rssWarm,
        peakRssRestart: restarted.peakRss,
        bytesPerChunkLoaded: (rssLoaded - rssEmpty) / chunks,
        bytesPerChunkAfterRestart: (restarted.rssWarm - rssEmpty) / chunks,
        f32VectorBytesPerChunk: F32_VECTOR_BYTES,
        f32VectorShareLoaded: F32_VECTOR_BYTES / ((rssLoaded - rssEmpty) / chunks),
        f32VectorShareAfterRestart: F32_VECTOR_BYTES / ((restarted.rssWarm - rssEmpty) / chunks),
        metricsLoaded,
        metricsReady: restarted.metricsReady,
        engineAlone: engine.memory,
      },
      disk,
      snapshotsDuringLoad,
      idleSnapshot,
      shutdownMs,
      /** Whether the stop wrote a snapshot (not when the newest one already covered the log). */
      shutdownSnapshot: stopSnapshot,
      restart: restarted,
      latency: { http, engine: engine.latency },
      recall10: engine.recall10,
      recallQueries: engine.recallQueries,
      engineOpenMs: engine.openMs,
    };
  } finally {
    if (server) await (server as Server).stop(0).catch(() => {});
    if (args.keep) console.log(`  data directory kept: ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

type Measured = Awaited<ReturnType<typeof measureSize>>;
type Point = Exclude<Measured, { loadOnly: true }>;
type LoadOnly = Extract<Measured, { loadOnly: true }>;

/**
 * Totals (memory, disk, seconds) grow with the chunks: the straight line through the two largest
 * measured sizes, at n (its slope is the marginal cost of a chunk; fixed costs stay in the intercept).
 */
function linear(points: { n: number; y: number }[], n: number): number | undefined {
  const ok = points.filter((p) => Number.isFinite(p.y));
  if (ok.length < 2) return undefined;
  const [p1, p2] = ok.slice(-2) as [{ n: number; y: number }, { n: number; y: number }];
  return p2.y + ((n - p2.n) * (p2.y - p1.y)) / (p2.n - p1.n);
}

/** Median latency grows slower than the chunks (HNSW ~log n, postings ~n): y = a·n^b through the two largest sizes. */
function powerLaw(points: { n: number; y: number }[], n: number): number | undefined {
  const ok = points.filter((p) => Number.isFinite(p.y) && p.y > 0);
  if (ok.length < 2) return undefined;
  const [p1, p2] = ok.slice(-2) as [{ n: number; y: number }, { n: number; y: number }];
  return p2.y * (n / p2.n) ** (Math.log(p2.y / p1.y) / Math.log(p2.n / p1.n));
}

function project(points: Point[], n: number) {
  const along = (fit: typeof linear, get: (p: Point) => number) =>
    fit(
      points.map((p) => ({ n: p.chunks, y: get(p) })),
      n,
    );
  const total = (get: (p: Point) => number) => along(linear, get);
  const rssLoaded = total((p) => p.memory.rssLoaded);
  const rssRestarted = total((p) => p.memory.rssAfterRestartWarm);
  const empty = points[points.length - 1]?.memory.rssEmpty ?? NaN;
  const perChunk = (rss: number | undefined) => (rss === undefined ? undefined : (rss - empty) / n);
  // p99 is not projected: on a shared 2-core machine it follows the neighbours more than the size.
  const latency = (where: 'http' | 'engine') => Object.fromEntries(MODES.map((m) => [m, { p50: along(powerLaw, (p) => p.latency[where][m].p50) }]));
  return {
    chunks: n,
    measured: false,
    basis:
      points.length < 2
        ? 'nothing: a projection needs two measured sizes'
        : `the line through the measured ${points
            .slice(-2)
            .map((p) => kcount(p.chunks))
            .join(' and ')} chunks (latency p50: a power law through them)`,
    memory: { rssLoaded, rssAfterRestartWarm: rssRestarted, bytesPerChunkLoaded: perChunk(rssLoaded), bytesPerChunkAfterRestart: perChunk(rssRestarted) },
    snapshotBytes: total((p) => p.disk.snapshot.total),
    restartReadyMs: total((p) => p.restart.readyMs),
    snapshotLoadMs: total((p) => p.restart.split.snapshotLoadMs),
    shutdownMs: total((p) => p.shutdownMs),
    loadSeconds: total((p) => p.ingestion.indexedSeconds),
    graphSeconds: total((p) => p.ingestion.graphSeconds),
    latency: { http: latency('http'), engine: latency('engine') },
  };
}

// --from: the measured sizes of an earlier run's JSON, projected and tabled again (no server started).
const points: Point[] = args.from ? ((await Bun.file(args.from).json()) as { sizes: Point[] }).sizes : [];
const loads: LoadOnly[] = [];
if (!args.from) {
  try {
    for (const n of sizes) {
      const measured = await measureSize(n);
      if (measured.loadOnly) loads.push(measured);
      else points.push(measured);
    }
  } finally {
    await stub?.stop();
  }
}
// --load-only: the bulk-load rate alone (no search, restart or engine phases).
if (args['load-only']) {
  printTable(
    `Bulk load through HTTP (${bulkLabel}), free embeddings`,
    [
      'chunks',
      'items',
      'acked s',
      'items acked/s',
      'indexed s',
      'chunks/s',
      'graph s',
      'server cores (acks)',
      'server CPU µs/chunk',
      'main thread µs/chunk',
      'load avg',
    ],
    loads.map((p) => [
      fmtInt(p.chunks),
      fmtInt(p.items),
      p.ingestion.ackSeconds.toFixed(1),
      fmtInt(p.ingestion.acksPerSecond),
      p.ingestion.indexedSeconds.toFixed(1),
      fmtInt(p.ingestion.chunksIndexedPerSecond),
      p.ingestion.graphSeconds.toFixed(1),
      p.ingestion.serverCoresDuringAcks.toFixed(2),
      fmtInt((p.serverCpuSeconds / p.chunks) * 1e6),
      fmtInt((p.mainCpuSeconds / p.chunks) * 1e6),
      `${p.loadAverage.start}–${Math.max(...Object.values(p.loadAverage))}`,
    ]),
  );
  for (const p of problems) console.log(`  problem: ${p}`);
  if (args.json)
    await Bun.write(
      args.json,
      `${JSON.stringify({ part: 'scale-load', date: new Date().toISOString(), machine: machine(), bulk: bulkLabel, writers, sizes: loads, problems }, null, 2)}\n`,
    );
  process.exit(0);
}
const projections = PROJECT_TO.filter((n) => !points.some((p) => p.chunks >= n * 0.9)).map((n) => project(points, n));

// --- tables -------------------------------------------------------------------------------------

const mib = (b: number | undefined) => (b === undefined || !Number.isFinite(b) ? '-' : fmtInt(b / 2 ** 20));
const s1 = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? '-' : (ms / 1000).toFixed(1));
printTable(
  'Scale: one node, measured and projected (RSS in MiB; B/chunk over an empty server; times in s)',
  [
    'chunks',
    'kind',
    'RSS loaded',
    'B/chunk loaded',
    'B/chunk restarted',
    'snapshot MiB',
    'load s',
    'chunks/s',
    'graph s',
    'shutdown s',
    'restart s',
    'load avg',
  ],
  [
    ...points.map((p) => [
      fmtInt(p.chunks),
      'measured',
      mib(p.memory.rssLoaded),
      fmtInt(p.memory.bytesPerChunkLoaded),
      fmtInt(p.memory.bytesPerChunkAfterRestart),
      mib(p.disk.snapshot.total),
      p.ingestion.indexedSeconds.toFixed(1),
      fmtInt(p.ingestion.chunksIndexedPerSecond),
      p.ingestion.graphSeconds.toFixed(1),
      s1(p.shutdownMs),
      s1(p.restart.readyMs),
      `${p.loadAverage.start}–${Math.max(...Object.values(p.loadAverage))}`,
    ]),
    ...projections.map((p) => [
      fmtInt(p.chunks),
      'projected',
      mib(p.memory.rssLoaded),
      fmtInt(p.memory.bytesPerChunkLoaded),
      fmtInt(p.memory.bytesPerChunkAfterRestart),
      mib(p.snapshotBytes),
      s1((p.loadSeconds ?? NaN) * 1000),
      fmtInt(p.chunks / (p.loadSeconds ?? NaN)),
      s1((p.graphSeconds ?? NaN) * 1000),
      s1(p.shutdownMs),
      s1(p.restartReadyMs),
      '',
    ]),
  ],
);
printTable(
  'Restart: where the seconds go (ms; snapshot load and log replay from /ready `recovery`)',
  [
    'chunks',
    'to /ready',
    'runtime start',
    'snapshot load',
    'log replay',
    'other recovery',
    'models + ready',
    'records replayed',
    'first full-text',
    'first semantic',
  ],
  points.map((p) => [
    fmtInt(p.chunks),
    fmtInt(p.restart.readyMs),
    fmtInt(p.restart.split.runtimeStartMs),
    fmtInt(p.restart.split.snapshotLoadMs),
    fmtInt(p.restart.split.logReplayMs),
    fmtInt(p.restart.split.otherRecoveryMs),
    fmtInt(p.restart.split.modelsAndReadyMs),
    fmtInt(p.restart.recovery.records),
    fmtMs(p.restart.firstSearchMs['full-text']),
    fmtMs(p.restart.firstSearchMs.semantic),
  ]),
);
printTable(
  'Memory: where each byte of a chunk goes (engine alone, opened on the same files; bytes per chunk)',
  ['chunks', 'RSS growth', 'vector rows', 'HNSW graph', 'BM25 postings', 'rest', 'JS heap', 'f32 vector', 'server after restart'],
  points.map((p) => {
    const e = p.memory.engineAlone.perChunk;
    return [
      fmtInt(p.chunks),
      fmtInt(e.rss),
      fmtInt(e.vectorRows),
      fmtInt(e.hnswGraph),
      fmtInt(e.bm25Postings),
      fmtInt(e.rest),
      fmtInt(e.jsHeap),
      fmtInt(F32_VECTOR_BYTES),
      fmtInt(p.memory.bytesPerChunkAfterRestart),
    ];
  }),
);
printTable(
  `Search latency, top ${K}, p50 / p99 ms (HTTP: one connection, query vectors cached; engine: in process, query vectors precomputed)`,
  ['chunks', 'kind', ...MODES.flatMap((m) => [`HTTP ${m}`, `engine ${m}`]), 'recall@10'],
  [
    ...points.map((p) => [
      fmtInt(p.chunks),
      'measured',
      ...MODES.flatMap((m) => [
        `${fmtMs(p.latency.http[m].p50)} / ${fmtMs(p.latency.http[m].p99)}`,
        `${fmtMs(p.latency.engine[m].p50)} / ${fmtMs(p.latency.engine[m].p99)}`,
      ]),
      f3(p.recall10),
    ]),
    ...projections.map((p) => [
      fmtInt(p.chunks),
      'projected',
      ...MODES.flatMap((m) => [`${fmtMs(p.latency.http[m]!.p50)} / ${'-'}`, `${fmtMs(p.latency.engine[m]!.p50)} / ${'-'}`]),
      '-',
    ]),
  ],
);

const results = {
  part: 'scale',
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  machine: machine(),
  settings: {
    sizes,
    writers,
    searchSecondsPerMode: durationS,
    queries: queries.length,
    corpus: generated ? 'generated' : 'SciFact train (replicated, a tag per copy)',
    embedding: `OpenAI-compatible hashing stub (bench/snapshot/stub.ts, child process): ${HASH_MODEL}, ${HASH_DIMENSIONS}-d, not a neural model`,
    serverEnv: { ...env('(temporary)'), EMBEDDING_HTTP_URL: '(stub on 127.0.0.1)', LOG_LEVEL: 'warn' },
    projection: 'totals (memory, disk, seconds): the line through the two largest measured sizes; latency p50: a power law through them; p99 not projected',
  },
  sizes: points,
  projections,
  problems,
  phasesMs: phases,
  millis: Math.round(performance.now() - started),
};
for (const p of problems) console.log(`  problem: ${p}`);
console.log(`\nScale benchmark done in ${(results.millis / 1000).toFixed(1)} s`);
if (args.json) await Bun.write(args.json, `${JSON.stringify(results, null, 2)}\n`);
// Leftover handles (autocannon's timers, keep-alive sockets) can keep the process alive.
process.exit(0);
