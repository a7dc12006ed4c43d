// bench/http.ts and bench/scale.ts, ingestion: every item POSTed without wait by `connections` writers, /metrics polled
// for indexing progress, then the wait for the background HNSW graph.
import { fmtInt, fmtMs } from '../lib/format';
import { rssOf } from '../lib/memory';
import { metricSum, scrapeMetrics, tryScrapeMetrics } from '../lib/metrics';
import type { Server } from '../lib/server';
import { cannon } from './load';

export interface IngestOptions {
  /** Concurrent writers (autocannon connections). */
  connections: number;
  /** How often /metrics is read for progress (a request on the main thread: large loads read seldom). */
  pollMs: number;
  /** The embedder's call counts, when it runs in this process. */
  embedderCalls?: () => unknown;
  /** Give up when indexing and the graph take longer than this (default 30 minutes). */
  boundMinutes?: number;
}

/** The i-th POST body of a load of `count` items. */
export interface ItemBodies {
  count: number;
  bodyAt: (i: number) => string;
}

export async function ingestThroughHttp(
  s: Server,
  kbId: string,
  items: ItemBodies,
  problems: string[],
  { connections: ingestConnections, pollMs, embedderCalls, boundMinutes = 30 }: IngestOptions,
) {
  const overdue = () => performance.now() - tStart > boundMinutes * 60_000;
  const progress: { t: number; chunks: number; queue: number; rss: number }[] = [];
  const tStart = performance.now();
  let acksDone = false;
  let indexedAt = 0;
  const poller = (async () => {
    for (;;) {
      await Bun.sleep(pollMs);
      const m = await tryScrapeMetrics(s.base);
      if (!m) continue;
      const chunks = metricSum(m, 'kb_chunks');
      const queue = metricSum(m, 'kb_ingestion_queue_depth');
      progress.push({ t: (performance.now() - tStart) / 1000, chunks, queue, rss: rssOf(s.pid) });
      if (acksDone && queue === 0 && metricSum(m, 'kb_contents{status="pending"}') + metricSum(m, 'kb_contents{status="processing"}') === 0) {
        indexedAt = performance.now();
        return { chunks, failed: metricSum(m, 'kb_contents{status="failed"}') };
      }
      if (overdue()) throw new Error(`not indexed after ${boundMinutes} minutes`);
    }
  })();
  const acks = await cannon(
    s,
    { route: 'POST contents', method: 'POST', path: `/api/v1/knowledge-bases/${kbId}/contents`, bodyAt: items.bodyAt },
    ingestConnections,
    { amount: items.count },
  );
  const ackSeconds = (performance.now() - tStart) / 1000;
  acksDone = true;
  const final = await poller;
  const indexedSeconds = (indexedAt - tStart) / 1000;
  // The HNSW graph is built in the background after indexing; searches are exact until it is done.
  let graphSeconds = 0;
  for (;;) {
    const pending = metricSum(await scrapeMetrics(s.base), 'kb_vectors_graph_pending');
    if (pending === 0) break;
    await Bun.sleep(1000); // seldom, like a metrics scraper: an idle server builds faster
    if (overdue()) throw new Error(`HNSW graph not built after ${boundMinutes} minutes`);
  }
  graphSeconds = (performance.now() - indexedAt) / 1000;
  if (acks.non2xx || acks.errors) problems.push(`ingestion: ${acks.non2xx} non-2xx answers and ${acks.errors} errors out of ${items.count} POSTs`);
  if (final.failed) problems.push(`ingestion: ${final.failed} items failed`);
  const out = {
    items: items.count,
    chunks: final.chunks,
    failed: final.failed,
    connections: ingestConnections,
    ackSeconds,
    acksPerSecond: acks.ok / ackSeconds,
    ackLatency: acks.latency,
    /** Server process CPU during the acknowledgements, in cores (worker threads included). */
    serverCoresDuringAcks: acks.serverCores,
    benchCoresDuringAcks: acks.clientCores,
    indexedSeconds,
    itemsIndexedPerSecond: items.count / indexedSeconds,
    chunksIndexedPerSecond: final.chunks / indexedSeconds,
    graphSeconds,
    embedderCalls: embedderCalls?.(),
    progress,
  };
  console.log(
    `  ${fmtInt(acks.ok)} acknowledged in ${ackSeconds.toFixed(1)} s = ${fmtInt(out.acksPerSecond)} acks/s (c=${ingestConnections}, p50 ${fmtMs(acks.latency.p50)} ms, p99 ${fmtMs(acks.latency.p99)} ms); ` +
      `${fmtInt(final.chunks)} chunks indexed in ${indexedSeconds.toFixed(1)} s = ${fmtInt(out.chunksIndexedPerSecond)} chunks/s (${fmtInt(out.itemsIndexedPerSecond)} items/s); ` +
      `HNSW graph done ${graphSeconds.toFixed(1)} s later; ${final.failed} failed; server CPU ${acks.serverCores.toFixed(2)} cores, this process (autocannon + embedder stub) ${acks.clientCores.toFixed(2)} cores`,
  );
  return out;
}
