// The search engine as a library, no HTTP: callers pass the organization that owns each resource
// (another organization's behave as absent). The same in both deployment modes: what differs
// (the log, where indexing jobs wait, which shards are held) is the Node's (node/). This façade
// wires the parts, each owning one concern: the state machine and its state (state/), the write
// methods (methods/), the ingestion queue (ingest/), background graph building
// (vector/graph-pacer.ts), search (search/). Failures are EngineErrors with a code (errors.ts).
import { join } from 'node:path';
import { analyze } from './analysis/analyzer';
import type { EmbeddingSpec } from './embedding/provider';
import { EngineError } from './errors';
import { OriginalsStore } from './files/originals';
import { Compute } from './ingest/compute';
import { progressOf, type IngestionProgress } from './ingest/progress';
import { buildKey, IngestionQueue } from './ingest/queue';
import { ContentWaiters } from './ingest/waiters';
import type { ChunkHit, ContentItem, KnowledgeBase } from './kb/knowledge-base';
import type { LogRange } from './log/log';
import { checkOrgQuota, contentOf, heldKbOf, kbOf, type EngineCore } from './methods/core';
import * as contents from './methods/contents';
import * as kbs from './methods/knowledge-bases';
import * as reembedding from './methods/reembed';
import { openNode, type Node } from './node/open';
import { commitRecord } from './node/commit';
import type { KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from './records';
import { searchFullText } from './search/full-text';
import { needsQueryVector, searchHybrid, type HybridHit, type HybridOptions } from './search/hybrid';
import { queryVector } from './search/query-vector';
import { searchSemantic } from './search/semantic';
import { ShardSet } from './shards';
import { LiveState } from './state/live-state';
import { TextStore } from './text/text-store';
import { collectMetrics, countState, reembedSummary, type EngineMetrics } from './state/metrics';
import type { Quotas } from './state/quotas';
import { GraphPacer } from './vector/graph-pacer';
import type { EngineLog, EngineOptions, NewContent, RecoveryReport, ReplicationStatus, SearchRequest } from './options';

export class Engine {
  private readonly state: LiveState;
  private readonly texts: TextStore;
  private readonly waiters = new ContentWaiters();
  private readonly pacer: GraphPacer;
  private readonly compute: Compute;
  private readonly ingestion: IngestionQueue;
  /** The knowledge bases whose content this node holds (all on a single node). */
  readonly shards: ShardSet;
  /** What the methods (engine/methods) work on. */
  private readonly core: EngineCore;
  private readonly say: EngineLog;
  private node!: Node;
  private closed = false;
  private readonly closers: (() => Promise<void>)[] = [];
  recovery!: RecoveryReport;

  private constructor(private readonly options: EngineOptions) {
    this.say = options.log ?? ((l, m, d) => console[l](m, d ?? ''));
    const originals = new OriginalsStore(join(options.dataDir, 'files'));
    // Item texts out of the heap, rebuilt by every open from the log (engine/text/text-store.ts).
    this.texts = new TextStore(join(options.dataDir, 'text'));
    const shards = (this.shards = options.cluster?.shards ?? ShardSet.all());
    this.pacer = new GraphPacer(() => this.state.kbs.values(), options.idle);
    this.state = new LiveState({
      originals,
      graphThreshold: options.graphThreshold,
      discard: (task) => task.catch((err) => this.say('warn', 'could not remove stored files', { error: String(err) })),
      onVectorsAdded: () => this.recovery && this.pacer.schedule(), // once open: not during replay
      holds: shards.holdsAll ? undefined : (kbId) => shards.holds(kbId),
      texts: this.texts,
    });
    this.core = {
      state: this.state,
      originals,
      shards,
      routeOf: (kbId) => this.node.routeOf(kbId),
      quotas: options.quotas,
      commit: (r, a, check) => this.commit(r, a, check),
      enqueue: (kbId, id, version, configId) => this.enqueue(kbId, id, version, configId),
    };
    this.compute = new Compute({ documentWorkers: 1, ...options.compute });
    this.ingestion = new IngestionQueue({
      knowledgeBases: this.state.kbs,
      compute: this.compute,
      commit: this.core.commit,
      batchItems: options.batchItems,
      embeddingRetry: options.embeddingRetry,
      onBatch: options.onBatch,
      onBuilt: (kbId) => this.activateIfBuilt(kbId),
      log: this.say,
      held: true,
    });
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
    const room = () => engine.compute.documents.size * (options.batchItems ?? 16) * 2 - engine.ingestion.depth;
    engine.node = await openNode(
      options,
      room,
      {
        state: engine.state,
        ingestion: engine.ingestion,
        shards: engine.shards,
        apply: (record, attachment) => engine.state.apply(record, attachment),
        settled: (record) => engine.settled(record),
        say: engine.say,
        fatal: (message, err) => engine.fatal(message, err),
      },
      start?.seq,
    ).catch(async (err) => {
      // Nothing of a failed start stays behind (the server may try again from another snapshot).
      await engine.compute.close();
      engine.texts.close();
      throw err;
    });
    const requeued = engine.node.requeueUnfinished();
    // A build whose last result was logged just before a stop is complete: activate it now.
    for (const kb of engine.state.kbs.values()) if (kb.building && engine.shards.holds(kb.id)) engine.activateIfBuilt(kb.id);
    engine.recovery = {
      snapshot: start ? { seq: start.seq, records: start.records, millis: fromSnapshotMs } : undefined,
      records: engine.node.recovered,
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

  /** `?wait=true` answers once the item's outcome is applied and would survive a crash. */
  private settled(record: LogRecord): void {
    if (record.t === 'content.indexed' || record.t === 'content.failed' || record.t === 'content.delete') {
      this.waiters.notify(record.kbId, record.id, this.state.kbs.get(record.kbId)?.contents.get(record.id));
    }
  }

  /** Log a record and apply it, in both modes alike (node/commit.ts); resolves once it is durable and applied. */
  private commit(record: LogRecord, attachment?: Uint8Array, check?: () => boolean): Promise<number> {
    if (this.closed) return Promise.reject(new EngineError('ENGINE_CLOSED', 'The engine is closed'));
    return commitRecord(this.node, this.shards, record, attachment, check);
  }

  /** Queue a version for indexing (see EngineCore.enqueue); while another configuration is built, for it too. */
  private async enqueue(kbId: string, id: string, version: number, configId?: string): Promise<void> {
    if (configId) return this.node.queueJob({ kbId, id, version, configId });
    await this.node.queueJob({ kbId, id, version });
    const building = this.state.kbs.get(kbId)?.building?.id;
    if (building) await this.node.queueJob({ kbId, id, version, configId: building });
  }

  /** A build may be complete: activate it (errors are logged; the next result or start-up tries again). */
  private activateIfBuilt(kbId: string): void {
    void reembedding.activateIfBuilt(this.core, kbId).then(
      (activated) =>
        activated &&
        this.say('info', 're-embedding complete: the new configuration answers searches', {
          kbId,
          configurationId: this.state.kbs.get(kbId)?.record.config.id,
        }),
      (err) => this.say('warn', 'could not activate a re-embedded configuration', { kbId, error: String(err) }),
    );
  }

  // --- what snapshots need (snapshots/snapshotter.ts) -----------------------------------------------

  /** Sequence number of the newest log record applied. */
  get lastSequence(): number {
    return this.node.log.lastSequence;
  }

  logBytes = (): Promise<number> => this.node.log.sizeBytes();
  /** Seal the log written so far; resolves with the last sealed sequence number. */
  sealLog(): Promise<number> {
    return this.closed ? Promise.reject(new EngineError('ENGINE_CLOSED', 'The engine is closed')) : this.node.log.roll();
  }

  /** Sealed log records (afterSeq, throughSeq], readable from a worker thread (readLogRange). */
  logRange = (afterSeq: number, throughSeq: number): LogRange => this.node.log.range(afterSeq, throughSeq);
  /** Remove log records a snapshot at `seq` covers (as far as the mode allows); resolves with the log parts removed. */
  truncateLog = (seq: number): Promise<number> => this.node.truncateLog(seq);
  /** Knowledge bases with fewer vectors keep no HNSW graph (in memory or in snapshots). */
  get graphThreshold(): number {
    return this.state.graphThreshold;
  }
  /** Save every in-memory HNSW graph (to `pathOf(kbId)`), with the documents each holds. */
  saveGraphs = (pathOf: (kbId: string) => string) => this.state.saveGraphs(pathOf);

  // --- knowledge bases (methods/knowledge-bases.ts): on every node --------------------------------

  /** Throws QUOTA_EXCEEDED at the organization's limit (writes check too; callers may check early). */
  checkQuota = (orgId: string, quota: keyof Quotas): void => checkOrgQuota(this.core, orgId, quota);
  listKnowledgeBases = (orgId: string): KnowledgeBaseRecord[] => kbs.listKnowledgeBases(this.core, orgId);
  getKnowledgeBase = (orgId: string, kbId: string): KnowledgeBaseRecord => kbOf(this.core, orgId, kbId).record;
  createKnowledgeBase = (orgId: string, input: Parameters<typeof kbs.createKnowledgeBase>[2]) => kbs.createKnowledgeBase(this.core, orgId, input);
  updateKnowledgeBase = (orgId: string, kbId: string, change: { name: string; description?: string }) =>
    kbs.updateKnowledgeBase(this.core, orgId, kbId, change);
  deleteKnowledgeBase = (orgId: string, kbId: string): Promise<void> => kbs.deleteKnowledgeBase(this.core, orgId, kbId);

  // --- everything about a knowledge base's content: on the nodes holding its shard (SHARD_NOT_HELD elsewhere) ---

  /** Build `config` for the knowledge base (the model serving its type changed). */
  reembed = (orgId: string, kbId: string, config: Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>) => reembedding.reembed(this.core, orgId, kbId, config);

  /** Every knowledge base held here that indexes otherwise than `wanted` says starts a build of that; the ids of those started. */
  async reembedChanged(wanted: (kb: KnowledgeBaseRecord) => Omit<KnowledgeBaseConfig, 'id' | 'createdAt'>): Promise<string[]> {
    const started: string[] = [];
    for (const kb of [...this.state.kbs.values()]) {
      if (this.shards.holds(kb.id) && (await this.reembed(kb.record.orgId, kb.id, wanted(kb.record))) === 'started') started.push(kb.id);
    }
    return started;
  }

  /** Where the knowledge base's re-embedding stands; undefined when none is under way. */
  reembedProgress(orgId: string, kbId: string): reembedding.ReembedProgress | undefined {
    const building = heldKbOf(this.core, orgId, kbId).building;
    return building && reembedding.reembedProgress(this.core, kbId, this.ingestion.throughput.perSecond(buildKey(kbId, building.id)));
  }

  /** The configuration being built for the knowledge base, if any. */
  buildingConfiguration = (orgId: string, kbId: string): KnowledgeBaseConfig | undefined => heldKbOf(this.core, orgId, kbId).building;

  /** The knowledge base, when its content is held here (what a write of content reads first: uploads, before their body). */
  heldKnowledgeBase = (orgId: string, kbId: string): KnowledgeBaseRecord => heldKbOf(this.core, orgId, kbId).record;

  listContents(orgId: string, kbId: string, offset: number, limit: number): { items: ContentItem[]; total: number } {
    const kb = heldKbOf(this.core, orgId, kbId);
    return { items: kb.listContents(offset, limit), total: kb.contentCount };
  }

  getContent = (orgId: string, kbId: string, contentId: string): ContentItem => contentOf(this.core, orgId, kbId, contentId);
  addContent = (orgId: string, kbId: string, input: NewContent) => contents.addContent(this.core, orgId, kbId, input);
  /** The text extracted from an uploaded file; the file (moved from `filePath`) is kept as the item's original. */
  addFileContent = (orgId: string, kbId: string, filePath: string, input: Parameters<typeof contents.addFileContent>[4]) =>
    contents.addFileContent(this.core, orgId, kbId, filePath, input);
  /** Replace the text (and the metadata, when given). */
  updateContent = (orgId: string, kbId: string, contentId: string, input: Parameters<typeof contents.updateContent>[4]) =>
    contents.updateContent(this.core, orgId, kbId, contentId, input);
  deleteContent = (orgId: string, kbId: string, contentId: string): Promise<void> => contents.deleteContent(this.core, orgId, kbId, contentId);
  /** Index a failed item again (its newest version). */
  reindexContent = (orgId: string, kbId: string, contentId: string) => contents.reindexContent(this.core, orgId, kbId, contentId);
  /** Index every failed item of a knowledge base again; the number queued. */
  reindexFailed = (orgId: string, kbId: string) => contents.reindexFailed(this.core, orgId, kbId);
  /** Resolve once the item's current version is ready or failed (or deleted), or at the timeout. */
  waitForContent = (item: ContentItem, timeoutMs: number): Promise<void> => this.waiters.wait(item, timeoutMs);

  /** Items by status, chunks waiting, pace over the last minute and time left. */
  ingestionProgress = (orgId: string, kbId: string): IngestionProgress =>
    progressOf([heldKbOf(this.core, orgId, kbId)], this.ingestion.throughput.perSecond(kbId));

  searchFullText(orgId: string, kbId: string, req: SearchRequest): ChunkHit[] {
    return searchFullText(heldKbOf(this.core, orgId, kbId), analyze(req.query), req.limit, req.filter);
  }

  /** Nearest chunks by cosine similarity. EMBEDDING_FAILED when the model fails. */
  async searchSemantic(orgId: string, kbId: string, req: SearchRequest): Promise<ChunkHit[]> {
    const kb = heldKbOf(this.core, orgId, kbId);
    return searchSemantic(kb, await queryVector(this.compute, kb, req.query), req.limit, req.filter);
  }

  async searchHybrid(orgId: string, kbId: string, req: SearchRequest & HybridOptions): Promise<HybridHit[]> {
    const kb = heldKbOf(this.core, orgId, kbId);
    const vector = needsQueryVector(req) ? await queryVector(this.compute, kb, req.query) : undefined;
    return searchHybrid(kb, analyze(req.query), vector, req.limit, req, req.filter);
  }

  // --- serving, and where requests go -----------------------------------------------------------

  /** Load a model in every worker ahead of the first request; resolves with the load time. */
  preloadModel = (spec: EmbeddingSpec): Promise<number> => this.compute.preload(spec);

  /** Send queued content to the workers (once the models are loaded, with holdIngestion); take jobs; in a cluster, join the live nodes. */
  startIngestion(): void {
    this.ingestion.start();
    this.node.start();
  }

  /** Resolves true once the log is applied up to `seq` (another node's position), false after `timeoutMs`. */
  whenApplied = (seq: number, timeoutMs: number): Promise<boolean> => this.node.whenApplied(seq, timeoutMs);

  // --- reports ----------------------------------------------------------------------------------

  /** Direct access for benchmarks and tests inside the process. */
  knowledgeBase = (kbId: string): KnowledgeBase | undefined => this.state.kbs.get(kbId);

  stats = () => ({ ...countState(this.state.kbs), queueDepth: this.ingestion.depth });

  /** Knowledge bases being re-embedded here, and their items built so far of all. */
  reembedSummary = (): EngineMetrics['reembedding'] => reembedSummary(this.state.kbs.values());

  async metrics(): Promise<EngineMetrics> {
    return collectMetrics([...this.state.kbs.values()], this.ingestion.throughput.perSecond(), {
      queueDepth: this.ingestion.depth,
      walBytes: await this.node.log.sizeBytes(),
      workerCrashes: this.compute.documents.crashes + this.compute.queries.crashes,
    });
  }

  /** Cluster mode: applied vs stream position and queued indexing jobs (undefined on a single node). Rejects when NATS does not answer in time. */
  replication = (timeoutMs = 2000): Promise<ReplicationStatus | undefined> => this.node.replication(timeoutMs);

  /** Run `close` when the engine closes (before the log closes): parts built on the engine. */
  onClose = (close: () => Promise<void>): void => void this.closers.push(close);

  /** Stop ingestion and flush the log. In-flight items are indexed again at the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const close of this.closers) await close();
    this.pacer.stop();
    this.ingestion.close();
    await this.compute.close();
    await this.node.close();
    this.texts.close();
  }
}
