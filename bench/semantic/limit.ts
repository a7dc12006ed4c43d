// bench/semantic.ts, part 'limit': where a document worker's time goes, and how fast ONNX Runtime
// itself runs the same model calls — the ceiling the service can approach.
//
// 1. Stages, one thread, CPU time per chunk on a sample of the corpus in requests as the ingestion
//    queue forms them (about 16 items or 16 chunks of text): chunking, analysis (the BM25
//    terms), tokenization, padding, ONNX inference and pooling; inference also with ORT's default
//    session options and with the earlier batching (2,048 characters a call) for comparison.
// 2. The ceiling: every chunk of the corpus tokenized and batched exactly as the provider does
//    (engine/embedding/providers/transformers.ts: encodeTexts, planBatches, padBatch, the same
//    session options), then only InferenceSession.run timed — one session of one thread in each of
//    CORES worker threads (the service's layout), and one session of CORES threads.
import * as ort from 'onnxruntime-node';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { termVector } from '../../engine/analysis/analyzer';
import { chunkText } from '../../engine/chunking/chunker';
import { planBatches } from '../../engine/embedding/batches';
import { DEFAULT_TOKEN_BATCH, encodeTexts, padBatch, SESSION_OPTIONS } from '../../engine/embedding/providers/transformers';
import { cpuSecondsOf, machineJiffies, machineShare } from '../lib/cpu';
import type { CorpusDoc } from '../lib/eval-data';
import { fmtInt, pct } from '../lib/format';
import { CORES } from '../lib/machine';
import { REPO_ROOT } from '../lib/paths';
import { printTable } from '../lib/table';
import type { LimitCall, LimitRequest } from './limit-worker';
import { kbConfig, serverConfig } from './models';
import { args, MODELS_DIR, quick } from './options';
import { resolveModel } from '../../src/kb-types';

const ONNX_FILES = { fp32: 'onnx/model.onnx', int8: 'onnx/model_quantized.onnx' } as const;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** CPU milliseconds of the calling thread. */
function threadCpuMs(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Texts of each worker request, as engine/ingest/queue.ts forms them: up to 16 items, or until about 16 chunks of text. */
function requestsOf(docs: readonly CorpusDoc[], chunking: { size: number; overlap: number }): string[][] {
  const requests: string[][] = [];
  for (let i = 0; i < docs.length; ) {
    const texts: string[] = [];
    let chars = 0;
    for (let items = 0; i < docs.length && items < 16; items++) {
      const doc = docs[i++]!;
      for (const s of chunkText(doc.text, chunking)) texts.push(doc.text.slice(s.start, s.end));
      chars += doc.text.length;
      if (chars >= 16 * chunking.size) break;
    }
    requests.push(texts);
  }
  return requests;
}

/** The earlier batching of the document workers: by characters, 2,048 once padded, 16 texts. */
const byCharacters = (texts: string[]) =>
  planBatches(
    texts.map((t) => t.length),
    { texts: 16, padded: 2048 },
  );

export async function limitPart(corpus: readonly CorpusDoc[], ingest?: { chunksPerSecond: number; seconds: number }) {
  const id = args['limit-model']!;
  const precision = args['limit-precision'] === 'fp32' ? 'fp32' : 'int8';
  // The model the server would load: the shipped folder first (the default), else MODELS_DIR.
  const dir = [resolve(REPO_ROOT, 'models'), MODELS_DIR].find((d) => existsSync(join(d, id, ONNX_FILES[precision])));
  if (!dir) {
    console.log(`  ${id} ${precision} not found in ${resolve(REPO_ROOT, 'models')} or ${MODELS_DIR}; skipped`);
    return { skipped: true };
  }
  const spec = resolveModel(`transformers:${id}`, { ...serverConfig, embedding: { ...serverConfig.embedding, modelDir: dir, precision } });
  if (spec.provider !== 'transformers') throw new Error(`${id} is not a transformers model`);
  const { chunking } = kbConfig(spec, 'f32');
  const file = join(dir, id, ONNX_FILES[precision]);
  env.localModelPath = dir;
  env.allowRemoteModels = false;
  const tokenizer = await AutoTokenizer.from_pretrained(id, { local_files_only: true });
  const empty = tokenizer.encode('');
  const closing = empty.length >= 2 ? empty[empty.length - 1]! : null;
  const tokenLimit = Math.min(spec.maxTokens ?? 512, tokenizer.model_max_length ?? Infinity);
  const padId = tokenizer.pad_token_id ?? 0;
  const limits = { texts: DEFAULT_TOKEN_BATCH.texts, padded: DEFAULT_TOKEN_BATCH.tokens };
  console.log(
    `  ${id} ${precision} (${file}), chunking ${chunking.size}/${chunking.overlap}, ${tokenLimit} tokens at most; calls of ≤ ${limits.texts} texts and ≤ ${limits.padded} padded tokens; load ${load()}`,
  );

  // 1. Stages on one thread.
  const sample = corpus.slice(0, quick ? 150 : 1000);
  const stage: Record<string, number> = {};
  const time = <T>(name: string, fn: () => T): T => {
    const c = threadCpuMs();
    const out = fn();
    stage[name] = (stage[name] ?? 0) + threadCpuMs() - c;
    return out;
  };
  const timeAsync = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const c = threadCpuMs();
    const out = await fn();
    stage[name] = (stage[name] ?? 0) + threadCpuMs() - c;
    return out;
  };
  const requests = time('chunking', () => requestsOf(sample, chunking));
  const chunks = requests.reduce((n, r) => n + r.length, 0);
  time('analysis (BM25 terms)', () => {
    for (const r of requests) for (const t of r) termVector(t);
  });
  const session = await ort.InferenceSession.create(file, { intraOpNumThreads: 1, interOpNumThreads: 1, ...SESSION_OPTIONS });
  const defaults = await ort.InferenceSession.create(file, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feedsOf = (s: ort.InferenceSession, batch: Int32Array[]) => {
    const { seq, inputIds, attentionMask, tokenTypeIds } = padBatch(batch, padId);
    const dims = [batch.length, seq];
    const all: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', inputIds, dims),
      attention_mask: new ort.Tensor('int64', attentionMask, dims),
      token_type_ids: new ort.Tensor('int64', tokenTypeIds, dims),
    };
    return Object.fromEntries(s.inputNames.map((n) => [n, all[n]!]));
  };
  await session.run(feedsOf(session, [Int32Array.of(...empty)]));
  await defaults.run(feedsOf(defaults, [Int32Array.of(...empty)]));
  let tokens = 0;
  let padded = 0;
  for (const r of requests) {
    const ids = time('tokenization', () => encodeTexts(tokenizer, r, tokenLimit, closing));
    const plan = time('batch planning and padding', () =>
      planBatches(
        ids.map((t) => t.length),
        limits,
      ),
    );
    for (const b of plan) {
      const batch = b.map((i) => ids[i]!);
      const feeds = time('batch planning and padding', () => feedsOf(session, batch));
      tokens += batch.reduce((n, t) => n + t.length, 0);
      padded += batch.length * Math.max(...batch.map((t) => t.length));
      const out = await timeAsync('inference (ORT session.run)', () => session.run(feeds));
      time('pooling', () => {
        const hidden = Object.values(out)[0]!;
        const [, seq, dim] = hidden.dims as number[];
        const data = hidden.data as Float32Array;
        batch.forEach((t, k) => {
          const v = new Float32Array(dim!);
          for (let s = 0; s < t.length; s++) for (let i = 0; i < dim!; i++) v[i]! += data[(k * seq! + s) * dim! + i]!;
        });
      });
    }
    // The same texts as before: ORT's default options, then the earlier batching by characters.
    for (const b of planBatches(
      ids.map((t) => t.length),
      limits,
    )) {
      const feeds = feedsOf(
        defaults,
        b.map((i) => ids[i]!),
      );
      await timeAsync('inference, ORT default options', () => defaults.run(feeds));
    }
    for (const b of byCharacters(r)) {
      const feeds = feedsOf(
        session,
        b.map((i) => ids[i]!),
      );
      await timeAsync('inference, batches of 2,048 characters', () => session.run(feeds));
    }
  }
  await Promise.all([session.release(), defaults.release()]);
  const perChunk = (name: string) => (stage[name] ?? 0) / chunks;
  const worker = ['chunking', 'analysis (BM25 terms)', 'tokenization', 'batch planning and padding', 'inference (ORT session.run)', 'pooling'];
  const workerTotal = worker.reduce((s, n) => s + perChunk(n), 0);
  printTable(
    `Document worker stages, one thread: ${fmtInt(sample.length)} documents, ${fmtInt(chunks)} chunks in ${requests.length} requests; ${fmtInt(tokens)} tokens, padding ${((100 * (padded - tokens)) / tokens).toFixed(1)}%`,
    ['stage', 'CPU ms a chunk', 'share'],
    [
      ...worker.map((n) => [n, perChunk(n).toFixed(2), `${((100 * perChunk(n)) / workerTotal).toFixed(1)}%`]),
      ['all (one worker)', workerTotal.toFixed(2), '100%'],
      ['for comparison: inference with ORT default options', perChunk('inference, ORT default options').toFixed(2), ''],
      ['for comparison: inference in calls of 2,048 characters', perChunk('inference, batches of 2,048 characters').toFixed(2), ''],
    ],
  );

  // 2. The ceiling: the whole corpus, ORT alone.
  const all = requestsOf(corpus.slice(0, quick ? 300 : corpus.length), chunking);
  const calls: LimitCall[] = [];
  let total = 0;
  for (const r of all) {
    const ids = encodeTexts(tokenizer, r, tokenLimit, closing);
    total += r.length;
    for (const b of planBatches(
      ids.map((t) => t.length),
      limits,
    )) {
      const { seq, inputIds, attentionMask, tokenTypeIds } = padBatch(
        b.map((i) => ids[i]!),
        padId,
      );
      calls.push({ dims: [b.length, seq], inputIds, attentionMask, tokenTypeIds });
    }
  }
  const workersRate = async (): Promise<{ seconds: number; cpuMsPerChunk: number; othersShare: number }> => {
    const workers = Array.from({ length: CORES }, () => new Worker(new URL('./limit-worker.ts', import.meta.url)));
    const next = (w: Worker) => new Promise<any>((res, rej) => ((w.onmessage = (e) => res(e.data)), (w.onerror = (e) => rej(e))));
    try {
      // Calls dealt in turn, so each worker gets an even share of long and short ones.
      const shares = workers.map((_, k) => calls.filter((_, i) => i % CORES === k));
      await Promise.all(
        workers.map((w, k) => {
          const ready = next(w);
          w.postMessage({
            type: 'load',
            file,
            options: { intraOpNumThreads: 1, interOpNumThreads: 1, ...SESSION_OPTIONS },
            calls: shares[k]!,
          } satisfies LimitRequest);
          return ready;
        }),
      );
      const t0 = performance.now();
      const cpu0 = cpuSecondsOf('self');
      const machine0 = machineJiffies();
      const done = await Promise.all(
        workers.map((w) => {
          const d = next(w);
          w.postMessage({ type: 'go' } satisfies LimitRequest);
          return d;
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      // The machine's busy share less this process's: what other work took meanwhile.
      const othersShare = Math.max(0, machineShare(machine0, machineJiffies()) - (cpuSecondsOf('self') - cpu0) / seconds / CORES);
      return { seconds, cpuMsPerChunk: done.reduce((s, d) => s + d.cpuMillis, 0) / total, othersShare };
    } finally {
      for (const w of workers) w.terminate();
    }
  };
  const threadsRate = async (): Promise<number> => {
    const s = await ort.InferenceSession.create(file, { intraOpNumThreads: CORES, interOpNumThreads: 1, ...SESSION_OPTIONS });
    try {
      const feeds = (c: LimitCall) => {
        const all: Record<string, ort.Tensor> = {
          input_ids: new ort.Tensor('int64', c.inputIds, c.dims),
          attention_mask: new ort.Tensor('int64', c.attentionMask, c.dims),
          token_type_ids: new ort.Tensor('int64', c.tokenTypeIds, c.dims),
        };
        return Object.fromEntries(s.inputNames.map((n) => [n, all[n]!]));
      };
      await s.run(feeds(calls[0]!));
      const t0 = performance.now();
      for (const c of calls) await s.run(feeds(c));
      return (performance.now() - t0) / 1000;
    } finally {
      await s.release();
    }
  };
  const loadBefore = load();
  const inWorkers = await workersRate();
  const oneSession = await threadsRate();
  const loadAfter = load();
  const rows = [
    [
      `${CORES} worker threads × 1 ORT thread (the service's layout)`,
      inWorkers.seconds.toFixed(1),
      (total / inWorkers.seconds).toFixed(1),
      inWorkers.cpuMsPerChunk.toFixed(2),
    ],
    [`1 session × ${CORES} ORT threads`, oneSession.toFixed(1), (total / oneSession).toFixed(1), '-'],
  ];
  if (ingest) rows.push(['the service through HTTP (ingest part)', ingest.seconds.toFixed(1), ingest.chunksPerSecond.toFixed(1), '-']);
  printTable(
    `onnxruntime alone on the service's model calls: ${fmtInt(total)} chunks in ${fmtInt(calls.length)} calls; load ${loadBefore} → ${loadAfter}`,
    ['', 'seconds', 'chunks/s', 'CPU ms a chunk'],
    rows,
  );
  console.log(
    `  other processes took ${pct(inWorkers.othersShare)} of the machine during the first run; from its CPU time, idle cores would give ${((CORES * 1000) / inWorkers.cpuMsPerChunk).toFixed(1)} chunks/s`,
  );
  if (ingest)
    console.log(
      `  the service reached ${((100 * ingest.chunksPerSecond) / (total / inWorkers.seconds)).toFixed(0)}% of onnxruntime's own speed on the same calls`,
    );
  return {
    model: id,
    precision,
    limits,
    stages: { documents: sample.length, chunks, tokens, padded, cpuMsPerChunk: Object.fromEntries(Object.keys(stage).map((n) => [n, perChunk(n)])) },
    ceiling: {
      chunks: total,
      calls: calls.length,
      workers: { ...inWorkers, chunksPerSecond: total / inWorkers.seconds },
      oneSession: { seconds: oneSession, chunksPerSecond: total / oneSession },
      loadBefore,
      loadAfter,
    },
  };
}
