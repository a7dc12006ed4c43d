// bench/http.ts, the target: full-text through HTTP at c = 16 against the engine alone on one
// thread. On a shared machine the speed of either side drifts by ±20% within minutes, so they are
// measured in paired rounds (an engine pass in this process, then an HTTP run) and the ratio is
// the median of the rounds' ratios. Both sides hold the same state: the restarted server and an
// Engine opened here on a copy of its directory (one engine per data directory: the server holds
// its lock), each loaded from the snapshot and log.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { analyze } from '../../engine';
import { openEngine } from '../../snapshots';
import { fmtInt, fmtMs, pct } from '../lib/format';
import type { HashEmbedder } from '../lib/hash-embed';
import type { Server } from '../lib/server';
import { summarize, timeEach } from '../lib/stats';
import { cannon, wrk, type Run, type Target } from './load';
import { ORG, TARGET_ENGINE_MS, TARGET_HTTP_S, TARGET_ROUNDS, wrkPath } from './options';

export async function pairedRounds(
  s2: Server,
  dataDir: string,
  stub: HashEmbedder,
  kbId: string,
  queries: readonly string[],
  fullText: Target,
  problems: string[],
) {
  const copy = `${dataDir}-engine`;
  cpSync(dataDir, copy, { recursive: true, filter: (from) => !from.endsWith('/LOCK') });
  const { engine } = await openEngine({
    dataDir: copy,
    compute: {
      documentWorkers: 1,
      queryWorkers: 1,
      settings: { modelDir: join(dataDir, 'models'), allowRemoteModels: false, threads: 1, http: { url: stub.url, timeoutMs: 30_000, retries: 0 } },
    },
    log: () => {},
  });
  try {
    const kb = engine.knowledgeBase(kbId)!;
    const search = (q: string) => engine.searchFullText(ORG, kbId, { query: q, limit: 10 });
    const indexOnly = (q: string) => kb.bm25.search(analyze(q), 10);
    const tool: Run['tool'] = wrkPath ? 'wrk' : 'autocannon';
    const httpRun = (seconds: number) => (wrkPath ? wrk(s2, fullText, 16, seconds) : cannon(s2, fullText, 16, { duration: seconds }));
    timeEach(queries, 1, search);
    timeEach(queries, 1, indexOnly);
    await httpRun(1);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const engineSamples: number[] = [];
    const indexSamples: number[] = [];
    const rounds: { engineQueriesPerSecond: number; httpRequestsPerSecond: number; ratio: number; p50Ms: number; p99Ms: number; serverCores: number }[] = [];
    for (let r = 0; r < TARGET_ROUNDS; r++) {
      // Whole passes over the queries for at least TARGET_ENGINE_MS.
      const round: number[] = [];
      const t = performance.now();
      do round.push(...timeEach(queries, 1, search));
      while (performance.now() - t < TARGET_ENGINE_MS);
      engineSamples.push(...round);
      indexSamples.push(...timeEach(queries, 1, indexOnly));
      const engineQps = round.length / (sum(round) / 1000);
      const run = await httpRun(TARGET_HTTP_S);
      if (run.non2xx + run.errors) problems.push(`target round ${r + 1}: ${run.non2xx} non-2xx and ${run.errors} errors`);
      rounds.push({
        engineQueriesPerSecond: engineQps,
        httpRequestsPerSecond: run.requestsPerSecond,
        ratio: run.requestsPerSecond / engineQps,
        p50Ms: run.latency.p50,
        p99Ms: run.latency.p99,
        serverCores: run.serverCores,
      });
      console.log(
        `  round ${r + 1}: engine ${fmtInt(engineQps)} queries/s; HTTP (${tool}) ${fmtInt(run.requestsPerSecond)} req/s, p50 ${fmtMs(run.latency.p50)} ms, p99 ${fmtMs(run.latency.p99)} ms, ` +
          `server ${run.serverCores.toFixed(2)} cores → ${pct(run.requestsPerSecond / engineQps)}`,
      );
    }
    const engineAlone = {
      chunks: kb.chunkCount,
      recovery: engine.recovery,
      searchFullText: { latency: summarize(engineSamples), queriesPerSecond: engineSamples.length / (sum(engineSamples) / 1000) },
      indexSearch: { latency: summarize(indexSamples), queriesPerSecond: indexSamples.length / (sum(indexSamples) / 1000) },
    };
    console.log(
      `  Engine.searchFullText (analysis + BM25 + hits), all rounds: ${fmtInt(engineAlone.searchFullText.queriesPerSecond)} queries/s, p50 ${fmtMs(engineAlone.searchFullText.latency.p50)} ms, ` +
        `p99 ${fmtMs(engineAlone.searchFullText.latency.p99)} ms; analysis + index only (as bench/fulltext.ts): ${fmtInt(engineAlone.indexSearch.queriesPerSecond)} queries/s`,
    );
    return { tool, rounds, engineAlone };
  } finally {
    await engine.close();
    rmSync(copy, { recursive: true, force: true });
  }
}
