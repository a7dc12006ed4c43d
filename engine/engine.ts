// The search engine as a library, no HTTP: callers pass the organization that owns each resource
// (another organization's behave as absent). This façade wires the parts, each owning one concern:
// the log (log/), the state machine and its state (state/), the write methods (methods/), the
// ingestion queue (ingest/), background graph building (vector/graph-pacer.ts), search (search/).
import { join } from 'node:path';
import { analyze } from './analysis/analyzer';
import type { EmbeddingSpec } from './embedding/provider';
import { OriginalsStore } from './files/originals';
import { Compute } from './ingest/compute';
import { progressOf, type IngestionProgress } from './ingest/progress';
import { JetStreamJobs, type IndexingJob } from './ingest/jetstream-jobs';
import { buildKey, IngestionQueue, unbuiltItems, unfinishedItems } from './ingest/queue';
import { ContentWaiters } from './ingest/waiters';
import type { ChunkHit, ContentItem, KnowledgeBase } from './kb/knowledge-base';
import { decodePayload, encodePayload } from './log/codec';
import { JetStreamLog } from './log/jetstream-log';
import type { LogEntry, LogRange, RecordLog } from './log/log';
import { SegmentLog } from './log/segment-log';
import { searchFullText } from './search/full-text';
import { needsQueryVector, searchHybrid, type HybridHit, type HybridOptions } from './search/hybrid';
import { queryVector } from './search/query-vector';
import { searchSemantic } from './search/semantic';
import { checkOrgQuota, kbOf, type EngineCore } from './methods/core';
import * as contents from './methods/contents';
import * as kbs from './methods/knowledge-bases';
import * as reembedding from './methods/reembed';
import type { KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from './records';
import { LiveState } from './state/live-state';
import type { Quotas } from './state/quotas';
import { collectMetrics, countState, reembedSummary, type EngineMetrics } from './state/metrics';
import { GraphPacer } from './vector/graph-pacer';
import { LiveNodes, type NodeEntry } from './cluster/live-nodes';
import { ShardSet } from './shards';
import type { EngineOptions, NewContent, RecoveryReport, ReplicationStatus, SearchRequest } from './options';

export class Engine {
  private readonly state: LiveState;
  private readonly waiters = new ContentWaiters();
  private readonly pacer: GraphPacer;
  private log!: RecordLog;
  private compute!: Compute;
  private ingestion!: IngestionQueue;
  /** Cluster mode: the shared stream this node follows (the same object as `log`). */
  private stream: JetStreamLog | undefined;
  /** Cluster mode: the indexing jobs every node shares (undefined on a single node). */
  private jobs: JetStreamJobs | undefined;
  /** Cluster mode: the live nodes and their shards (where requests for other shards go). */
  private liveNodes: LiveNodes | undefined;
  /** The knowledge bases whose content this node holds (all on a single node). */
  readonly shards: ShardSet;
  private ingestionStarted = false;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** Items pending at the last sweep (key → version). */
  private pendingAtLastSweep = new Map<string, number>();
  /** What the write methods (engine/methods) work on. */
  private readonly core: EngineCore;
  private closed = false;
  private readonly closers: (() => Promise<void>)[] = [];
  recovery!: RecoveryReport;

  private constructor(private readonly options: EngineOptions) {
    const originals = new OriginalsStore(join(options.dataDir, 'files'));
    const shards = (this.shards = options.cluster?.shards ?? ShardSet.all());
    this.pacer = new GraphPacer(() => this.state.kbs.values(), options.idle);
    this.state = new LiveState({
      originals,
      graphThreshold: options.graphThreshold,
      discard: (task) => task.catch((err) => this.say('warn', 'could not remove stored files', { error: String(err) })),
      onVectorsAdded: () => this.recovery && this.pacer.schedule(), // once open: not during replay
      holds: shards.holdsAll ? undefined : (kbId) => shards.holds(kbId),
    });
    this.core = {
      state: this.state,
      originals,
      quotas: options.quotas,
      commit: (record, attachment) => this.commit(record, attachment),
      enqueue: (kbId, id, version, configId) => this.enqueue(kbId, id, version, configId),
    };
  }

  private say(level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>): void {
    (this.options.log ?? ((l, m, d) => console[l](m, d ?? '')))(level, message, details);
  }

  /** Open from the starting point (a snapshot, see snapshots/), then the log after it. */
  static async open(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options);
    const started = performance.now();
    const start = await options.startFrom?.();
    start?.replay((record, attachment) => engine.state.apply(record, attachment));
    // A snapshot holding more shards than this node (its content was skipped above): their graphs too.
    for (const g of start?.graphs ?? []) if (engine.shards.holds(g.kbId)) engine.state.kbs.get(g.kbId)?.attachGraph(g.path);
    const fromSnapshotMs = Math.round(performance.now() - started);
    let records = 0;
    const { cluster } = options;
    if (cluster) {
      // Every node follows the one stream: records it appends itself and those of other nodes are
      // applied alike, in stream order, as they arrive.
      engine.log = engine.stream = await JetStreamLog.open(
        { servers: cluster.servers, auth: cluster.natsAuth, stream: cluster.stream, replicas: cluster.replicas, shards: engine.shards.count, onStopped: (err) => engine.fatal('the replicated log stopped', err) },
        (entry) => {
          if (engine.applyLogged(entry) && !engine.recovery) records++;
        },
        start?.seq,
      );
      engine.jobs = await JetStreamJobs.open({ servers: cluster.servers, auth: cluster.natsAuth, stream: `${cluster.stream}_JOBS`, replicas: cluster.replicas, ackWaitMs: cluster.jobAckWaitMs, shards: engine.shards });
      engine.liveNodes = await LiveNodes.open({
        servers: cluster.servers,
        auth: cluster.natsAuth,
        bucket: `${cluster.stream}_NODES`,
        replicas: cluster.replicas,
        self: { nodeId: cluster.nodeId ?? 'node', url: cluster.advertiseUrl ?? '', shards: [...engine.shards.held] },
        heartbeatMs: cluster.heartbeatMs,
        log: (m, d) => engine.say('warn', m, d),
      });
    } else {
      engine.log = await SegmentLog.open(
        { dir: join(options.dataDir, 'wal'), segmentBytes: options.walSegmentBytes, afterSeq: start?.seq, warn: (m, d) => engine.say('warn', m, d) },
        (entry) => {
          engine.applyLogged(entry);
          records++;
        },
      );
    }
    engine.compute = new Compute({ documentWorkers: 1, ...options.compute });
    engine.ingestion = new IngestionQueue({
      knowledgeBases: engine.state.kbs,
      compute: engine.compute,
      commit: engine.core.commit,
      batchItems: options.batchItems,
      embeddingRetry: options.embeddingRetry,
      onBatch: options.onBatch,
      onBuilt: (kbId) => engine.activateIfBuilt(kbId),
      log: (l, m, d) => engine.say(l, m, d),
      held: options.holdIngestion,
    });
    const requeued = engine.jobs ? engine.publishUnfinished() : engine.ingestion.requeueUnfinished();
    // A build whose last result was logged just before a stop is complete: activate it now.
    for (const kb of engine.state.kbs.values()) if (kb.building && engine.shards.holds(kb.id)) engine.activateIfBuilt(kb.id);
    engine.recovery = {
      snapshot: start ? { seq: start.seq, records: start.records, millis: fromSnapshotMs } : undefined,
      records,
      ...countState(engine.state.kbs),
      requeued,
      millis: Math.round(performance.now() - started),
    };
    engine.pacer.schedule();
    if (!options.holdIngestion) engine.startIngestion();
    return engine;
  }

  private fatal(message: string, err: unknown): void {
    this.say('error', message, { error: String(err) });
    this.options.onFatal?.(err);
  }

  /** Apply a logged record (replayed at start-up, or delivered by the stream in cluster mode, appended by any node); whether it applied. */
  private applyLogged({ payload }: LogEntry): boolean {
    const { record, attachment } = decodePayload<LogRecord>(payload);
    const applied = this.state.apply(record, attachment);
    if (applied) this.notifyWaiters(record);
    return applied;
  }

  /** `?wait=true` answers once the item's outcome is applied and would survive a crash. */
  private notifyWaiters(record: LogRecord): void {
    if (record.t === 'content.indexed' || record.t === 'content.failed' || record.t === 'content.delete') {
      this.waiters.notify(record.kbId, record.id, this.state.kbs.get(record.kbId)?.contents.get(record.id));
    }
  }

  /** Queue a version for indexing (see EngineCore.enqueue): here, or in cluster mode in the shared job queue. */
  private async enqueue(kbId: string, id: string, version: number, configId?: string): Promise<void> {
    const queue = (config?: string) => (this.jobs ? this.publishJob(kbId, id, config) : this.ingestion.enqueue(kbId, id, version, undefined, config));
    if (configId) return queue(configId);
    await queue();
    // Written while another configuration is built: it must hold this version too before it takes over.
    const building = this.state.kbs.get(kbId)?.building?.id;
    if (building) await queue(building);
  }

  /** Cluster mode: queue the item's newest version for whichever node has room. */
  private async publishJob(kbId: string, id: string, configId?: string): Promise<void> {
    const item = this.state.kbs.get(kbId)?.contents.get(id);
    if (!item) return;
    // Everything applied so far includes the record that made this version.
    await this.jobs!.publish({ kbId, id, version: item.current.version, seq: this.log.lastSequence, ...(configId ? { configId } : {}) });
  }

  /** Cluster mode, at start-up: jobs again for every unfinished item and build (a job stored within two minutes is not stored twice). */
  private publishUnfinished(): number {
    const jobs: { kbId: string; id: string; configId?: string }[] = [
      ...[...unfinishedItems(this.state.kbs)].map(({ kbId, item }) => ({ kbId, id: item.id })),
      ...[...unbuiltItems(this.state.kbs)].map(({ kbId, item, configId }) => ({ kbId, id: item.id, configId })),
    ];
    void (async () => {
      for (const job of jobs) await this.publishJob(job.kbId, job.id, job.configId);
    })().catch((err) => this.say('warn', 'could not queue unfinished items again', { error: String(err) }));
    return jobs.length;
  }

  /** Cluster mode: take a job pulled from the shared queue once its version is applied here. */
  private takeJob(job: IndexingJob, settle: (outcome: 'done' | 'failed') => void): void {
    this.stream!.whenFollowed(job.seq).then(
      () => {
        const kb = this.state.kbs.get(job.kbId);
        const item = kb?.contents.get(job.id);
        const set = kb?.indexSet(job.configId);
        const status = item && set && kb!.statusIn(set, item);
        if (!item || !set || item.current.version !== job.version || status === 'ready' || status === 'failed') return settle('done');
        this.ingestion.enqueue(job.kbId, job.id, job.version, settle, job.configId);
      },
      () => settle('failed'),
    );
  }

  /** A build may be complete: activate it (errors are logged; the next result or start-up tries again). */
  private activateIfBuilt(kbId: string): void {
    void reembedding.activateIfBuilt(this.core, kbId).then(
      (activated) => activated && this.say('info', 're-embedding complete: the new configuration answers searches', { kbId, configurationId: this.state.kbs.get(kbId)?.record.config.id }),
      (err) => this.say('warn', 'could not activate a re-embedded configuration', { kbId, error: String(err) }),
    );
  }

  /**
   * Apply a record and make it durable. State changes in memory at once (in log order); the
   * promise resolves when the record is durable, which is when the caller may acknowledge it.
   */
  private async commit(record: LogRecord, attachment?: Uint8Array): Promise<number> {
    if (this.closed) throw new Error('engine is closed');
    // Cluster mode: applied (by applyLogged, in stream order) once the append resolves.
    if (this.options.cluster) return this.log.append(encodePayload(record, attachment), this.partitionOf(record));
    const durable = this.log.append(encodePayload(record, attachment));
    const applied = this.state.apply(record, attachment);
    const seq = await durable.catch((err) => {
      this.fatal('write-ahead log write failed; no further writes are accepted', err);
      throw err;
    });
    if (applied) this.notifyWaiters(record);
    return seq;
  }

  /** Cluster mode: the stream subject a record goes to (content by its knowledge base's shard). */
  private partitionOf(record: LogRecord): string {
    return record.t.startsWith('content.') ? `s${this.shards.shardOf((record as { kbId: string }).kbId)}` : 'kb';
  }

  // --- what snapshots need (snapshots/snapshotter.ts) -----------------------------------------------

  /** Sequence number of the newest log record. */
  get lastSequence(): number {
    return this.log.lastSequence;
  }

  logBytes = (): Promise<number> => this.log.sizeBytes();

  /** Seal the log written so far; resolves with the last sealed sequence number. */
  sealLog(): Promise<number> {
    if (this.closed) return Promise.reject(new Error('engine is closed'));
    return this.log.roll();
  }

  /** Sealed log records (afterSeq, throughSeq], readable from a worker thread (readLogRange). */
  logRange(afterSeq: number, throughSeq: number): LogRange {
    return this.log.range(afterSeq, throughSeq);
  }

  /** Remove log records a snapshot at `seq` covers; resolves with the log parts removed. */
  truncateLog(seq: number): Promise<number> {
    // Cluster mode: the stream is shared. Purged only when snapshots are in a store every node can
    // start from, and with a margin for nodes a little behind; a node whose own snapshot is older
    // than what is left starts from the store's newest snapshot (LogGapError at open).
    const cluster = this.options.cluster;
    if (cluster) {
      if (!cluster.purge) return Promise.resolve(0);
      return (async () => {
        const floor = cluster.purgeFloor ? Math.min(seq, await cluster.purgeFloor()) : seq;
        const below = floor + 1 - (cluster.purgeMarginRecords ?? 10_000);
        return below > 1 ? this.log.truncateBefore(below) : 0;
      })();
    }
    return this.log.truncateBefore(seq + 1);
  }

  /** Knowledge bases with fewer vectors keep no HNSW graph (in memory or in snapshots). */
  get graphThreshold(): number {
    return this.state.graphThreshold;
  }

  /** Save every in-memory HNSW graph (to `pathOf(kbId)`), with the documents each holds. */
  saveGraphs(pathOf: (kbId: string) => string): { kbId: string; path: string; docs: number[] }[] {
    return this.state.saveGraphs(pathOf);
  }

  // --- knowledge bases (methods/knowledge-bases.ts) -------------------------------------------

  /** Throws QuotaExceededError at the organization's limit (writes check too; callers may check early). */
  checkQuota(orgId: string, quota: keyof Quotas): void {
    checkOrgQuota(this.core, orgId, quota);
  }

  listKnowledgeBases(orgId: string): KnowledgeBaseRecord[] {
    return kbs.listKnowledgeBases(this.core, orgId);
  }

  getKnowledgeBase(orgId: string, kbId: string): KnowledgeBaseRecord | undefined {
    return kbOf(this.core, orgId, kbId)?.record;
  }

  createKnowledgeBase(orgId: string, input: Parameters<typeof kbs.createKnowledgeBase>[2]): Promise<KnowledgeBaseRecord> {
    return kbs.createKnowledgeBase(this.core, orgId, input);
  }

  updateKnowledgeBase(orgId: string, kbId: string, change: { name: string; description?: string }): Promise<boolean> {
    return kbs.updateKnowledgeBase(this.core, orgId, kbId, change);
  }

  deleteKnowledgeBase(orgId: string, kbId: string): Promise<boolean> {
    return kbs.deleteKnowledgeBase(this.core, orgId, kbId);
  }

  // --- re-embedding (methods/reembed.ts) ---------------------------------------------------------

  /** Build `config` for the knowledge base (the model serving its type changed); undefined when there is no such knowledge base. */
  reembed(orgId: string, kbId: string, config: Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>): Promise<reembedding.ReembedStart | undefined> {
    return reembedding.reembed(this.core, orgId, kbId, config);
  }

  /**
   * Every knowledge base whose content is held here and that indexes otherwise than `wanted` says
   * (the operator changed the model of its type) starts a build of that; the ids of those started.
   */
  async reembedChanged(wanted: (kb: KnowledgeBaseRecord) => Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>): Promise<string[]> {
    const started: string[] = [];
    for (const kb of [...this.state.kbs.values()]) {
      if (!this.shards.holds(kb.id)) continue;
      if ((await this.reembed(kb.record.orgId, kb.id, wanted(kb.record))) === 'started') started.push(kb.id);
    }
    return started;
  }

  /** Where the knowledge base's re-embedding stands; undefined when none is under way (or no such knowledge base). */
  reembedProgress(orgId: string, kbId: string): reembedding.ReembedProgress | undefined {
    const building = kbOf(this.core, orgId, kbId)?.building;
    return building && reembedding.reembedProgress(this.core, kbId, this.ingestion.throughput.perSecond(buildKey(kbId, building.id)));
  }

  /** Knowledge bases being re-embedded here, and their items built so far of all. */
  reembedSummary(): EngineMetrics['reembedding'] {
    return reembedSummary(this.state.kbs.values());
  }

  /** The configuration being built for the knowledge base, if any. */
  buildingConfiguration(orgId: string, kbId: string): KnowledgeBaseConfig | undefined {
    return kbOf(this.core, orgId, kbId)?.building;
  }

  // --- contents (methods/contents.ts) -----------------------------------------------------------

  listContents(orgId: string, kbId: string, offset: number, limit: number): { items: ContentItem[]; total: number } | undefined {
    const kb = kbOf(this.core, orgId, kbId);
    return kb && { items: kb.listContents(offset, limit), total: kb.contentCount };
  }

  getContent(orgId: string, kbId: string, contentId: string): ContentItem | undefined {
    return kbOf(this.core, orgId, kbId)?.contents.get(contentId);
  }

  addContent(orgId: string, kbId: string, input: NewContent): Promise<ContentItem | undefined> {
    return contents.addContent(this.core, orgId, kbId, input);
  }

  /** The text extracted from an uploaded file; the file (moved from `filePath`) is kept as the item's original. */
  addFileContent(orgId: string, kbId: string, filePath: string, input: Parameters<typeof contents.addFileContent>[4]): Promise<ContentItem | undefined> {
    return contents.addFileContent(this.core, orgId, kbId, filePath, input);
  }

  /** Replace the text (and the metadata, when given). Undefined when the item does not exist. */
  updateContent(orgId: string, kbId: string, contentId: string, input: Parameters<typeof contents.updateContent>[4]): Promise<ContentItem | undefined> {
    return contents.updateContent(this.core, orgId, kbId, contentId, input);
  }

  deleteContent(orgId: string, kbId: string, contentId: string): Promise<boolean> {
    return contents.deleteContent(this.core, orgId, kbId, contentId);
  }

  /** Index a failed item again (its newest version); undefined when there is no such item. */
  reindexContent(orgId: string, kbId: string, contentId: string): Promise<ContentItem | undefined> {
    return contents.reindexContent(this.core, orgId, kbId, contentId);
  }

  /** Index every failed item of a knowledge base again; the number queued, undefined when no such knowledge base. */
  reindexFailed(orgId: string, kbId: string): Promise<number | undefined> {
    return contents.reindexFailed(this.core, orgId, kbId);
  }

  /** Resolve once the item's current version is ready or failed (or deleted), or at the timeout. */
  waitForContent(item: ContentItem, timeoutMs: number): Promise<void> {
    return this.waiters.wait(item, timeoutMs);
  }

  // --- ingestion ------------------------------------------------------------------------------

  /** Items by status, chunks waiting, pace over the last minute and time left. */
  ingestionProgress(orgId: string, kbId: string): IngestionProgress | undefined {
    const kb = kbOf(this.core, orgId, kbId);
    return kb && progressOf([kb], this.ingestion.throughput.perSecond(kbId));
  }

  /** Start sending queued content to the workers (once the models are loaded, with holdIngestion); in cluster mode, join the live nodes. */
  startIngestion(): void {
    this.ingestion.start();
    if (this.ingestionStarted) return;
    this.ingestionStarted = true;
    // Cluster mode: the node serves from now on; other nodes may forward requests to it.
    this.liveNodes?.announce();
    const room = () => this.compute.documents.size * (this.options.batchItems ?? 16) * 2 - this.ingestion.depth;
    this.jobs?.start(room, (job, settle) => this.takeJob(job, settle));
    if (this.jobs) {
      let sweeping = false;
      this.sweepTimer = setInterval(() => {
        if (sweeping) return;
        sweeping = true;
        this.sweepLostJobs()
          .catch((err) => this.say('warn', 'could not look for lost indexing jobs', { error: String(err) }))
          .finally(() => (sweeping = false));
      }, this.options.cluster?.jobSweepMs ?? 30_000);
      this.sweepTimer.unref?.();
    }
  }

  /**
   * Cluster mode: an item logged by a node that died before queuing its job would stay pending
   * for ever. Items pending at two sweeps in a row with no job in the queue get one, once this
   * node has applied the stream as far as it reached when the job was found missing (so a job
   * acknowledged meanwhile has its result applied here first).
   */
  private async sweepLostJobs(): Promise<void> {
    const pendingNow = new Map<string, number>();
    const suspects: { kbId: string; id: string; version: number; configId?: string }[] = [];
    // Pending for the active configuration, or for one being built.
    const pending = [...unfinishedItems(this.state.kbs)].filter(({ item }) => item.status === 'pending').map((p) => ({ ...p, configId: undefined as string | undefined }));
    for (const { kbId, item, configId } of [...pending, ...unbuiltItems(this.state.kbs)]) {
      const key = `${kbId}/${item.id}/${configId ?? ''}`;
      pendingNow.set(key, item.current.version);
      if (this.pendingAtLastSweep.get(key) === item.current.version && suspects.length < 1000) suspects.push({ kbId, id: item.id, version: item.current.version, configId });
    }
    this.pendingAtLastSweep = pendingNow;
    const missing = [];
    for (const s of suspects) if (!(await this.jobs!.has(s.kbId, s.id))) missing.push(s);
    if (missing.length === 0) return;
    const stream = this.stream!;
    await stream.whenFollowed(await stream.streamLastSequence());
    let queued = 0;
    for (const m of missing) {
      const kb = this.state.kbs.get(m.kbId);
      const item = kb?.contents.get(m.id);
      const set = kb?.indexSet(m.configId);
      if (!item || !set || kb!.statusIn(set, item) !== 'pending' || item.current.version !== m.version) continue;
      await this.publishJob(m.kbId, m.id, m.configId);
      queued++;
    }
    if (queued > 0) this.say('info', 'queued indexing jobs found missing', { queued });
  }

  /** Load a model in every worker ahead of the first request; resolves with the load time. */
  preloadModel(spec: EmbeddingSpec): Promise<number> {
    return this.compute.preload(spec);
  }

  // --- shards (cluster mode) --------------------------------------------------------------------

  /** Cluster mode: resolves true once the stream is applied up to `seq`, false after `timeoutMs` (single node: at once). */
  whenApplied(seq: number, timeoutMs: number): Promise<boolean> {
    return this.stream ? this.stream.waitFollowed(seq, timeoutMs) : Promise.resolve(true);
  }

  /**
   * Where requests about a knowledge base are answered: here, or (its shard held elsewhere) by one
   * of the live nodes listed, in the order to try them.
   */
  routeOf(kbId: string): { here: true } | { here: false; shard: number; nodes: NodeEntry[] } {
    if (this.shards.holds(kbId)) return { here: true };
    const shard = this.shards.shardOf(kbId);
    return { here: false, shard, nodes: this.liveNodes?.holding(shard) ?? [] };
  }

  // --- search ---------------------------------------------------------------------------------

  searchFullText(orgId: string, kbId: string, req: SearchRequest): ChunkHit[] | undefined {
    const kb = kbOf(this.core, orgId, kbId);
    return kb && searchFullText(kb, analyze(req.query), req.limit, req.filter);
  }

  /** Nearest chunks by cosine similarity. Throws EmbeddingError when the model fails. */
  async searchSemantic(orgId: string, kbId: string, req: SearchRequest): Promise<ChunkHit[] | undefined> {
    const kb = kbOf(this.core, orgId, kbId);
    return kb && searchSemantic(kb, await queryVector(this.compute, kb, req.query), req.limit, req.filter);
  }

  async searchHybrid(orgId: string, kbId: string, req: SearchRequest & HybridOptions): Promise<HybridHit[] | undefined> {
    const kb = kbOf(this.core, orgId, kbId);
    if (!kb) return undefined;
    const vector = needsQueryVector(req) ? await queryVector(this.compute, kb, req.query) : undefined;
    return searchHybrid(kb, analyze(req.query), vector, req.limit, req, req.filter);
  }

  // --- reports ----------------------------------------------------------------------------------

  /** Direct access for benchmarks and tests inside the process. */
  knowledgeBase = (kbId: string): KnowledgeBase | undefined => this.state.kbs.get(kbId);

  stats(): { knowledgeBases: number; contents: number; chunks: number; queueDepth: number } {
    return { ...countState(this.state.kbs), queueDepth: this.ingestion?.depth ?? 0 };
  }

  async metrics(): Promise<EngineMetrics> {
    return collectMetrics([...this.state.kbs.values()], this.ingestion.throughput.perSecond(), {
      queueDepth: this.ingestion.depth,
      walBytes: await this.log.sizeBytes(),
      workerCrashes: this.compute.documents.crashes + this.compute.queries.crashes,
    });
  }

  /** Cluster mode: applied vs stream position and queued indexing jobs (undefined on a single node). Rejects when NATS does not answer in time. */
  async replication(timeoutMs = 2000): Promise<ReplicationStatus | undefined> {
    const { stream, jobs } = this;
    if (!stream || !jobs) return undefined;
    const asked = Promise.all([stream.streamLastSequence(), jobs.depth()]);
    const timeout = Bun.sleep(timeoutMs).then(() => Promise.reject(new Error(`NATS did not answer within ${timeoutMs} ms`)));
    const [streamSeq, jobsWaiting] = await Promise.race([asked, timeout]);
    const appliedSeq = stream.lastSequence;
    return {
      appliedSeq,
      streamSeq,
      lag: Math.max(0, streamSeq - appliedSeq),
      jobsWaiting,
      jobsHere: this.ingestion.depth,
      shards: this.shards.toJSON(),
      liveNodes: this.liveNodes?.all() ?? [],
    };
  }

  /** Run `close` when the engine closes (before the log closes): parts built on the engine. */
  onClose = (close: () => Promise<void>): void => void this.closers.push(close);

  /** Stop ingestion and flush the log. In-flight items are indexed again at the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const close of this.closers) await close();
    clearInterval(this.sweepTimer);
    await this.liveNodes?.close();
    await this.jobs?.close();
    this.pacer.stop();
    this.ingestion.close();
    await this.compute.close();
    await this.log.close();
  }
}
