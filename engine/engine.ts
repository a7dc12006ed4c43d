// The search engine as a library: knowledge bases, content items and their indexes in memory,
// every change logged durably before it is acknowledged, ingestion in worker threads. No HTTP here;
// callers pass the organization that owns each resource, and another organization's resources
// behave as if they did not exist. This façade wires the parts together, each owning one concern:
// the log (engine/log), the state machine and the state it builds (engine/state), the ingestion
// queue (engine/ingest), background graph building (engine/vector/graph-pacer.ts) and search
// planning (engine/search).
import { join } from 'node:path';
import { analyze } from './analysis/analyzer';
import { EmbeddingError, type EmbeddingSpec } from './embedding/provider';
import type { Metadata, MetadataFilter } from './filter/metadata';
import { OriginalsStore } from './files/originals';
import { isIdOf, newId } from './ids';
import { Compute, type ComputeOptions } from './ingest/compute';
import { IngestionQueue, toSpec } from './ingest/queue';
import { ContentWaiters } from './ingest/waiters';
import type { ChunkHit, ContentItem, KnowledgeBase } from './kb/knowledge-base';
import { decodePayload, encodePayload } from './log/codec';
import type { LogRange, RecordLog } from './log/log';
import { SegmentLog } from './log/segment-log';
import { searchFullText } from './search/full-text';
import { needsQueryVector, searchHybrid, type HybridHit, type HybridOptions } from './search/hybrid';
import { searchSemantic } from './search/semantic';
import type { ContentSource, KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from './records';
import { LiveState } from './state/live-state';
import { checkQuota, type Quotas } from './state/quotas';
import { collectMetrics, type EngineMetrics } from './state/metrics';
import { GraphPacer } from './vector/graph-pacer';
import { DEFAULT_EXACT_THRESHOLD } from './vector/vector-index';
import type { EngineOptions, NewContent, RecoveryReport, SearchRequest } from './options';

const now = () => new Date().toISOString();

export class Engine {
  private readonly state: LiveState;
  private readonly waiters = new ContentWaiters();
  private readonly pacer: GraphPacer;
  private log!: RecordLog;
  private compute!: Compute;
  private ingestion!: IngestionQueue;
  private readonly originals: OriginalsStore;
  private closed = false;
  private readonly closers: (() => Promise<void>)[] = [];
  recovery!: RecoveryReport;

  private constructor(private readonly options: EngineOptions) {
    this.originals = new OriginalsStore(join(options.dataDir, 'files'));
    this.pacer = new GraphPacer(() => this.state.kbs.values(), options.idle);
    this.state = new LiveState({
      originals: this.originals,
      graphThreshold: options.graphThreshold,
      discard: (task) => task.catch((err) => this.say('warn', 'could not remove stored files', { error: String(err) })),
      onVectorsAdded: () => this.pacer.schedule(),
    });
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
    for (const g of start?.graphs ?? []) engine.state.kbs.get(g.kbId)?.attachGraph(g.path);
    const fromSnapshotMs = Math.round(performance.now() - started);
    let records = 0;
    engine.log = await SegmentLog.open(
      { dir: join(options.dataDir, 'wal'), segmentBytes: options.walSegmentBytes, afterSeq: start?.seq, warn: (m, d) => engine.say('warn', m, d) },
      ({ payload }) => {
        const { record, attachment } = decodePayload<LogRecord>(payload);
        engine.state.apply(record, attachment);
        records++;
      },
    );
    engine.compute = new Compute({ documentWorkers: 1, ...options.compute });
    engine.ingestion = new IngestionQueue({
      knowledgeBases: engine.state.kbs,
      compute: engine.compute,
      commit: (record, attachment) => engine.commit(record, attachment),
      batchItems: options.batchItems,
      embeddingRetry: options.embeddingRetry,
      onBatch: options.onBatch,
      log: (l, m, d) => engine.say(l, m, d),
      held: options.holdIngestion,
    });
    const requeued = engine.ingestion.requeueUnfinished();
    const stats = engine.stats();
    engine.recovery = {
      snapshot: start ? { seq: start.seq, records: start.records, millis: fromSnapshotMs } : undefined,
      records,
      knowledgeBases: stats.knowledgeBases,
      contents: stats.contents,
      chunks: stats.chunks,
      requeued,
      millis: Math.round(performance.now() - started),
    };
    return engine;
  }

  /**
   * Apply a record and make it durable. State changes in memory at once (in log order); the
   * promise resolves when the record is durable, which is when the caller may acknowledge it.
   */
  private async commit(record: LogRecord, attachment?: Uint8Array): Promise<void> {
    if (this.closed) throw new Error('engine is closed');
    const durable = this.log.append(encodePayload(record, attachment));
    const applied = this.state.apply(record, attachment);
    try {
      await durable;
    } catch (err) {
      this.say('error', 'write-ahead log write failed; no further writes are accepted', { error: String(err) });
      this.options.onFatal?.(err);
      throw err;
    }
    // `?wait=true` answers only once the outcome would survive a crash.
    if (applied && (record.t === 'content.indexed' || record.t === 'content.failed' || record.t === 'content.delete')) {
      this.waiters.notify(record.kbId, record.id, this.state.kbs.get(record.kbId)?.contents.get(record.id));
    }
  }

  // --- what snapshots need (snapshots/snapshotter.ts) -----------------------------------------------

  /** Sequence number of the newest log record. */
  get lastSequence(): number {
    return this.log.lastSequence;
  }

  logBytes(): Promise<number> {
    return this.log.sizeBytes();
  }

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
    return this.log.truncateBefore(seq + 1);
  }

  /** Knowledge bases with fewer vectors keep no HNSW graph (in memory or in snapshots). */
  get graphThreshold(): number {
    return this.options.graphThreshold ?? DEFAULT_EXACT_THRESHOLD;
  }

  /** Save every in-memory HNSW graph (to `pathOf(kbId)`), with the documents each holds. */
  saveGraphs(pathOf: (kbId: string) => string): { kbId: string; path: string; docs: number[] }[] {
    const out: { kbId: string; path: string; docs: number[] }[] = [];
    for (const [kbId, kb] of this.state.kbs) {
      const path = pathOf(kbId);
      const docs = kb.saveGraph(path);
      if (docs) out.push({ kbId, path, docs });
    }
    return out;
  }

  // --- knowledge bases ------------------------------------------------------------------------

  private kbOf(orgId: string, kbId: string): KnowledgeBase | undefined {
    const kb = this.state.kbs.get(kbId);
    return kb && kb.record.orgId === orgId ? kb : undefined;
  }

  /**
   * Throws QuotaExceededError when the organization already holds `quota`'s limit. The writes
   * check it themselves; callers may check early too (before reading an upload).
   */
  checkQuota(orgId: string, quota: keyof Quotas): void {
    checkQuota(this.state.kbs.values(), orgId, quota, this.options.quotas?.[quota]);
  }

  listKnowledgeBases(orgId: string): KnowledgeBaseRecord[] {
    return [...this.state.kbs.values()]
      .map((kb) => kb.record)
      .filter((r) => r.orgId === orgId)
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  }

  getKnowledgeBase(orgId: string, kbId: string): KnowledgeBaseRecord | undefined {
    return this.kbOf(orgId, kbId)?.record;
  }

  async createKnowledgeBase(
    orgId: string,
    input: { name: string; description: string; type: string; config: Omit<KnowledgeBaseConfig, 'id' | 'createdAt'> },
  ): Promise<KnowledgeBaseRecord> {
    // Checked and applied in one synchronous step (commit applies before it awaits): exact under concurrency.
    this.checkQuota(orgId, 'knowledgeBases');
    const at = now();
    const kb: KnowledgeBaseRecord = { id: newId('kb'), orgId, name: input.name, description: input.description, type: input.type, config: { ...input.config, id: newId('cfg'), createdAt: at }, createdAt: at, updatedAt: at };
    await this.commit({ t: 'kb.create', kb });
    return kb;
  }

  async updateKnowledgeBase(orgId: string, kbId: string, change: { name: string; description?: string }): Promise<boolean> {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return false;
    await this.commit({ t: 'kb.update', id: kbId, name: change.name, description: change.description ?? kb.record.description, at: now() });
    return true;
  }

  async deleteKnowledgeBase(orgId: string, kbId: string): Promise<boolean> {
    if (!this.kbOf(orgId, kbId)) return false;
    await this.commit({ t: 'kb.delete', id: kbId });
    return true;
  }

  // --- contents -------------------------------------------------------------------------------

  listContents(orgId: string, kbId: string, offset: number, limit: number): { items: ContentItem[]; total: number } | undefined {
    const kb = this.kbOf(orgId, kbId);
    return kb && { items: kb.listContents(offset, limit), total: kb.contentCount };
  }

  getContent(orgId: string, kbId: string, contentId: string): ContentItem | undefined {
    return this.kbOf(orgId, kbId)?.contents.get(contentId);
  }

  async addContent(orgId: string, kbId: string, input: NewContent): Promise<ContentItem | undefined> {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    if (input.id !== undefined && (!isIdOf('ct', input.id) || kb.contents.has(input.id))) throw new Error(`invalid or reused content id ${input.id}`);
    this.checkQuota(orgId, 'contents');
    const id = input.id ?? newId('ct');
    await this.commit({ t: 'content.put', kbId, id, version: 1, text: input.text, metadata: input.metadata ?? {}, source: input.source ?? { kind: 'text' }, pages: input.pages, at: now() });
    this.ingestion.enqueue(kbId, id, 1);
    return this.state.kbs.get(kbId)?.contents.get(id);
  }

  /**
   * Add the text extracted from an uploaded file, keeping the file (moved from `filePath`) as the
   * item's original: durable under the item's id before the item is logged.
   */
  async addFileContent(orgId: string, kbId: string, filePath: string, input: Omit<NewContent, 'id'> & { source: Extract<ContentSource, { kind: 'file' }> }): Promise<ContentItem | undefined> {
    if (!this.kbOf(orgId, kbId)) return undefined;
    const id = newId('ct');
    await this.originals.adopt(filePath, kbId, id);
    const item = await this.addContent(orgId, kbId, { ...input, id }).catch(async (err) => {
      await this.originals.remove(kbId, id);
      throw err;
    });
    if (!item) await this.originals.remove(kbId, id); // deleted while the file was being stored
    return item;
  }

  /** Replace the text (and the metadata, when given). Undefined when the item does not exist. */
  async updateContent(orgId: string, kbId: string, contentId: string, input: { text: string; metadata?: Metadata; source?: ContentSource; pages?: number[] }): Promise<ContentItem | undefined> {
    const item = this.kbOf(orgId, kbId)?.contents.get(contentId);
    if (!item) return undefined;
    const version = item.current.version + 1;
    await this.commit({
      t: 'content.put',
      kbId,
      id: contentId,
      version,
      text: input.text,
      metadata: input.metadata ?? item.current.metadata,
      source: input.source ?? item.current.source,
      pages: input.source ? input.pages : item.current.pages,
      createdAt: item.createdAt,
      at: now(),
    });
    this.ingestion.enqueue(kbId, contentId, version);
    return item;
  }

  async deleteContent(orgId: string, kbId: string, contentId: string): Promise<boolean> {
    if (!this.kbOf(orgId, kbId)?.contents.has(contentId)) return false;
    await this.commit({ t: 'content.delete', kbId, id: contentId });
    return true;
  }

  /** Index a failed item again (its newest version); undefined when there is no such item. */
  async reindexContent(orgId: string, kbId: string, contentId: string): Promise<ContentItem | undefined> {
    const item = this.kbOf(orgId, kbId)?.contents.get(contentId);
    if (!item) return undefined;
    if (item.status === 'failed') await this.retryFailed(item);
    return item;
  }

  /** Index every failed item of a knowledge base again; the number queued, undefined when no such knowledge base. */
  async reindexFailed(orgId: string, kbId: string): Promise<number | undefined> {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    const failed = [...kb.contents.values()].filter((item) => item.status === 'failed');
    await Promise.all(failed.map((item) => this.retryFailed(item)));
    return failed.length;
  }

  private async retryFailed(item: ContentItem): Promise<void> {
    const version = item.current.version;
    await this.commit({ t: 'content.retry', kbId: item.kbId, id: item.id, version, at: now() });
    if (item.status === 'pending' && item.current.version === version) this.ingestion.enqueue(item.kbId, item.id, version);
  }

  /** Resolve once the item's current version is ready or failed (or deleted), or at the timeout. */
  waitForContent(item: ContentItem, timeoutMs: number): Promise<void> {
    return this.waiters.wait(item, timeoutMs);
  }

  // --- ingestion ------------------------------------------------------------------------------

  get queueDepth(): number {
    return this.ingestion.depth;
  }

  /** Start sending queued content to the workers (once the models are loaded, with holdIngestion). */
  startIngestion(): void {
    this.ingestion.start();
  }

  /** Load a model in every worker ahead of the first request; resolves with the load time. */
  preloadModel(spec: EmbeddingSpec): Promise<number> {
    return this.compute.preload(spec);
  }

  // --- search ---------------------------------------------------------------------------------

  searchFullText(orgId: string, kbId: string, req: SearchRequest): ChunkHit[] | undefined {
    const kb = this.kbOf(orgId, kbId);
    return kb && searchFullText(kb, analyze(req.query), req.limit, req.filter);
  }

  private queryVector(kb: KnowledgeBase, query: string): Promise<Float32Array> {
    const { embedding } = kb.record.config;
    if (embedding.dimensions === 0) throw new EmbeddingError('this knowledge base has no embedding model');
    return this.compute.embedQuery(toSpec(embedding), query);
  }

  /** Nearest chunks by cosine similarity. Throws EmbeddingError when the model fails. */
  async searchSemantic(orgId: string, kbId: string, req: SearchRequest): Promise<ChunkHit[] | undefined> {
    const kb = this.kbOf(orgId, kbId);
    return kb && searchSemantic(kb, await this.queryVector(kb, req.query), req.limit, req.filter);
  }

  async searchHybrid(orgId: string, kbId: string, req: SearchRequest & HybridOptions): Promise<HybridHit[] | undefined> {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    const vector = needsQueryVector(req) ? await this.queryVector(kb, req.query) : undefined;
    return searchHybrid(kb, analyze(req.query), vector, req.limit, req, req.filter);
  }

  // --- reports ----------------------------------------------------------------------------------

  /** Direct access for benchmarks and tests inside the process. */
  knowledgeBase(kbId: string): KnowledgeBase | undefined {
    return this.state.kbs.get(kbId);
  }

  stats(): { knowledgeBases: number; contents: number; chunks: number; queueDepth: number } {
    let contents = 0;
    let chunks = 0;
    for (const kb of this.state.kbs.values()) {
      contents += kb.contentCount;
      chunks += kb.chunkCount;
    }
    return { knowledgeBases: this.state.kbs.size, contents, chunks, queueDepth: this.ingestion?.depth ?? 0 };
  }

  async metrics(): Promise<EngineMetrics> {
    return collectMetrics(this.state.kbs.values(), {
      queueDepth: this.queueDepth,
      walBytes: await this.log.sizeBytes(),
      workerCrashes: this.compute.documents.crashes + this.compute.queries.crashes,
    });
  }

  /** Run `close` when the engine closes (before the log closes): parts built on the engine. */
  onClose(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  /** Stop ingestion and flush the log. In-flight items are indexed again at the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const close of this.closers) await close();
    this.pacer.stop();
    this.ingestion.close();
    await this.compute.close();
    await this.log.close();
  }
}
