// bench/semantic.ts, part 5: where ingestion throughput comes from, for each transformers model —
// chunks/s of the engine's document workers (chunking, analysis, embedding) for fp32 vs int8,
// workers × ONNX Runtime threads on this machine's cores, word pieces per model call (the provider
// tokenizes first and batches by token count), and batches formed in length order against input
// order (one provider, one thread, so only padding differs).
import { chunkText, Compute, createTransformersProvider, type TransformersSpec } from '../lib/engine-internals';
import { batchesItself } from '../../engine/embedding/batches';
import type { CorpusDoc } from '../lib/eval-data';
import { fmtInt } from '../lib/format';
import { CORES } from '../lib/machine';
import { printTable } from '../lib/table';
import { kbConfig, type ModelChoice } from './models';
import { MODELS_DIR, quick } from './options';

interface Setup {
  precision: 'fp32' | 'int8';
  workers: number;
  threads: number;
  /** Most word pieces per model call once padded (ComputeOptions.batchTokens). */
  batchTokens: number;
}

/** Chunks per second of `docs` through a fresh pool of document workers. */
async function poolRate(
  spec: TransformersSpec,
  docs: readonly CorpusDoc[],
  setup: Setup,
  chunking: { size: number; overlap: number },
): Promise<{ chunks: number; perSecond: number }> {
  const compute = new Compute({
    documentWorkers: setup.workers,
    queryWorkers: 1,
    batchSize: 16,
    batchTokens: setup.batchTokens,
    settings: { modelDir: MODELS_DIR, threads: setup.threads },
  });
  const model = { ...spec, precision: setup.precision };
  try {
    await compute.preload(model);
    // As the ingestion queue sends them: 16 items a request, one request per worker in flight and one waiting.
    const requests: CorpusDoc[][] = [];
    for (let i = 0; i < docs.length; i += 16) requests.push(docs.slice(i, i + 16));
    const started = performance.now();
    let next = 0;
    let chunks = 0;
    await Promise.all(
      Array.from({ length: setup.workers * 2 }, async () => {
        while (next < requests.length) {
          const results = await compute.process(
            requests[next++]!.map((d) => ({ text: d.text, chunking })),
            model,
          );
          for (const r of results) if (r.ok) chunks += r.chunks.length;
        }
      }),
    );
    return { chunks, perSecond: chunks / ((performance.now() - started) / 1000) };
  } finally {
    await compute.close();
  }
}

/** One provider, one thread: the same chunks in calls of 16, taken in input order and in length order. */
async function orderRate(spec: TransformersSpec, texts: string[], sorted: boolean): Promise<number> {
  const provider = await createTransformersProvider(spec, { modelDir: MODELS_DIR, threads: 1 });
  try {
    if (!batchesItself(provider)) throw new Error('the transformers provider batches by tokens itself');
    const order = texts.map((_, i) => i);
    if (sorted) order.sort((a, b) => texts[a]!.length - texts[b]!.length);
    const started = performance.now();
    // No token budget: each slice of 16 is one call, padded to its longest.
    for (let i = 0; i < order.length; i += 16)
      await provider.embedInBatches(
        order.slice(i, i + 16).map((k) => texts[k]!),
        'document',
        { texts: 16, tokens: Infinity },
      );
    return texts.length / ((performance.now() - started) / 1000);
  } finally {
    await provider.close?.();
  }
}

export async function throughputPart(corpus: readonly CorpusDoc[], models: ModelChoice[]) {
  const docs = corpus.slice(0, quick ? 64 : 320);
  const results: Record<string, unknown>[] = [];
  for (const choice of models) {
    if (choice.spec.provider !== 'transformers') continue;
    const spec = choice.spec;
    const { chunking } = kbConfig(spec, 'f32');
    const setups: Setup[] = [];
    // The server's default budget (one full MiniLM chunk), then budgets of 2, 4 and 16 full chunks per call.
    const budget = 256;
    for (const precision of ['int8', 'fp32'] as const) {
      setups.push({ precision, workers: CORES, threads: 1, batchTokens: budget });
      if (CORES > 1) setups.push({ precision, workers: 1, threads: CORES, batchTokens: budget });
    }
    for (const chunks of quick ? [16] : [2, 4, 16]) setups.push({ precision: 'int8', workers: CORES, threads: 1, batchTokens: chunks * budget });
    const rows: (string | number)[][] = [];
    for (const setup of setups) {
      const { chunks, perSecond } = await poolRate(spec, docs, setup, chunking);
      results.push({ model: spec.model, ...setup, chunks, chunksPerSecond: perSecond });
      rows.push([setup.precision, setup.workers, setup.threads, fmtInt(setup.batchTokens), fmtInt(chunks), perSecond.toFixed(1)]);
      console.log(
        `    ${setup.precision} ${setup.workers} workers × ${setup.threads} threads, ${setup.batchTokens} word pieces a call: ${perSecond.toFixed(1)} chunks/s`,
      );
    }
    printTable(
      `Ingestion throughput of ${spec.model}: ${docs.length} SciFact documents, chunking ${chunking.size}/${chunking.overlap}, ${CORES} cores`,
      ['precision', 'workers', 'threads', 'word pieces per call', 'chunks', 'chunks/s'],
      rows,
    );
    const texts = docs.flatMap((d) => chunkText(d.text, chunking).map(({ start, end }) => d.text.slice(start, end)));
    const inputOrder = await orderRate(spec, texts, false);
    const lengthOrder = await orderRate(spec, texts, true);
    console.log(
      `  batches of 16 on one thread: input order ${inputOrder.toFixed(1)} chunks/s, length order ${lengthOrder.toFixed(1)} chunks/s (×${(lengthOrder / inputOrder).toFixed(2)})`,
    );
    results.push({ model: spec.model, batching: { inputOrder, lengthOrder } });
  }
  return results;
}
