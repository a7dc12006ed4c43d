// Semantic search benchmark of the engine, on SciFact:
//   1. quality   nDCG@10 / Recall@100 of full-text, semantic and hybrid search for every available
//                embedding model (USE-Lite always; transformers.js models under ../shared/models),
//                through the engine library in process; ingest rate and CPU use with 2 workers;
//   2. vectors   the semantic leg alone (VectorIndex) at ~50k chunk vectors: HNSW build rate,
//                search latency and recall@10 against exact search, f32 and i8, and the size at
//                which HNSW overtakes exact search;
//   3. http      search latency through the real server while idle and during a bulk load;
//   4. memory    bytes per chunk of vectors, postings, text and metadata for each type;
//   5. throughput chunks/s of the document workers per transformers model: fp32 vs int8, workers ×
//                threads, characters per model call, length-ordered against input-ordered batches;
//   6. ingest    the whole corpus through HTTP into a server on its defaults (the shipped model): wall
//                time until every item is ready, chunks/s, CPU by thread, search latency meanwhile;
//   7. limit     where a document worker's time goes (chunking, analysis, tokenization, inference,
//                pooling) and onnxruntime's own speed on the same tokenized batches (the ceiling).
//
//   bun bench/semantic.ts [--quick] [--json out.json] [--models use-lite,Xenova/bge-small-en-v1.5,Xenova/all-MiniLM-L6-v2@int8]
//                         [--parts quality,vectors,http,memory,throughput,ingest,limit] [--http-model auto] [--fresh]
//                         [--ingest-env KEY=VALUE,…] [--ingest-type TEXT_HIGH_QUALITY] [--limit-model Xenova/all-MiniLM-L6-v2] [--limit-precision int8]
//
// Embedding the corpus takes minutes, so each model's engine data directory is kept under
// .bench-out/semantic/<model>-<chunk size>-<overlap>[-quick]/ and reopened on later runs: the
// write-ahead log holds the vectors, so replay restores them without embedding again (--fresh
// rebuilds it). The SciFact files are read from ../shared/eval (never copied here).
import { mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { loadSciFact, scifactDir } from './lib/eval-data';
import { fmtInt, secs } from './lib/format';
import { CORES } from './lib/machine';
import { phaseTimer } from './lib/phases';
import { httpPart } from './semantic/http';
import { memoryPart } from './semantic/memory';
import { chooseModels } from './semantic/models';
import { args, OUT_ROOT, parts, quick, SIZES } from './semantic/options';
import { engineMessages } from './semantic/prepare';
import { qualityForModel } from './semantic/quality';
import { vectorPart } from './semantic/vectors';
import { throughputPart } from './semantic/throughput';
import { ingestPart } from './semantic/ingest';
import { limitPart } from './semantic/limit';
import { workload } from './semantic/workload';

const { phases, phase } = phaseTimer({ load: true });

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
    `Bun ${Bun.version}, ${CORES}× ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
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
if (parts.has('vectors')) results.vectors = await phase(`2. semantic leg at ${fmtInt(SIZES.vectorTarget)} vectors`, () => vectorPart(work));
if (parts.has('http')) results.http = await phase('3. search latency during a bulk load (HTTP)', () => httpPart(data));
if (parts.has('memory')) results.memory = await phase('4. memory per chunk', () => memoryPart(work));
if (parts.has('throughput'))
  results.throughput = await phase('5. ingestion throughput by precision, workers × threads, batch', () => throughputPart(work.corpus, models));
if (parts.has('ingest')) results.ingest = await phase('6. the whole corpus through HTTP on the defaults', () => ingestPart(data.corpus));
if (parts.has('limit'))
  results.limit = await phase('7. where the document workers spend their time; onnxruntime alone', () =>
    limitPart(data.corpus, results.ingest as { chunksPerSecond: number; seconds: number } | undefined),
  );
results.engineMessages = engineMessages;
results.phasesMs = phases;
console.log(
  `\nPhases: ${Object.entries(phases)
    .map(([k, v]) => `${k} ${secs(v)}`)
    .join('; ')}`,
);
console.log(`Total ${secs(performance.now() - started)}`);
if (args.json) {
  await Bun.write(args.json, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`Results written to ${args.json}`);
}
