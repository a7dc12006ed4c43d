// Prometheus metrics (prom-client): requests and latency by route and status, ingestion queue,
// contents by status, ingestion progress (chunks waiting, pace, time left), chunks and vectors per knowledge base type, embedding batch latency, log
// size, worker crashes, plus the process defaults.
import client from 'prom-client';
import type { Engine, ReplicationStatus } from '../../engine';
import type { SnapshotStatus } from '../../snapshots';

// The process defaults (CPU, memory, event loop lag, GC) are collected once per process: each
// collection starts an event-loop monitor and a GC observer that are never stopped, and a test
// process runs many servers. Every server's /metrics shows them.
let processDefaults: client.Registry | undefined;
function processRegistry(): client.Registry {
  if (!processDefaults) {
    processDefaults = new client.Registry();
    client.collectDefaultMetrics({ register: processDefaults, prefix: 'kb_' });
    for (const name of HEAP_WALKING_DEFAULTS) processDefaults.removeSingleMetric(name);
  }
  return processDefaults;
}

/**
 * Defaults whose reading walks the whole JavaScript heap in Bun (v8.getHeapSpaceStatistics):
 * 40–130 ms of the main thread per scrape at 30k chunks, growing with the heap, which stalled
 * requests and took a quarter of the main thread of a bulk load read every 500 ms.
 * kb_nodejs_heap_size_*_bytes (process.memoryUsage) stays.
 */
const HEAP_WALKING_DEFAULTS = ['total', 'used', 'available'].map((k) => `kb_nodejs_heap_space_size_${k}_bytes`);

export class Metrics {
  readonly registry = new client.Registry();
  // Collected from the first server on, as from the start of a server process.
  private readonly processDefaults = processRegistry();
  private readonly requests = new client.Counter({
    name: 'kb_http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new client.Histogram({
    name: 'kb_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  private readonly batches = new client.Histogram({
    name: 'kb_embedding_batch_duration_seconds',
    help: 'Time of one ingestion batch in a worker (chunking, analysis, embedding), by model',
    labelNames: ['model'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly batchChunks = new client.Counter({
    name: 'kb_chunks_embedded_total',
    help: 'Chunks processed by the ingestion workers, by model',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });

  constructor(engine: () => Engine | undefined, snapshots: () => SnapshotStatus | undefined = () => undefined) {
    const registry = this.registry;
    // One engine reading per scrape, shared by every gauge (each reading walks all content items).
    const reading = () => (this.reading ??= engine()?.metrics());
    const gauge = (name: string, help: string, labelNames: string[], collect: (g: client.Gauge<string>, e: Awaited<ReturnType<Engine['metrics']>>) => void) =>
      new client.Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        async collect() {
          const m = await reading();
          if (!m) return;
          this.reset();
          collect(this, m);
        },
      });
    gauge('kb_ingestion_queue_depth', 'Content items waiting for or in ingestion', [], (g, m) => g.set(m.queueDepth));
    gauge('kb_ingestion_chunks_waiting', 'Chunks of pending and processing items (estimated from their text length)', [], (g, m) =>
      g.set(m.ingestion.chunksWaiting),
    );
    gauge('kb_ingestion_chunks_per_second', 'Chunks indexed per second over the last minute', [], (g, m) => g.set(m.ingestion.chunksPerSecond));
    gauge('kb_ingestion_eta_seconds', "Seconds until the waiting chunks are indexed at the last minute's pace (-1: no pace yet)", [], (g, m) =>
      g.set(m.ingestion.etaSeconds ?? -1),
    );
    gauge('kb_contents', 'Content items by status', ['status'], (g, m) => {
      for (const [status, n] of Object.entries(m.contentsByStatus)) g.set({ status }, n);
    });
    gauge('kb_knowledge_bases', 'Knowledge bases by type', ['type'], (g, m) => {
      for (const [type, t] of Object.entries(m.byType)) g.set({ type }, t.knowledgeBases);
    });
    gauge('kb_chunks', 'Searchable chunks by knowledge base type', ['type'], (g, m) => {
      for (const [type, t] of Object.entries(m.byType)) g.set({ type }, t.chunks);
    });
    gauge('kb_vectors', 'Stored vectors by knowledge base type', ['type'], (g, m) => {
      for (const [type, t] of Object.entries(m.byType)) g.set({ type }, t.vectors);
    });
    gauge('kb_vectors_graph_pending', 'Vectors not yet in the HNSW graph (searched exactly meanwhile)', ['type'], (g, m) => {
      for (const [type, t] of Object.entries(m.byType)) g.set({ type }, t.graphPending);
    });
    gauge('kb_wal_bytes', 'Size of the write-ahead log', [], (g, m) => g.set(m.walBytes));
    gauge(
      'kb_text_store_bytes',
      'Bytes of the text store file: texts of current or searchable versions (live), and of versions replaced or deleted since (dead)',
      ['state'],
      (g, m) => {
        g.set({ state: 'live' }, m.textBytes.live);
        g.set({ state: 'dead' }, m.textBytes.dead);
      },
    );
    gauge('kb_reembed_knowledge_bases', 'Knowledge bases being re-embedded for the model now serving their type', [], (g, m) =>
      g.set(m.reembedding.knowledgeBases),
    );
    gauge('kb_reembed_items_done', 'Items of knowledge bases being re-embedded whose newest version is built for the new configuration', [], (g, m) =>
      g.set(m.reembedding.done),
    );
    gauge('kb_reembed_items_total', 'Items of knowledge bases being re-embedded', [], (g, m) => g.set(m.reembedding.total));
    // Cluster mode only (absent on a single node). One question to NATS serves the four gauges of a scrape.
    let asked: { at: number; status: Promise<ReplicationStatus | undefined> } | undefined;
    const replicationNow = () => {
      if (!asked || Date.now() - asked.at > 500)
        asked = {
          at: Date.now(),
          status:
            engine()
              ?.replication()
              .catch(() => undefined) ?? Promise.resolve(undefined),
        };
      return asked.status;
    };
    const replication = (name: string, help: string, value: (r: ReplicationStatus) => number) =>
      new client.Gauge({
        name,
        help,
        registers: [registry],
        async collect() {
          const r = await replicationNow();
          this.reset();
          if (r) this.set(value(r));
        },
      });
    replication('kb_cluster_applied_sequence', 'The newest log record applied on this node', (r) => r.appliedSeq);
    replication('kb_cluster_stream_sequence', 'The newest record in the cluster log stream', (r) => r.streamSeq);
    replication('kb_cluster_lag_records', 'Log records not yet applied on this node', (r) => r.lag);
    replication('kb_cluster_jobs_waiting', 'Indexing jobs queued for the shards this node holds, not yet taken by a node', (r) => r.jobsWaiting);
    replication('kb_cluster_shards_held', 'Shards whose knowledge bases this node holds', (r) => r.shards.held.length);
    replication('kb_cluster_live_nodes', 'Nodes announcing themselves alive, this one included', (r) => r.liveNodes.length);
    const snapshotGauge = (name: string, help: string, value: (s: SnapshotStatus) => number | undefined) =>
      new client.Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          const s = snapshots();
          const v = s ? value(s) : undefined;
          if (v !== undefined) this.set(v);
        },
      });
    snapshotGauge('kb_snapshot_age_seconds', 'Seconds since the last successful snapshot', (s) =>
      s.lastSuccessAt ? (Date.now() - Date.parse(s.lastSuccessAt)) / 1000 : undefined,
    );
    snapshotGauge('kb_snapshot_failures_total', 'Snapshots (or store uploads) that failed since start', (s) => s.failures);
    snapshotGauge('kb_snapshot_consecutive_failures', 'Failures since the last success (0 when healthy)', (s) => s.consecutiveFailures);
    snapshotGauge('kb_snapshot_last_seq', 'Log position covered by the newest snapshot', (s) => s.lastSeq);
    snapshotGauge('kb_snapshot_duration_ms', 'Duration of the last successful snapshot', (s) => s.lastDurationMs);
    gauge('kb_worker_crashes', 'Ingestion workers replaced after a crash since start', [], (g, m) => g.set(m.workerCrashes));
  }

  // Labelled children per (method, route, status), so a request does not hash its label set.
  private readonly requestSeries = new Map<
    string,
    { count: ReturnType<client.Counter<string>['labels']>; latency: ReturnType<client.Histogram<string>['labels']> }
  >();

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      const labels = { method, route, status: String(status) };
      series = { count: this.requests.labels(labels), latency: this.latency.labels(labels) };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    series.latency.observe(seconds);
  }

  observeBatch(model: string, chunks: number, seconds: number): void {
    this.batches.observe({ model }, seconds);
    this.batchChunks.inc({ model }, chunks);
  }

  private reading: ReturnType<Engine['metrics']> | undefined;

  async render(): Promise<{ body: string; contentType: string }> {
    try {
      return { body: await client.Registry.merge([this.registry, this.processDefaults]).metrics(), contentType: this.registry.contentType };
    } finally {
      this.reading = undefined;
    }
  }
}
