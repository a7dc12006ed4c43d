// bench/semantic.ts, each model's engine data directory holding the work corpus: reopened from
// .bench-out/semantic/ when an earlier run built it (the log holds the vectors, so replay restores
// them without embedding again), built (and its ingestion measured) otherwise; query vectors
// cached beside it.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine } from '../../engine';
import { openEngine } from '../../snapshots';
import { CpuMeter, type CpuReport } from '../lib/cpu';
import { Compute } from '../lib/engine-internals';
import type { Query } from '../lib/eval-data';
import { fmtInt, secs } from '../lib/format';
import { computeSettings, kbConfig, type ModelChoice } from './models';
import { args, DOCUMENT_WORKERS, ORG, OUT_ROOT, quick } from './options';
import type { Workload } from './workload';

export interface IngestStats {
  documents: number;
  chunks: number;
  ackSeconds: number;
  seconds: number;
  documentsPerSecond: number;
  chunksPerSecond: number;
  failed: number;
  cpu: CpuReport;
  measuredAt: string;
}

export interface Prepared {
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

export const engineMessages: string[] = [];
const engineLog = (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => {
  if (level === 'info') return;
  const line = `[engine ${level}] ${message} ${details ? JSON.stringify(details) : ''}`;
  engineMessages.push(line);
  console.log(`  ${line}`);
};

/** Directories already emptied by --fresh in this run (later parts reuse what the first one built). */
const freshened = new Set<string>();

/** Open (or build) the engine data directory of a model holding the whole work corpus. */
export async function prepare(model: ModelChoice, work: Workload, options: { graph?: boolean } = {}): Promise<Prepared> {
  const config = kbConfig(model.spec, 'f32');
  const dir = modelDir(model, config.chunking);
  if (args.fresh && !freshened.has(dir)) {
    freshened.add(dir);
    rmSync(dir, { recursive: true, force: true });
  }
  const existed = existsSync(join(dir, 'wal'));
  mkdirSync(dir, { recursive: true });
  const open = async () =>
    (await openEngine({ dataDir: dir, compute: { documentWorkers: DOCUMENT_WORKERS, settings: computeSettings() }, log: engineLog })).engine;
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
    kb && JSON.stringify({ ...kb.config, id: undefined, createdAt: undefined }) === JSON.stringify({ ...config, id: undefined, createdAt: undefined });
  if (kb && !sameConfig) {
    console.log(`  cached knowledge base in ${dir} has another configuration: rebuilding`);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    engine = await open();
    kb = undefined;
  }
  const reopened = existed && kb ? engine.recovery : undefined;
  if (reopened)
    console.log(
      `  reopened ${dir}: replayed ${fmtInt(reopened.records)} log records (${fmtInt(reopened.chunks)} chunks) in ${fmtInt(reopened.millis)} ms, ${reopened.requeued} items re-queued`,
    );
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
    console.log(
      `  embedding ${missing.length} documents (+${engine.recovery.requeued} re-queued) with ${model.spec.model}, ${DOCUMENT_WORKERS} document workers...`,
    );
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
        console.log(`    ${secs(performance.now() - t0)}: ${fmtInt(s.chunks - chunks0)} chunks indexed, queue ${s.queueDepth}`);
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = meter.finish();
    const chunks = engine.stats().chunks - chunks0;
    const documents = missing.length + engine.recovery.requeued;
    const failed = engine.listContents(ORG, kbId, 0, Number.MAX_SAFE_INTEGER)!.items.filter((i) => i.status === 'failed').length;
    ingest = {
      documents,
      chunks,
      ackSeconds,
      seconds,
      documentsPerSecond: documents / seconds,
      chunksPerSecond: chunks / seconds,
      failed,
      cpu,
      measuredAt: new Date().toISOString(),
    };
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
export async function queryVectors(
  model: ModelChoice,
  dir: string,
  queries: readonly Query[],
): Promise<{ vectors: Map<string, Float32Array>; msPerQuery?: number }> {
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
