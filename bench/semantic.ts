// Semantic search benchmark of the engine, on SciFact:
//   1. quality   nDCG@10 / Recall@100 of full-text, semantic and hybrid search for every available
//                embedding model (USE-Lite always; transformers.js models under ../shared/models),
//                through the engine library in process; ingest rate and CPU use with 2 workers;
//   2. vectors   the semantic leg alone (VectorIndex) at ~50k chunk vectors: HNSW build rate,
//                search latency and recall@10 against exact search, f32 and i8, and the size at
//                which HNSW overtakes exact search;
//   3. http      search latency through the real server while idle and during a bulk load;
//   4. memory    bytes per chunk of vectors, postings, text and metadata for each type.
//
//   bun bench/semantic.ts [--quick] [--json out.json] [--models use-lite,Xenova/bge-small-en-v1.5]
//                         [--parts quality,vectors,http,memory] [--fresh]
//
// Embedding the corpus takes minutes, so each model's engine data directory is kept under
// .bench-out/semantic/<model>-<chunk size>-<overlap>[-quick]/ and reopened on later runs: the
// write-ahead log holds the vectors, so replay restores them without embedding again (--fresh
// rebuilds it). The SciFact files are read from ../shared/eval (never copied here).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { EmbeddingSpec } from '../engine/embedding/provider';
import type { Engine } from '../engine';
import { openEngine } from '../snapshots';
import { MetadataIndex, type Metadata } from '../engine/filter/metadata';
import { Compute } from '../engine/ingest/compute';
import { KnowledgeBase, type ChunkHit } from '../engine/kb/knowledge-base';
import type { EmbeddingConfig, IndexedChunk, KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from '../engine/records';
import { DEFAULT_EXACT_THRESHOLD, VectorIndex, type Quantization } from '../engine/vector/vector-index';
import type { Scored } from '../engine/topk';
import { decodePayload, scanFrames } from '../engine';
import { loadConfig } from '../src/config';
import { configForType, resolveModel, type KbType } from '../src/kb-types';
import { mulberry32, printTable, spread, summarize, timeEach, type Latency } from './common';
import { evaluate, loadSciFact, rankDocuments, scifactDir, type CorpusDoc, type Quality, type Query, type SciFact } from './eval-data';
import { followOutput } from '../test/helpers/output';

const REPO_ROOT = resolve(import.meta.dir, '..');
const OUT_ROOT = join(REPO_ROOT, '.bench-out', 'semantic');
const MODELS_DIR = process.env.BENCH_MODELS_DIR ?? resolve(REPO_ROOT, '..', 'shared', 'models');
const ORG = 'org_bench';
const CORES = cpus().length;
const DOCUMENT_WORKERS = 2;

// --- options ----------------------------------------------------------------------------------

const PARTS = ['quality', 'vectors', 'http', 'memory'] as const;
type Part = (typeof PARTS)[number];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    models: { type: 'string' },
    parts: { type: 'string' },
    fresh: { type: 'boolean', default: false },
  },
  strict: true,
});
const quick = args.quick;
const parts = new Set<Part>(
  (args.parts ?? PARTS.join(','))
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      if (!(PARTS as readonly string[]).includes(p)) throw new Error(`unknown part "${p}" (use ${PARTS.join(', ')})`);
      return p as Part;
    }),
);

const SIZES = {
  qualityQueries: quick ? 100 : Infinity,
  otherDocs: quick ? 1000 : Infinity,
  vectorTarget: quick ? 10_000 : 50_000,
  curve: quick ? [250, 500, 1_000, 2_000, 5_000, 10_000] : [250, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000],
  curveQueries: quick ? 100 : 200,
  latencyPasses: quick ? 2 : 3,
  efSweep: quick ? [128, 256] : [96, 128, 192, 256, 384],
  httpSeed: quick ? 80 : 500,
  httpBulk: quick ? 200 : 2000,
  httpSearches: quick ? 50 : 200,
  httpWriters: 4,
};
const RECALL_TARGET = 0.98;
const P50_TARGET_MS = 1;
// Noise added to each replicated vector before renormalizing: norm ≈ 0.2, so a copy keeps a cosine
// of about 0.98 with its original (near duplicates, as re-uploaded or overlapping chunks are).
const NOISE_NORM = 0.2;

// --- small helpers ----------------------------------------------------------------------------

const ms = (x: number) => (!Number.isFinite(x) ? '-' : x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x < 1000 ? x.toFixed(1) : x.toFixed(0));
const f4 = (x: number) => x.toFixed(4);
const pct = (x: number) => `${(100 * x).toFixed(0)}%`;
const int = (x: number) => Math.round(x).toLocaleString('en-US');
const secs = (millis: number) => `${(millis / 1000).toFixed(1)} s`;

const phases: Record<string, number> = {};
async function phase<T>(name: string, run: () => T | Promise<T>): Promise<T> {
  console.log(`\n== ${name}   (load average ${loadavg()[0]!.toFixed(2)})`);
  const t = performance.now();
  const value = await run();
  phases[name] = Math.round(performance.now() - t);
  console.log(`   (${secs(phases[name])}; load average now ${loadavg()[0]!.toFixed(2)})`);
  return value;
}

/** Standard normal samples (Box–Muller) from a uniform PRNG. */
function gaussian(random: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

function unit(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
}

async function heapNow(): Promise<{ heap: number; rss: number }> {
  await Bun.sleep(0);
  Bun.gc(true);
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

// CPU time: Bun's process.cpuUsage() is getrusage(RUSAGE_SELF), which covers every thread of the
// process (worker threads included; checked against /proc/self/stat, which is read here as well).
const CLK_TCK = (() => {
  const out = Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim();
  return Number(out) > 0 ? Number(out) : 100;
})();

function procCpuSeconds(pid: number | 'self'): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** Busy and total jiffies of the whole machine (every process), from /proc/stat. */
function systemJiffies(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (line[3] ?? 0) + (line[4] ?? 0);
    const total = line.reduce((s, x) => s + x, 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: NaN, total: NaN };
  }
}

/** CPU seconds of each thread of this process (Linux: /proc/self/task), by thread id. */
function threadCpuSeconds(): Map<string, { name: string; seconds: number }> {
  const out = new Map<string, { name: string; seconds: number }>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(tid, { name, seconds: (Number(fields[11]) + Number(fields[12])) / CLK_TCK });
      } catch {}
    }
  } catch {}
  return out;
}

class CpuMeter {
  private readonly threads0 = threadCpuSeconds();
  private readonly t0 = performance.now();
  private readonly usage0 = process.cpuUsage();
  private readonly stat0 = procCpuSeconds('self');
  private readonly sys0 = systemJiffies();
  private last = { t: this.t0, stat: this.stat0 };
  /** Share of all cores used by this process in each ~1 s window. */
  readonly windows: number[] = [];

  sample(): void {
    const t = performance.now();
    const stat = procCpuSeconds('self');
    if (t - this.last.t >= 500) {
      this.windows.push((stat - this.last.stat) / ((t - this.last.t) / 1000) / CORES);
      this.last = { t, stat };
    }
  }

  finish() {
    const wall = (performance.now() - this.t0) / 1000;
    const usage = process.cpuUsage(this.usage0);
    const cpuUsageSeconds = (usage.user + usage.system) / 1e6;
    const procStatSeconds = procCpuSeconds('self') - this.stat0;
    const sys = systemJiffies();
    const sorted = [...this.windows].sort((a, b) => a - b);
    const threads = [...threadCpuSeconds()]
      .map(([tid, t]) => ({ tid, name: t.name, coreShare: (t.seconds - (this.threads0.get(tid)?.seconds ?? 0)) / wall }))
      .sort((a, b) => b.coreShare - a.coreShare)
      .slice(0, 5);
    return {
      /** The busiest threads, each as a share of one core (a busy worker thread is near 1). */
      threads,
      wallSeconds: wall,
      cpuUsageSeconds,
      procStatSeconds,
      /** process CPU seconds / wall seconds / cores. */
      processShare: cpuUsageSeconds / wall / CORES,
      procStatShare: procStatSeconds / wall / CORES,
      /** Whole machine, every process: shows contention from anything else running. */
      machineShare: (sys.busy - this.sys0.busy) / Math.max(1, sys.total - this.sys0.total),
      windowMedianShare: sorted[Math.floor(sorted.length / 2)] ?? NaN,
      windowP10Share: sorted[Math.floor(sorted.length / 10)] ?? NaN,
    };
  }
}

// --- models -----------------------------------------------------------------------------------

interface ModelChoice {
  /** Short name used for directories and tables. */
  name: string;
  spec: EmbeddingSpec;
}

const baseConfig = loadConfig();
const serverConfig = { ...baseConfig, embedding: { ...baseConfig.embedding, modelDir: MODELS_DIR } };

/** Transformers.js sentence-transformers under MODELS_DIR: `<org>/<name>/onnx/model*.onnx` + config.json. */
function discoverModels(): { found: string[]; notes: string[] } {
  const notes: string[] = [];
  if (!existsSync(MODELS_DIR)) return { found: [], notes: [`${MODELS_DIR} does not exist: no transformers.js models to compare, USE-Lite only`] };
  const found: string[] = [];
  for (const org of readdirSync(MODELS_DIR)) {
    if (!statSync(join(MODELS_DIR, org)).isDirectory()) continue;
    for (const name of readdirSync(join(MODELS_DIR, org))) {
      const root = join(MODELS_DIR, org, name);
      if (!statSync(root).isDirectory()) continue;
      const onnx = existsSync(join(root, 'onnx')) ? readdirSync(join(root, 'onnx')).filter((f) => /^model.*\.onnx$/.test(f)) : [];
      if (!existsSync(join(root, 'config.json')) || onnx.length === 0) continue;
      if (!onnx.includes('model.onnx') && !onnx.includes('model_quantized.onnx')) {
        notes.push(`${org}/${name}: only ${onnx.join(', ')} (the transformers provider loads onnx/model.onnx or model_quantized.onnx); skipped`);
        continue;
      }
      found.push(`${org}/${name}`);
    }
  }
  if (found.length === 0) notes.push(`no transformers.js models under ${MODELS_DIR}: USE-Lite only`);
  return { found, notes };
}

function chooseModels(): { models: ModelChoice[]; notes: string[] } {
  const { found, notes } = discoverModels();
  const wanted = args.models ? args.models.split(',').map((m) => m.trim()).filter(Boolean) : ['use-lite', ...found];
  const models: ModelChoice[] = [];
  for (const w of wanted) {
    const id = w.replace(/^transformers:/, '');
    if (id === 'use-lite') {
      models.push({ name: 'use-lite', spec: resolveModel('use-lite', serverConfig) });
      continue;
    }
    try {
      models.push({ name: id.replace(/\//g, '__'), spec: resolveModel(`transformers:${id}`, serverConfig) });
    } catch (err) {
      notes.push(`${id}: ${err instanceof Error ? err.message : String(err)}; skipped`);
    }
  }
  return { models, notes };
}

/** The configuration the server would record for a TEXT_HIGH_QUALITY knowledge base with this model. */
function kbConfig(spec: EmbeddingSpec, quantization: Quantization, type: KbType = 'TEXT_HIGH_QUALITY'): Omit<KnowledgeBaseConfig, 'id' | 'createdAt'> {
  const embedding = { ...spec, metric: 'cosine', quantization } as EmbeddingConfig;
  return configForType(type, serverConfig, { TEXT_COST_EFFECTIVE: embedding, TEXT_HIGH_QUALITY: embedding, TEXT_AND_MEDIA_HIGH_QUALITY: embedding });
}

function computeSettings() {
  return { modelDir: MODELS_DIR, allowRemoteModels: false, threads: serverConfig.embedding.threads };
}

// --- data -------------------------------------------------------------------------------------

interface Workload {
  queries: Query[];
  corpus: CorpusDoc[];
}

/** All judged queries and the whole corpus, or (--quick) a spread sample of queries and a corpus
 * holding their relevant documents plus an even spread of the others. */
function workload(data: SciFact): Workload {
  const judged = data.queries.filter((q) => data.relevant.has(q.id));
  if (!quick) return { queries: judged, corpus: data.corpus };
  const queries = spread(judged, SIZES.qualityQueries);
  const needed = new Set(queries.flatMap((q) => [...data.relevant.get(q.id)!]));
  const others = spread(
    data.corpus.filter((d) => !needed.has(d.id)),
    SIZES.otherDocs,
  );
  const keep = new Set([...needed, ...others.map((d) => d.id)]);
  return { queries, corpus: data.corpus.filter((d) => keep.has(d.id)) };
}

// --- the write-ahead log, read back -----------------------------------------------------------

interface WalItem {
  id: string;
  version: number;
  text: string;
  metadata: Metadata;
  chunks?: IndexedChunk[];
  vectors?: Float32Array[];
}

/** Read a closed engine data directory's log without opening it for writing. */
function readWal(dataDir: string): { kb: KnowledgeBaseRecord; items: WalItem[] } {
  const dir = join(dataDir, 'wal');
  const kbs = new Map<string, KnowledgeBaseRecord>();
  const items = new Map<string, WalItem>();
  for (const name of readdirSync(dir).filter((n) => /^wal-\d{20}\.log$/.test(n)).sort()) {
    const scan = scanFrames(new Uint8Array(readFileSync(join(dir, name))));
    for (const frame of scan.frames) {
      const { record, attachment } = decodePayload<LogRecord>(frame.payload);
      switch (record.t) {
        case 'kb.create':
          kbs.set(record.kb.id, record.kb);
          break;
        case 'content.put': {
          const prev = items.get(record.id);
          items.set(record.id, { id: record.id, version: record.version, text: record.text, metadata: record.metadata, ...(prev && prev.version === record.version ? prev : {}) });
          break;
        }
        case 'content.delete':
          items.delete(record.id);
          break;
        case 'content.indexed': {
          const item = items.get(record.id);
          if (!item || item.version !== record.version) break;
          const kb = kbs.get(record.kbId)!;
          const d = kb.config.embedding.dimensions;
          if (kb.config.embedding.quantization !== 'f32') throw new Error('readWal expects f32 vectors');
          item.chunks = record.chunks;
          item.vectors = record.chunks.map((_, i) => new Float32Array(attachment.slice(i * d * 4, (i + 1) * d * 4).buffer));
          break;
        }
      }
    }
  }
  if (kbs.size !== 1) throw new Error(`expected one knowledge base in ${dataDir}, found ${kbs.size}`);
  return { kb: [...kbs.values()][0]!, items: [...items.values()].filter((i) => i.chunks) };
}

// --- 1. quality -------------------------------------------------------------------------------

interface IngestStats {
  documents: number;
  chunks: number;
  ackSeconds: number;
  seconds: number;
  documentsPerSecond: number;
  chunksPerSecond: number;
  failed: number;
  cpu: ReturnType<CpuMeter['finish']>;
  measuredAt: string;
}

interface Prepared {
  model: ModelChoice;
  dir: string;
  engine: Engine;
  kbId: string;
  documents: number;
  chunks: number;
  ingest?: IngestStats;
  ingestFromCache: boolean;
  reopened?: Engine['recovery'];
  graphBuildMs?: number;
}

function modelDir(model: ModelChoice, chunking: { size: number; overlap: number }): string {
  return join(OUT_ROOT, `${model.name}-${chunking.size}-${chunking.overlap}${quick ? '-quick' : ''}`);
}

const engineMessages: string[] = [];
const engineLog = (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => {
  if (level === 'info') return;
  const line = `[engine ${level}] ${message} ${details ? JSON.stringify(details) : ''}`;
  engineMessages.push(line);
  console.log(`  ${line}`);
};

/** Directories already emptied by --fresh in this run (later parts reuse what the first one built). */
const freshened = new Set<string>();

/** Open (or build) the engine data directory of a model holding the whole work corpus. */
async function prepare(model: ModelChoice, work: Workload, options: { graph?: boolean } = {}): Promise<Prepared> {
  const config = kbConfig(model.spec, 'f32');
  const dir = modelDir(model, config.chunking);
  if (args.fresh && !freshened.has(dir)) {
    freshened.add(dir);
    rmSync(dir, { recursive: true, force: true });
  }
  const existed = existsSync(join(dir, 'wal'));
  mkdirSync(dir, { recursive: true });
  const open = async () => (await openEngine({ dataDir: dir, compute: { documentWorkers: DOCUMENT_WORKERS, settings: computeSettings() }, log: engineLog })).engine;
  let engine: Engine;
  try {
    engine = await open();
  } catch (err) {
    // A log this engine version cannot replay (e.g. written before a record format change).
    console.log(`  cannot reopen ${dir} (${err instanceof Error ? err.message : String(err)}): rebuilding it`);
    engineMessages.push(`reopening ${dir} failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    engine = await open();
  }
  const kbName = `scifact ${quick ? 'quick' : 'full'} ${model.name}`;
  let kb = engine.listKnowledgeBases(ORG).find((k) => k.name === kbName);
  const sameConfig =
    kb &&
    JSON.stringify({ ...kb.config, id: undefined, createdAt: undefined }) === JSON.stringify({ ...config, id: undefined, createdAt: undefined });
  if (kb && !sameConfig) {
    console.log(`  cached knowledge base in ${dir} has another configuration: rebuilding`);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    engine = await open();
    kb = undefined;
  }
  const reopened = existed && kb ? engine.recovery : undefined;
  if (reopened) console.log(`  reopened ${dir}: replayed ${int(reopened.records)} log records (${int(reopened.chunks)} chunks) in ${int(reopened.millis)} ms, ${reopened.requeued} items re-queued`);
  if (!kb) kb = await engine.createKnowledgeBase(ORG, { name: kbName, description: 'bench/semantic.ts', type: config.type, config });
  const kbId = kb.id;

  const have = new Set(engine.listContents(ORG, kbId, 0, Number.MAX_SAFE_INTEGER)!.items.map((i) => String(i.current.metadata.sciId)));
  const wanted = new Set(work.corpus.map((d) => d.id));
  const extra = [...have].filter((id) => !wanted.has(id));
  if (extra.length > 0) throw new Error(`${dir} holds ${extra.length} documents outside the corpus; run with --fresh`);
  const missing = work.corpus.filter((d) => !have.has(d.id));

  let ingest: IngestStats | undefined;
  let ingestFromCache = false;
  const statsFile = join(dir, 'ingest.json');
  if (missing.length > 0 || engine.stats().queueDepth > 0) {
    console.log(`  embedding ${missing.length} documents (+${engine.recovery.requeued} re-queued) with ${model.spec.model}, ${DOCUMENT_WORKERS} document workers...`);
    const chunks0 = engine.stats().chunks;
    const meter = new CpuMeter();
    const t0 = performance.now();
    for (let i = 0; i < missing.length; i += 256) {
      await Promise.all(missing.slice(i, i + 256).map((d) => engine.addContent(ORG, kbId, { text: d.text, metadata: { sciId: d.id } })));
    }
    const ackSeconds = (performance.now() - t0) / 1000;
    let lastReport = performance.now();
    while (engine.stats().queueDepth > 0) {
      await Bun.sleep(200);
      meter.sample();
      if (performance.now() - lastReport > 30_000) {
        lastReport = performance.now();
        const s = engine.stats();
        console.log(`    ${secs(performance.now() - t0)}: ${int(s.chunks - chunks0)} chunks indexed, queue ${s.queueDepth}`);
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = meter.finish();
    const chunks = engine.stats().chunks - chunks0;
    const documents = missing.length + engine.recovery.requeued;
    const failed = engine.listContents(ORG, kbId, 0, Number.MAX_SAFE_INTEGER)!.items.filter((i) => i.status === 'failed').length;
    ingest = { documents, chunks, ackSeconds, seconds, documentsPerSecond: documents / seconds, chunksPerSecond: chunks / seconds, failed, cpu, measuredAt: new Date().toISOString() };
    // Only a build from empty describes the corpus; a resumed one is reported but not kept.
    if (missing.length === work.corpus.length) await Bun.write(statsFile, JSON.stringify(ingest, null, 2));
  } else if (existsSync(statsFile)) {
    ingest = JSON.parse(readFileSync(statsFile, 'utf8')) as IngestStats;
    ingestFromCache = true;
  }

  // Searches should see the finished HNSW graph (the engine builds it in small slices otherwise).
  let graphBuildMs: number | undefined;
  const vectors = engine.knowledgeBase(kbId)!.vectors;
  if (options.graph !== false && vectors && vectors.graphPending > 0) {
    const t = performance.now();
    while (!vectors.buildStep(200)) await Bun.sleep(0);
    graphBuildMs = performance.now() - t;
  }
  const stats = engine.knowledgeBase(kbId)!;
  return { model, dir, engine, kbId, documents: stats.contentCount, chunks: stats.chunkCount, ingest, ingestFromCache, reopened, graphBuildMs };
}

/** Query vectors from the model's query lane (cached beside the engine data). */
async function queryVectors(model: ModelChoice, dir: string, queries: readonly Query[]): Promise<{ vectors: Map<string, Float32Array>; msPerQuery?: number }> {
  const file = join(dir, 'query-vectors.json');
  if (existsSync(file)) {
    const cached = JSON.parse(readFileSync(file, 'utf8')) as Record<string, number[]>;
    if (queries.every((q) => cached[q.id])) return { vectors: new Map(queries.map((q) => [q.id, Float32Array.from(cached[q.id]!)])) };
  }
  const compute = new Compute({ documentWorkers: DOCUMENT_WORKERS, queryWorkers: 1, settings: computeSettings() });
  const t = performance.now();
  const batches: Query[][] = [];
  for (let i = 0; i < queries.length; i += 32) batches.push(queries.slice(i, i + 32));
  const results = await Promise.all(
    batches.map((b) => compute.documents.run<Float32Array[]>({ type: 'embed', texts: b.map((q) => q.text), kind: 'query', embedding: model.spec })),
  );
  const msPerQuery = (performance.now() - t) / queries.length;
  await compute.close();
  const vectors = new Map<string, Float32Array>();
  batches.forEach((b, i) => b.forEach((q, j) => vectors.set(q.id, results[i]![j]!)));
  await Bun.write(file, JSON.stringify(Object.fromEntries([...vectors].map(([id, v]) => [id, Array.from(v)]))));
  return { vectors, msPerQuery };
}

interface Variant {
  name: string;
  run: (q: Query) => Promise<ChunkHit[]> | ChunkHit[];
}

async function qualityForModel(data: SciFact, work: Workload, model: ModelChoice) {
  const prepared = await prepare(model, work);
  const { engine, kbId } = prepared;
  const kb = engine.knowledgeBase(kbId)!;
  const vectors = kb.vectors!;
  console.log(
    `  ${model.spec.model}: ${int(prepared.documents)} documents → ${int(prepared.chunks)} chunks (chunking ${kb.record.config.chunking.size}/${kb.record.config.chunking.overlap}), ` +
      `semantic leg ${vectors.graphReady ? 'HNSW' : 'exact'} (${int(vectors.size)} vectors, exact below ${DEFAULT_EXACT_THRESHOLD})` +
      (prepared.graphBuildMs !== undefined ? `, HNSW graph finished in ${secs(prepared.graphBuildMs)}` : ''),
  );
  const ing = prepared.ingest;
  if (ing) {
    console.log(
      `  ingest${prepared.ingestFromCache ? ` (measured ${ing.measuredAt} when the cache was built)` : ''}: ${int(ing.documents)} documents, ${int(ing.chunks)} chunks in ${ing.seconds.toFixed(1)} s ` +
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
    if (ing.cpu.threads) console.log(`  busiest threads (share of one core): ${ing.cpu.threads.map((t) => `${t.name}#${t.tid} ${pct(t.coreShare)}`).join(', ')}`);
  }

  // The engine's own query embedding, timed once per query (the LRU cache answers later calls).
  const tEmbed = performance.now();
  for (const q of work.queries) await engine.searchSemantic(ORG, kbId, { query: q.text, limit: 1 });
  const engineEmbedMs = (performance.now() - tEmbed) / work.queries.length;

  const { vectors: qv, msPerQuery: batchEmbedMs } = await queryVectors(model, prepared.dir, work.queries);

  // i8 copy of the same vectors, searched exactly (what TEXT_COST_EFFECTIVE would store). The log is
  // read directly: nothing is being written to it now.
  const i8 = new VectorIndex({ dimensions: vectors.dimensions, quantization: 'i8', connectivity: 16, expansionAdd: 128, expansionSearch: 64, exactThreshold: Infinity });
  const i8Rows: string[] = [];
  for (const item of readWal(prepared.dir).items) {
    for (const v of item.vectors!) {
      i8.add(i8Rows.length, i8.quantize(v));
      i8Rows.push(String(item.metadata.sciId));
    }
  }
  const search = engine;
  const skb = kb;

  const req = (q: Query) => ({ query: q.text, limit: 100 });
  const hybrid = (w: number, fusion: 'weighted' | 'rrf' = 'weighted'): Variant => ({
    name: `hybrid ${fusion === 'rrf' ? 'rrf' : 'weighted'} w=${w}`,
    run: async (q) => (await search.searchHybrid(ORG, kbId, { ...req(q), semanticWeight: w, fusion }))!,
  });
  const variants: Variant[] = [
    { name: 'full-text (BM25)', run: (q) => search.searchFullText(ORG, kbId, req(q))! },
    { name: `semantic (engine: ${skb.vectors!.graphReady ? 'HNSW' : 'exact'})`, run: async (q) => (await search.searchSemantic(ORG, kbId, req(q)))! },
    hybrid(0),
    hybrid(0.3),
    hybrid(0.5),
    hybrid(0.7),
    hybrid(1),
    hybrid(0.5, 'rrf'),
    { name: 'semantic, exact f32 (reference)', run: (q) => skb.hits(skb.vectors!.exact(qv.get(q.id)!, 100)) },
  ];
  const rows: { name: string; quality: Quality; msPerQuery: number }[] = [];
  const toIds = (hits: readonly ChunkHit[]) => rankDocuments(hits, (h) => String(h.metadata.sciId)).map((d) => d.id);
  for (const v of variants) {
    const rankings = new Map<string, string[]>();
    const t = performance.now();
    for (const q of work.queries) rankings.set(q.id, toIds(await v.run(q)));
    const msPerQuery = (performance.now() - t) / work.queries.length;
    rows.push({ name: v.name, quality: evaluate(data, (q) => rankings.get(q.id)!, work.queries), msPerQuery });
  }
  {
    const rankings = new Map<string, string[]>();
    const t = performance.now();
    for (const q of work.queries) {
      const hits = i8.exact(qv.get(q.id)!, 100).map((s) => ({ score: s.score, id: i8Rows[s.doc]! }));
      rankings.set(q.id, rankDocuments(hits, (h) => h.id).map((d) => d.id));
    }
    rows.push({ name: 'semantic, exact i8 (TEXT_COST_EFFECTIVE storage)', quality: evaluate(data, (q) => rankings.get(q.id)!, work.queries), msPerQuery: (performance.now() - t) / work.queries.length });
  }
  await search.close();

  printTable(
    `Quality of ${model.spec.model} on SciFact train, ${rows[0]!.quality.queries} queries, ${int(prepared.documents)} documents${quick ? ' (--quick sample)' : ''}; limit 100 chunks, best chunk per document`,
    ['search', 'nDCG@10', 'Recall@100', 'ms/query'],
    rows.map((r) => [r.name, f4(r.quality.ndcg10), f4(r.quality.recall100), ms(r.msPerQuery)]),
  );
  console.log(
    `  ms/query: in-process engine calls, query vector already cached (engine query embedding took ${ms(engineEmbedMs)} ms/query, one at a time` +
      (batchEmbedMs !== undefined ? `; batched over ${DOCUMENT_WORKERS} workers ${ms(batchEmbedMs)} ms/query` : '') +
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

// --- 2. the vector index at ~50k ----------------------------------------------------------------

interface BaseVectors {
  vectors: Float32Array[];
  queries: Float32Array[];
}

/** USE-Lite chunk vectors of the corpus and the query vectors, from the quality part's cache. */
async function useLiteVectors(work: Workload): Promise<BaseVectors> {
  const model: ModelChoice = { name: 'use-lite', spec: resolveModel('use-lite', serverConfig) };
  const prepared = await prepare(model, work, { graph: false }); // reopens the cache (or builds it)
  await prepared.engine.close();
  const { vectors: qv } = await queryVectors(model, prepared.dir, work.queries);
  const wal = readWal(prepared.dir);
  return { vectors: wal.items.flatMap((i) => i.vectors!), queries: work.queries.map((q) => qv.get(q.id)!) };
}

/** The base vectors first, then noisy copies of them (renormalized) up to `total`. */
function replicateVectors(base: readonly Float32Array[], total: number): Float32Array[] {
  const normal = gaussian(mulberry32(42));
  const d = base[0]!.length;
  const sigma = NOISE_NORM / Math.sqrt(d);
  const out: Float32Array[] = [];
  for (let i = 0; i < total; i++) {
    const src = base[i % base.length]!;
    if (i < base.length) {
      out.push(src);
      continue;
    }
    const v = new Float32Array(d);
    for (let j = 0; j < d; j++) v[j] = src[j]! + sigma * normal();
    out.push(unit(v));
  }
  return out;
}

function recallAt10(approx: readonly { doc: number }[], exact: readonly { doc: number }[]): number {
  const truth = new Set(exact.map((h) => h.doc));
  return truth.size === 0 ? 1 : approx.filter((h) => truth.has(h.doc)).length / truth.size;
}


interface IndexPoint {
  size: number;
  exact: Latency;
  hnsw: Latency;
  recall10: number;
  buildMs: number;
}

function newIndex(quantization: Quantization, expansionSearch = serverConfig.hnsw.expansionSearch, exactThreshold?: number): VectorIndex {
  return new VectorIndex({
    dimensions: 512,
    quantization,
    connectivity: serverConfig.hnsw.connectivity,
    expansionAdd: serverConfig.hnsw.expansionAdd,
    expansionSearch,
    exactThreshold,
  });
}

/** Add vectors [from, to) and finish the graph; returns the milliseconds the graph took. */
function grow(index: VectorIndex, vectors: readonly Float32Array[], from: number, to: number): { addMs: number; graphMs: number } {
  const t0 = performance.now();
  for (let d = from; d < to; d++) index.add(d, index.quantize(vectors[d]!));
  const t1 = performance.now();
  while (!index.buildStep(1000, 256));
  return { addMs: t1 - t0, graphMs: performance.now() - t1 };
}

function measurePoint(index: VectorIndex, queries: readonly Float32Array[], passes: number, exactQueries: readonly Float32Array[], groundTruth?: Scored[][]) {
  if (!index.graphReady) throw new Error('graph not ready');
  timeEach(queries.slice(0, 20), 1, (q) => index.search(q, 10)); // warm-up
  const truth = groundTruth ?? queries.map((q) => index.exact(q, 10));
  const recall = queries.reduce((s, q, i) => s + recallAt10(index.search(q, 10), truth[i]!), 0) / queries.length;
  const hnsw = summarize(timeEach(queries, passes, (q) => index.search(q, 10)));
  const exact = summarize(timeEach(exactQueries, 1, (q) => index.exact(q, 10)));
  return { recall10: recall, hnsw, exact, truth };
}

async function vectorPart(work: Workload) {
  const base = await useLiteVectors(work);
  const target = SIZES.vectorTarget;
  const all = replicateVectors(base.vectors, target);
  console.log(
    `  ${int(base.vectors.length)} USE-Lite chunk vectors (512-d) of the ${quick ? 'quick ' : ''}corpus replicated with Gaussian noise (norm ${NOISE_NORM}) to ${int(target)}; ` +
      `${base.queries.length} SciFact query vectors; HNSW M=${serverConfig.hnsw.connectivity}, efConstruction=${serverConfig.hnsw.expansionAdd}, efSearch=${serverConfig.hnsw.expansionSearch}`,
  );
  const curveQueries = spread(base.queries, SIZES.curveQueries);
  const out: Record<string, unknown> = { baseVectors: base.vectors.length, target, queries: base.queries.length, noiseNorm: NOISE_NORM };
  for (const quantization of ['f32', 'i8'] as const) {
    // One index grown through every size (graph from the first vector, so HNSW answers at each size).
    const index = newIndex(quantization, undefined, 1);
    const curve: IndexPoint[] = [];
    let built = 0;
    let totalGraphMs = 0;
    let totalAddMs = 0;
    for (const size of SIZES.curve.filter((s) => s <= target)) {
      const { addMs, graphMs } = grow(index, all, built, size);
      totalGraphMs += graphMs;
      totalAddMs += addMs;
      built = size;
      const point = measurePoint(index, curveQueries, 2, curveQueries);
      curve.push({ size, exact: point.exact, hnsw: point.hnsw, recall10: point.recall10, buildMs: graphMs });
    }
    // The full target: every query, more passes.
    const full = measurePoint(index, base.queries, SIZES.latencyPasses, spread(base.queries, 300));
    printTable(
      `VectorIndex ${quantization}, ${int(target)} vectors: search(q, 10) through HNSW vs exact(q, 10), ${base.queries.length} queries × ${SIZES.latencyPasses} passes, ms`,
      ['', 'p50', 'p95', 'p99', 'mean', 'recall@10'],
      [
        ['HNSW search (re-scored)', ms(full.hnsw.p50), ms(full.hnsw.p95), ms(full.hnsw.p99), ms(full.hnsw.mean), f4(full.recall10)],
        ['exact (300 queries)', ms(full.exact.p50), ms(full.exact.p95), ms(full.exact.p99), ms(full.exact.mean), '1'],
      ],
    );
    console.log(
      `  graph build: ${secs(totalGraphMs)} for ${int(target)} vectors = ${int(target / (totalGraphMs / 1000))} vectors/s ` +
        `(buildStep, batches of 256, USearch threads); flat adds ${ms(totalAddMs)} ms; memoryBytes ${(index.memoryBytes() / 2 ** 20).toFixed(1)} MiB`,
    );
    console.log(
      `  targets: p50 ≤ ${P50_TARGET_MS} ms ${full.hnsw.p50 <= P50_TARGET_MS ? 'met' : 'MISSED'}, recall@10 ≥ ${RECALL_TARGET} ${full.recall10 >= RECALL_TARGET ? 'met' : 'MISSED'}`,
    );
    printTable(
      `VectorIndex ${quantization} by size (${curveQueries.length} queries; HNSW × 2 passes, exact × 1), ms`,
      ['vectors', 'exact p50', 'exact p99', 'HNSW p50', 'HNSW p99', 'recall@10', 'graph build ms', 'faster'],
      curve.map((p) => [int(p.size), ms(p.exact.p50), ms(p.exact.p99), ms(p.hnsw.p50), ms(p.hnsw.p99), f4(p.recall10), int(p.buildMs), p.hnsw.p50 < p.exact.p50 ? 'HNSW' : 'exact']),
    );
    const firstFaster = curve.findIndex((p, i) => curve.slice(i).every((q) => q.hnsw.p50 < q.exact.p50));
    const crossover =
      firstFaster < 0 ? `exact stays faster up to ${int(curve[curve.length - 1]!.size)}` : firstFaster === 0 ? `HNSW is already faster at ${int(curve[0]!.size)}` : `between ${int(curve[firstFaster - 1]!.size)} and ${int(curve[firstFaster]!.size)}`;
    // Suggest the first measured size from which HNSW is faster and still meets the recall target.
    const good = curve.findIndex((p, i) => curve.slice(i).every((q) => q.hnsw.p50 < q.exact.p50) && p.recall10 >= RECALL_TARGET);
    const suggested = good < 0 ? undefined : curve[good]!.size;
    console.log(
      `  crossover (HNSW p50 below exact p50 from then on): ${crossover}; DEFAULT_EXACT_THRESHOLD is ${DEFAULT_EXACT_THRESHOLD}` +
        (suggested !== undefined ? `; smallest measured size where HNSW is faster with recall@10 ≥ ${RECALL_TARGET}: ${int(suggested)}` : ''),
    );

    // Larger efSearch, when the default misses the recall target.
    const sweep: { expansionSearch: number; recall10: number; hnsw: Latency; graphMs: number }[] = [];
    if (full.recall10 < RECALL_TARGET) {
      for (const ef of SIZES.efSweep.filter((e) => e > serverConfig.hnsw.expansionSearch)) {
        const idx = newIndex(quantization, ef);
        const { graphMs } = grow(idx, all, 0, target);
        const point = measurePoint(idx, base.queries, SIZES.latencyPasses, [], full.truth);
        sweep.push({ expansionSearch: ef, recall10: point.recall10, hnsw: point.hnsw, graphMs });
        console.log(`    efSearch ${ef}: recall@10 ${f4(point.recall10)}, p50 ${ms(point.hnsw.p50)} ms, p99 ${ms(point.hnsw.p99)} ms`);
        if (point.recall10 >= RECALL_TARGET) break;
      }
      printTable(
        `efSearch sweep, ${quantization}, ${int(target)} vectors (each a new index)`,
        ['efSearch', 'recall@10', 'p50', 'p95', 'p99', 'meets both', 'graph build s'],
        [
          [serverConfig.hnsw.expansionSearch, f4(full.recall10), ms(full.hnsw.p50), ms(full.hnsw.p95), ms(full.hnsw.p99), 'no', (totalGraphMs / 1000).toFixed(1)],
          ...sweep.map((s) => [s.expansionSearch, f4(s.recall10), ms(s.hnsw.p50), ms(s.hnsw.p95), ms(s.hnsw.p99), s.recall10 >= RECALL_TARGET && s.hnsw.p50 <= P50_TARGET_MS ? 'yes' : 'no', (s.graphMs / 1000).toFixed(1)]),
        ],
      );
    }
    out[quantization] = { full: { hnsw: full.hnsw, exact: full.exact, recall10: full.recall10 }, suggestedExactThreshold: suggested, graphBuildMs: totalGraphMs, vectorsPerSecond: target / (totalGraphMs / 1000), memoryBytes: index.memoryBytes(), curve, crossover, sweep };
  }
  return out;
}

// --- 3. through the HTTP server ---------------------------------------------------------------

interface Server {
  port: number;
  pid: number;
  stop: () => Promise<void>;
  logs: string[];
  /** Exit code once the server has exited on its own (undefined while it runs). */
  exited: () => number | undefined;
}

const SERVER_LOG = join(REPO_ROOT, '.bench-out', 'semantic-http-server.log');

async function startServer(dataDir: string): Promise<Server> {
  const proc = Bun.spawn(['bun', join(REPO_ROOT, 'src/main.ts')], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      KB_API_KEYS: 'org_b:key',
      HIGH_QUALITY_MODEL: 'use-lite',
      EMBEDDING_MODEL_DIR: MODELS_DIR,
      LOG_LEVEL: 'info',
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const logs: string[] = [];
  const logFile = Bun.file(SERVER_LOG).writer();
  let exitCode: number | undefined;
  let stopping = false;
  void proc.exited.then((code) => {
    exitCode = code;
    if (!stopping) console.log(`  server exited on its own with code ${code} (signal ${proc.signalCode ?? 'none'}); log in ${SERVER_LOG}; last lines:\n    ${logs.slice(-10).join('\n    ')}`);
    void logFile.end();
  });
  // Both streams are drained for the server's whole life, so it never writes into a full or closed pipe.
  const output = followOutput(proc, 0, (line, name) => {
    if (exitCode === undefined) logFile.write(`${name}: ${line}\n`);
    try {
      const entry = JSON.parse(line) as { msg?: string; level?: number };
      if ((entry.level ?? 0) >= 40 || /model|recovered/.test(entry.msg ?? '')) logs.push(line);
    } catch {
      if (line.trim()) logs.push(`${name}: ${line}`);
    }
  });
  const port = await Promise.race([output.port, proc.exited.then((code) => Promise.reject(new Error(`server exited (${code}) before listening: ${logs.join('\n')}`)))]);
  return {
    port,
    pid: proc.pid,
    logs,
    exited: () => exitCode,
    stop: async () => {
      stopping = true;
      proc.kill('SIGTERM');
      await proc.exited;
    },
  };
}

async function httpPart(data: SciFact) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-semantic-http-'));
  const t0 = performance.now();
  const server = await startServer(dataDir);
  const base = `http://127.0.0.1:${server.port}`;
  const headers = { 'x-service-organization-id': 'org_b', 'x-service-api-key': 'key', 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: await res.json().catch(() => undefined) };
  };
  try {
    for (;;) {
      const res = await fetch(`${base}/ready`).catch(() => undefined);
      if (res?.status === 200) break;
      if (performance.now() - t0 > 180_000) throw new Error('server not ready after 180 s');
      await Bun.sleep(50);
    }
    const readyMs = performance.now() - t0;
    const created = await call('POST', '/api/v1/knowledge-bases', { name: 'semantic bench', type: 'TEXT_HIGH_QUALITY' });
    if (created.status !== 201) throw new Error(`create knowledge base: ${created.status} ${JSON.stringify(created.json)}`);
    const kbId = created.json.data.id as string;
    const configuration = (await call('GET', `/api/v1/knowledge-bases/${kbId}/configuration`)).json.data;
    console.log(
      `  server ready in ${secs(readyMs)} (pid ${server.pid}); TEXT_HIGH_QUALITY = ${configuration.embedding.model} ${configuration.embedding.quantization}, ` +
        `chunking ${configuration.chunking.size}/${configuration.chunking.overlap}; ingest workers = ${CORES} (INGEST_WORKERS default)`,
    );

    const seedDocs = data.corpus.slice(0, SIZES.httpSeed);
    const bulkDocs = data.corpus.slice(SIZES.httpSeed, SIZES.httpSeed + SIZES.httpBulk);
    // Seed: ?wait=true, a few at a time.
    const tSeed = performance.now();
    let next = 0;
    const seedStatus: Record<string, number> = {};
    await Promise.all(
      Array.from({ length: SIZES.httpWriters }, async () => {
        while (next < seedDocs.length) {
          const doc = seedDocs[next++]!;
          const res = await call('POST', `/api/v1/knowledge-bases/${kbId}/contents?wait=true`, { text: doc.text, metadata: { sciId: doc.id } });
          const s = res.status === 201 ? String(res.json.data.status) : `http ${res.status}`;
          seedStatus[s] = (seedStatus[s] ?? 0) + 1;
        }
      }),
    );
    const seedSeconds = (performance.now() - tSeed) / 1000;
    console.log(`  seeded ${seedDocs.length} documents with ?wait=true (${SIZES.httpWriters} concurrent) in ${seedSeconds.toFixed(1)} s: ${JSON.stringify(seedStatus)}`);

    // Queries: distinct texts per measurement, so the server's query-vector cache never answers.
    const texts = data.queries.map((q) => q.text);
    let cursor = 0;
    const take = (n: number) => {
      const out = texts.slice(cursor, cursor + n);
      cursor += n;
      return out;
    };
    let errors = 0;
    const searchOnce = async (kind: 'semantic' | 'full-text', query: string): Promise<number> => {
      const t = performance.now();
      const res = await fetch(`${base}/api/v1/knowledge-bases/${kbId}/search/${kind}`, { method: 'POST', headers, body: JSON.stringify({ query, limit: 10 }) });
      await res.arrayBuffer();
      if (res.status !== 200) errors++;
      return performance.now() - t;
    };
    /** Sequential requests, semantic and full-text alternating, each with a fresh query. */
    const measure = async (n: number, stopAt?: () => boolean) => {
      const semantic: number[] = [];
      const fullText: number[] = [];
      const ends: number[] = [];
      for (const q of take(n)) {
        if (stopAt?.()) break;
        semantic.push(await searchOnce('semantic', q));
        fullText.push(await searchOnce('full-text', q));
        ends.push(performance.now());
      }
      return { semantic, fullText, ends };
    };
    await measure(10); // warm-up
    const idle = await measure(SIZES.httpSearches);

    // Progress: list pages (oldest first, 100 a page) from the first page not yet fully ready.
    const total = seedDocs.length + bulkDocs.length;
    let pageCursor = 1;
    let doneChunks = 0;
    const progress = async (): Promise<{ readyItems: number; readyChunks: number; failed: number }> => {
      let readyItems = (pageCursor - 1) * 100;
      let readyChunks = doneChunks;
      let failed = 0;
      for (let page = pageCursor; ; page++) {
        const res = await call('GET', `/api/v1/knowledge-bases/${kbId}/contents?page=${page}&limit=100`);
        const items = (res.json?.data ?? []) as { status: string; chunkCount: number }[];
        const settled = items.filter((i) => i.status === 'ready' || i.status === 'failed');
        failed += items.filter((i) => i.status === 'failed').length;
        const chunks = settled.reduce((s, i) => s + i.chunkCount, 0);
        readyItems += settled.length;
        readyChunks += chunks;
        if (items.length === 100 && settled.length === 100) {
          pageCursor = page + 1;
          doneChunks += chunks;
          continue;
        }
        return { readyItems, readyChunks, failed };
      }
    };
    const seedState = await progress();
    const seedChunks = seedState.readyChunks;

    // Bulk load: several writers, no wait.
    const bulkT0 = performance.now();
    const serverCpu0 = procCpuSeconds(server.pid);
    const machine0 = systemJiffies();
    let acked = 0;
    let ackEnd = 0;
    let bulkNext = 0;
    const ackStatus: Record<number, number> = {};
    const writers = Promise.all(
      Array.from({ length: SIZES.httpWriters }, async () => {
        while (bulkNext < bulkDocs.length) {
          const doc = bulkDocs[bulkNext++]!;
          const res = await fetch(`${base}/api/v1/knowledge-bases/${kbId}/contents`, { method: 'POST', headers, body: JSON.stringify({ text: doc.text, metadata: { sciId: doc.id } }) });
          await res.arrayBuffer();
          ackStatus[res.status] = (ackStatus[res.status] ?? 0) + 1;
          acked++;
        }
      }),
    ).then(() => (ackEnd = performance.now()));
    let indexedAt = 0;
    const samples: { t: number; readyItems: number; readyChunks: number }[] = [];
    let lastState = seedState;
    const poller = (async () => {
      for (;;) {
        await Bun.sleep(1000);
        lastState = await progress();
        samples.push({ t: (performance.now() - bulkT0) / 1000, readyItems: lastState.readyItems, readyChunks: lastState.readyChunks });
        if (acked === bulkDocs.length && lastState.readyItems >= total) {
          indexedAt = performance.now();
          return;
        }
        if (performance.now() - bulkT0 > 30 * 60_000) throw new Error('bulk load not indexed after 30 minutes');
      }
    })();
    const loaded = await measure(SIZES.httpSearches, () => indexedAt > 0);
    await writers;
    await poller;
    const serverCpuSeconds = procCpuSeconds(server.pid) - serverCpu0;
    const machine1 = systemJiffies();
    const bulkSeconds = (indexedAt - bulkT0) / 1000;
    const ackSeconds = (ackEnd - bulkT0) / 1000;
    const bulkChunks = lastState.readyChunks - seedChunks;
    const duringIndexing = loaded.ends.filter((t) => t < indexedAt).length;

    // Idle again, now at the larger size (separates the effect of load from that of size).
    await Bun.sleep(1000);
    const after = await measure(SIZES.httpSearches);

    const row = (name: string, s: number[]) => {
      const l = summarize(s);
      return [name, l.samples, ms(l.p50), ms(l.p95), ms(l.p99), ms(l.mean)];
    };
    printTable(
      `Search latency through HTTP (sequential, limit 10, a fresh query each time), ms`,
      ['', 'requests', 'p50', 'p95', 'p99', 'mean'],
      [
        row(`semantic, idle (${seedDocs.length} docs, ${seedChunks} chunks)`, idle.semantic),
        row(`semantic, during bulk load`, loaded.semantic),
        row(`semantic, idle after load (${total} docs)`, after.semantic),
        row(`full-text, idle (${seedDocs.length} docs)`, idle.fullText),
        row(`full-text, during bulk load`, loaded.fullText),
        row(`full-text, idle after load (${total} docs)`, after.fullText),
      ],
    );
    console.log(`  ${duringIndexing} of ${loaded.semantic.length} load-phase request pairs finished before the bulk load was fully indexed; ${errors} search errors`);
    console.log(
      `  bulk load: ${bulkDocs.length} documents by ${SIZES.httpWriters} writers, acknowledged in ${ackSeconds.toFixed(1)} s = ${(bulkDocs.length / ackSeconds).toFixed(0)} acks/s (${JSON.stringify(ackStatus)}); ` +
        `indexed in ${bulkSeconds.toFixed(1)} s = ${(bulkDocs.length / bulkSeconds).toFixed(1)} documents/s, ${int(bulkChunks)} chunks = ${(bulkChunks / bulkSeconds).toFixed(1)} chunks/s; ${lastState.failed} failed`,
    );
    console.log(
      `  server CPU during the bulk load: ${serverCpuSeconds.toFixed(1)} s over ${bulkSeconds.toFixed(1)} s = ${pct(serverCpuSeconds / bulkSeconds / CORES)} of ${CORES} cores; ` +
        `whole machine ${pct((machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total))} busy; ` +
        `server CPU per chunk ${((1000 * serverCpuSeconds) / Math.max(1, bulkChunks)).toFixed(1)} ms (searches included)`,
    );
    const relevantLogs = server.logs.filter((l) => !/"msg":"(state recovered|embedding model serves types)"/.test(l));
    if (relevantLogs.length > 0) console.log(`  server warnings/errors:\n    ${relevantLogs.slice(0, 10).join('\n    ')}`);
    return {
      readyMs,
      configuration,
      seed: { documents: seedDocs.length, chunks: seedChunks, seconds: seedSeconds, status: seedStatus },
      idle: { semantic: summarize(idle.semantic), fullText: summarize(idle.fullText) },
      load: { semantic: summarize(loaded.semantic), fullText: summarize(loaded.fullText), duringIndexing },
      afterLoad: { semantic: summarize(after.semantic), fullText: summarize(after.fullText) },
      bulk: {
        documents: bulkDocs.length,
        writers: SIZES.httpWriters,
        ackSeconds,
        acksPerSecond: bulkDocs.length / ackSeconds,
        indexedSeconds: bulkSeconds,
        documentsPerSecond: bulkDocs.length / bulkSeconds,
        chunks: bulkChunks,
        chunksPerSecond: bulkChunks / bulkSeconds,
        failed: lastState.failed,
        serverCpuShare: serverCpuSeconds / bulkSeconds / CORES,
        serverCpuMsPerChunk: (1000 * serverCpuSeconds) / Math.max(1, bulkChunks),
        progress: samples,
      },
      searchErrors: errors,
      serverLogs: server.logs,
    };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// --- 4. memory per chunk ----------------------------------------------------------------------

/** Bytes JavaScriptCore keeps for a string: 1 per character when all are Latin-1, else 2. */
const stringBytes = (s: string) => (/[^\u0000-\u00ff]/.test(s) ? 2 : 1) * s.length;

type Wal = ReturnType<typeof readWal>;

// Each measurement runs inside its own call and returns only numbers: JavaScriptCore scans the
// stack conservatively, so an index held by a local of a long-lived function can survive the next
// "before" snapshot and hide the growth being measured.

async function measureType(wal: Wal, spec: EmbeddingSpec, type: KbType, quantization: Quantization, keep: unknown[]) {
  const config: KnowledgeBaseConfig = { ...kbConfig(spec, quantization, type), id: 'cfg_bench', createdAt: wal.kb.createdAt };
  const record: KnowledgeBaseRecord = { ...wal.kb, type, config };
  const before = await heapNow();
  const kb = new KnowledgeBase(record);
  for (const item of wal.items) {
    const content = kb.putContent(item.id, { version: 1, text: item.text, metadata: item.metadata, source: { kind: 'text' } }, wal.kb.createdAt);
    kb.applyIndexed(content, item.chunks!, item.vectors!.map((v) => kb.vectors!.quantize(v)), kb.docSpace);
  }
  const flatVectorBytes = kb.vectors!.memoryBytes(); // the graph holds nothing yet
  const afterAdd = await heapNow();
  const t = performance.now();
  while (!kb.vectors!.buildStep(1000, 256));
  const graphMs = performance.now() - t;
  const afterGraph = await heapNow();
  // Kept alive by the caller, so its memory is never freed inside the next measurement.
  keep.push(kb);
  return {
    chunks: kb.chunkCount,
    graph: kb.vectors!.graphReady,
    graphMs,
    flatVectorBytes,
    vectorBytes: kb.vectors!.memoryBytes(),
    postingBytes: kb.bm25.memoryBytes(),
    heapBytes: afterAdd.heap - before.heap,
    graphRssBytes: afterGraph.rss - afterAdd.rss,
  };
}

/** Heap growth of the metadata index alone, averaged over a few copies. */
async function measureMetadata(wal: Wal, keep: unknown[]): Promise<number> {
  const copies = 5;
  const before = await heapNow();
  const metas: MetadataIndex[] = Array.from({ length: copies }, () => {
    const meta = new MetadataIndex();
    let doc = 0;
    for (const item of wal.items) for (const _ of item.chunks!) meta.add(doc++, item.metadata);
    return meta;
  });
  const after = await heapNow();
  keep.push(metas);
  return (after.heap - before.heap) / copies;
}

async function memoryPart(work: Workload) {
  const model: ModelChoice = { name: 'use-lite', spec: resolveModel('use-lite', serverConfig) };
  const prepared = await prepare(model, work, { graph: false });
  await prepared.engine.close();
  const wal = readWal(prepared.dir);
  const chunks = wal.items.reduce((s, i) => s + i.chunks!.length, 0);
  const textBytes = wal.items.reduce((s, i) => s + stringBytes(i.text), 0);
  const spanChars = wal.items.reduce((s, i) => s + i.chunks!.reduce((t, c) => t + (c.end - c.start), 0), 0);
  const keep: unknown[] = [];
  const metaBytes = await measureMetadata(wal, keep);
  const results: Record<string, unknown> = {};
  const rows: (string | number)[][] = [];
  let graphNote = '';
  for (const [type, quantization] of [
    ['TEXT_COST_EFFECTIVE', 'i8'],
    ['TEXT_HIGH_QUALITY', 'f32'],
  ] as const) {
    const m = await measureType(wal, model.spec, type, quantization, keep);
    if (!m.graph) graphNote = ` (no HNSW graph: ${int(chunks)} vectors is below the exact threshold ${DEFAULT_EXACT_THRESHOLD})`;
    const usedVectorBytes = chunks * (512 * (quantization === 'i8' ? 1 : 4) + 4 + 1);
    const other = m.heapBytes - m.flatVectorBytes - m.postingBytes - metaBytes;
    const per = (x: number) => (x / chunks).toFixed(0);
    rows.push([
      `${type} (${quantization})`,
      per(usedVectorBytes),
      per(m.flatVectorBytes),
      per(m.vectorBytes - m.flatVectorBytes),
      per(m.graphRssBytes),
      per(m.postingBytes),
      per(textBytes),
      per(metaBytes),
      per(other),
      per(m.heapBytes),
    ]);
    results[type] = {
      quantization,
      chunks,
      graphBuildMs: m.graphMs,
      perChunk: {
        vectorsUsed: usedVectorBytes / chunks,
        vectorsAllocated: m.flatVectorBytes / chunks,
        hnswEstimate: (m.vectorBytes - m.flatVectorBytes) / chunks,
        hnswRss: m.graphRssBytes / chunks,
        postings: m.postingBytes / chunks,
        text: textBytes / chunks,
        metadataIndex: metaBytes / chunks,
        otherHeap: other / chunks,
        heapTotal: m.heapBytes / chunks,
      },
    };
  }
  keep.length = 0;
  printTable(
    `Memory per chunk, bytes (${int(chunks)} chunks of ${int(wal.items.length)} SciFact documents, USE-Lite 512-d, chunking ${wal.kb.config.chunking.size}/${wal.kb.config.chunking.overlap})`,
    ['type', 'vectors used', 'vectors alloc', 'HNSW est.', 'HNSW RSS', 'postings', 'text', 'metadata idx', 'other heap', 'JS heap total'],
    rows,
  );
  console.log(
    `  vectors used = 512 × bytes per value + norm (4) + alive flag (1); vectors alloc = VectorIndex.memoryBytes() before the graph (capacity doubles, so up to 2× used);\n` +
      `  HNSW est. = what memoryBytes() adds for the graph (size × (vector bytes + connectivity × 2 × 8)); HNSW RSS = measured RSS growth while USearch built it${graphNote};\n` +
      `  postings = InvertedIndex.memoryBytes(); text = content texts as JSC strings, stored once per item (a chunk spans ${(spanChars / chunks).toFixed(0)} characters incl. overlap);\n` +
      `  metadata idx = heap growth of a MetadataIndex alone, one unique { sciId } per item; other heap = JS heap growth of the KnowledgeBase minus vectors, postings and metadata\n` +
      `  (chunk slots, chunk ids, content items, bookkeeping); JS heap total excludes the texts (already in memory) and USearch's native graph.`,
  );
  return results;
}

// --- main -------------------------------------------------------------------------------------

const data = await loadSciFact();
if (!data) {
  console.log(`SciFact not found at ${scifactDir()} (set SCIFACT_DIR); skipping the semantic benchmark.`);
  process.exit(0);
}
const started = performance.now();
const work = workload(data);
const { models, notes } = chooseModels();
console.log(
  `Semantic benchmark (${quick ? 'quick' : 'full'}): ${work.corpus.length} documents, ${work.queries.length} queries; parts ${[...parts].join(', ')}; ` +
    `Bun ${Bun.version}, ${CORES}× ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`,
);
console.log(`  models: ${models.map((m) => m.spec.model).join(', ')}`);
for (const n of notes) console.log(`  note: ${n}`);
mkdirSync(OUT_ROOT, { recursive: true });

const results: Record<string, unknown> = {
  mode: quick ? 'quick' : 'full',
  date: new Date().toISOString(),
  bun: Bun.version,
  cpu: { model: cpus()[0]?.model, count: CORES },
  data: { dir: data.dir, documents: work.corpus.length, queries: work.queries.length },
  models: models.map((m) => m.spec),
  modelNotes: notes,
};
if (parts.has('quality')) {
  const quality = [];
  for (const model of models) quality.push(await phase(`1. quality: ${model.spec.model}`, () => qualityForModel(data, work, model)));
  results.quality = quality;
}
if (parts.has('vectors')) results.vectors = await phase(`2. semantic leg at ${int(SIZES.vectorTarget)} vectors`, () => vectorPart(work));
if (parts.has('http')) results.http = await phase('3. search latency during a bulk load (HTTP)', () => httpPart(data));
if (parts.has('memory')) results.memory = await phase('4. memory per chunk', () => memoryPart(work));
results.engineMessages = engineMessages;
results.phasesMs = phases;
console.log(`\nPhases: ${Object.entries(phases).map(([k, v]) => `${k} ${secs(v)}`).join('; ')}`);
console.log(`Total ${secs(performance.now() - started)}`);
if (args.json) {
  await Bun.write(args.json, JSON.stringify(results, null, 2) + '\n');
  console.log(`Results written to ${args.json}`);
}
