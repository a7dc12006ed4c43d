// bench/semantic.ts, part 3: search latency through the real server while idle and during a bulk
// load of the rest of the corpus (TEXT_HIGH_QUALITY with --http-model, default the best model under
// MODELS_DIR), the time to index the whole corpus, the server's CPU and its own progress report.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSecondsOf, machineJiffies, machineShare } from '../lib/cpu';
import { bulkWrite } from '../lib/bulk-write';
import type { SciFact } from '../lib/eval-data';
import { fmtInt, fmtMs, pct, secs } from '../lib/format';
import { CORES } from '../lib/machine';
import { BENCH_OUT } from '../lib/paths';
import { metricSum, scrapeMetrics } from '../lib/metrics';
import { launchServer, waitFor, type Server } from '../lib/server';
import { summarize } from '../lib/stats';
import { printTable } from '../lib/table';
import { args, MODELS_DIR, SIZES } from './options';

const SERVER_LOG = join(BENCH_OUT, 'semantic-http-server.log');

/**
 * The server on `dataDir`, its whole output written to SERVER_LOG; `logs` keeps its warnings,
 * errors and model or recovery lines.
 */
async function startServer(dataDir: string): Promise<{ server: Server; logs: string[] }> {
  const logs: string[] = [];
  const logFile = Bun.file(SERVER_LOG).writer();
  let exited = false;
  const server = await launchServer({
    env: { DATA_DIR: dataDir, KB_API_KEYS: 'org_b:key', HIGH_QUALITY_MODEL: args['http-model'], EMBEDDING_MODEL_DIR: MODELS_DIR },
    logLevel: 'info',
    onLine: (line, name) => {
      if (!exited) logFile.write(`${name}: ${line}\n`);
      try {
        const entry = JSON.parse(line) as { msg?: string; level?: number };
        if ((entry.level ?? 0) >= 40 || /model|recovered/.test(entry.msg ?? '')) logs.push(line);
      } catch {
        if (line.trim()) logs.push(`${name}: ${line}`);
      }
    },
  });
  void server.exited.then((code) => {
    exited = true;
    if (!server.stopping())
      console.log(
        `  server exited on its own with code ${code} (signal ${server.signalCode() ?? 'none'}); log in ${SERVER_LOG}; last lines:\n    ${logs.slice(-10).join('\n    ')}`,
      );
    void logFile.end();
  });
  return { server, logs };
}

export async function httpPart(data: SciFact) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-semantic-http-'));
  const { server, logs } = await startServer(dataDir);
  const base = server.base;
  const headers = { 'x-service-organization-id': 'org_b', 'x-service-api-key': 'key', 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: await res.json().catch(() => undefined) };
  };
  try {
    const readyMs = await waitFor(server, '/ready', { intervalMs: 50, timeoutMs: 180_000 });
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
    console.log(
      `  seeded ${seedDocs.length} documents with ?wait=true (${SIZES.httpWriters} concurrent) in ${seedSeconds.toFixed(1)} s: ${JSON.stringify(seedStatus)}`,
    );

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

    // Progress as the server reports it: the knowledge base read (items by status, its pace and
    // ETA) and the searchable chunks from /metrics.
    const total = seedDocs.length + bulkDocs.length;
    const progress = async () => {
      const ingestion = (await call('GET', `/api/v1/knowledge-bases/${kbId}`)).json.data.ingestion as {
        contents: Record<'pending' | 'processing' | 'ready' | 'failed', number>;
        chunksPerSecond: number;
        etaSeconds: number | null;
      };
      const readyChunks = metricSum(await scrapeMetrics(base), 'kb_chunks');
      const { ready, failed } = ingestion.contents;
      return { readyItems: ready + failed, readyChunks, failed, pace: ingestion.chunksPerSecond, eta: ingestion.etaSeconds };
    };
    const seedState = await progress();
    const seedChunks = seedState.readyChunks;

    // Bulk load: several writers, no wait.
    const bulkT0 = performance.now();
    const serverCpu0 = cpuSecondsOf(server.pid);
    const machine0 = machineJiffies();
    const bulk = bulkWrite(base, kbId, headers, bulkDocs, SIZES.httpWriters);
    let ackEnd = 0;
    const writers = bulk.done.then((at) => (ackEnd = at));
    let indexedAt = 0;
    const samples: { t: number; readyItems: number; readyChunks: number; pace: number; eta: number | null }[] = [];
    let lastState = seedState;
    const poller = (async () => {
      for (;;) {
        await Bun.sleep(1000);
        lastState = await progress();
        samples.push({
          t: (performance.now() - bulkT0) / 1000,
          readyItems: lastState.readyItems,
          readyChunks: lastState.readyChunks,
          pace: lastState.pace,
          eta: lastState.eta,
        });
        if (samples.length % 30 === 0)
          console.log(
            `    ${secs(samples.at(-1)!.t * 1000)}: ${fmtInt(lastState.readyItems)} of ${fmtInt(total)} documents settled; the server reports ${lastState.pace} chunks/s, ETA ${lastState.eta ?? '?'} s`,
          );
        if (bulk.acked === bulkDocs.length && lastState.readyItems >= total) {
          indexedAt = performance.now();
          return;
        }
        if (performance.now() - bulkT0 > 30 * 60_000) throw new Error('bulk load not indexed after 30 minutes');
      }
    })();
    const loaded = await measure(SIZES.httpSearches, () => indexedAt > 0);
    await writers;
    await poller;
    const serverCpuSeconds = cpuSecondsOf(server.pid) - serverCpu0;
    const machine1 = machineJiffies();
    const bulkSeconds = (indexedAt - bulkT0) / 1000;
    const ackSeconds = (ackEnd - bulkT0) / 1000;
    const bulkChunks = lastState.readyChunks - seedChunks;
    const duringIndexing = loaded.ends.filter((t) => t < indexedAt).length;

    // Idle again, now at the larger size (separates the effect of load from that of size).
    await Bun.sleep(1000);
    const after = await measure(SIZES.httpSearches);

    const row = (name: string, s: number[]) => {
      const l = summarize(s);
      return [name, l.samples, fmtMs(l.p50), fmtMs(l.p95), fmtMs(l.p99), fmtMs(l.mean)];
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
    console.log(
      `  ${duringIndexing} of ${loaded.semantic.length} load-phase request pairs finished before the bulk load was fully indexed; ${errors} search errors`,
    );
    console.log(
      `  bulk load: ${bulkDocs.length} documents by ${SIZES.httpWriters} writers, acknowledged in ${ackSeconds.toFixed(1)} s = ${(bulkDocs.length / ackSeconds).toFixed(0)} acks/s (${JSON.stringify(bulk.status)}); ` +
        `indexed in ${bulkSeconds.toFixed(1)} s = ${(bulkDocs.length / bulkSeconds).toFixed(1)} documents/s, ${fmtInt(bulkChunks)} chunks = ${(bulkChunks / bulkSeconds).toFixed(1)} chunks/s; ${lastState.failed} failed`,
    );
    console.log(
      `  the whole corpus (${fmtInt(total)} documents) indexed through HTTP in ${(seedSeconds + bulkSeconds).toFixed(1)} s (seed ${seedSeconds.toFixed(1)} s with ?wait=true, bulk ${bulkSeconds.toFixed(1)} s)`,
    );
    console.log(
      `  server CPU during the bulk load: ${serverCpuSeconds.toFixed(1)} s over ${bulkSeconds.toFixed(1)} s = ${pct(serverCpuSeconds / bulkSeconds / CORES)} of ${CORES} cores; ` +
        `whole machine ${pct(machineShare(machine0, machine1))} busy; ` +
        `server CPU per chunk ${((1000 * serverCpuSeconds) / Math.max(1, bulkChunks)).toFixed(1)} ms (searches included)`,
    );
    const relevantLogs = logs.filter((l) => !/"msg":"(state recovered|embedding model serves types)"/.test(l));
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
      serverLogs: logs,
    };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
