// The search engine as a library: knowledge bases, content items and their indexes in memory,
// every change logged durably before it is acknowledged, ingestion in worker threads. No HTTP here;
// callers pass the organization that owns each resource, and another organization's resources
// behave as if they did not exist.
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { analyze, ANALYZER_VERSION } from './analysis/analyzer';
import type { Metadata, MetadataFilter } from './filter/metadata';
import { OriginalsStore } from './files/originals';
import { fsyncPathAsync } from './fsync';
import type { BuildRequest } from './snapshot/build';
import { listSnapshotDirs, RECORDS_FILE, removeUnfinishedSnapshots, snapshotDirName, verifySnapshot, type SnapshotManifest } from './snapshot/format';
import { DEFAULT_EXACT_THRESHOLD } from './vector/vector-index';
import { scanFrames } from './wal/frame';
import { WorkerPool } from './workers/pool';
import { workerUrl } from './workers/entry-points';
import { isIdOf, newId, observeId } from './ids';
import { EmbeddingError, type EmbeddingSpec } from './embedding/provider';
import { Compute, type ComputeOptions } from './ingest/compute';
import type { ItemResult } from './ingest/handlers';
import { KnowledgeBase, type ChunkHit, type ContentItem, type HybridHit, type HybridOptions } from './kb/knowledge-base';
import type { ContentSource, IndexedChunk, KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from './records';
import { decodePayload, encodePayload } from './wal/codec';
import { WriteAheadLog } from './wal/log';

export interface EngineOptions {
  dataDir: string;
  /** Worker threads (documents and query lanes) and embedding settings. */
  compute?: Partial<ComputeOptions>;
  /** Most content items in one worker request (small items share embedding batches). */
  batchItems?: number;
  walSegmentBytes?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => void;
  /** Called when the log can no longer be written; the owner should stop the process. */
  onFatal?: (err: unknown) => void;
  /** Knowledge bases with fewer vectors are searched exactly and keep no HNSW graph (in memory or in snapshots). */
  graphThreshold?: number;
  /** True while nothing is asking for the main thread (no request in flight): background graph building then takes most of it. */
  idle?: () => boolean;
  /** Called after each ingestion batch (for metrics). */
  onBatch?: (batch: { items: number; chunks: number; millis: number; model: string }) => void;
  /**
   * Embedding failures (a model endpoint down for a while) are retried: `attempts` in all, waiting
   * `baseMs`, then twice as long each time up to `maxMs`. Default 8 attempts, 2 s → 60 s (about
   * 3 minutes in all). Then the item is `failed`, its chunks answer full-text search only.
   */
  embeddingRetry?: { attempts: number; baseMs: number; maxMs: number };
  /** Most knowledge bases and content items one organization may hold (unbounded when absent). */
  quotas?: Partial<Quotas>;
  /**
   * Send no ingestion work to the workers until startIngestion() is called. The server loads the
   * embedding models first: content re-queued at start-up would otherwise reach the workers
   * before the model loads and hold them (and /ready) back for whole batches.
   */
  holdIngestion?: boolean;
}

export interface Quotas {
  knowledgeBases: number;
  contents: number;
}

/** A write that would take an organization past one of its quotas. */
export class QuotaExceededError extends Error {
  constructor(
    readonly quota: keyof Quotas,
    readonly limit: number,
  ) {
    super(quota === 'knowledgeBases' ? `the organization already holds its quota of ${limit} knowledge bases` : `the organization already holds its quota of ${limit} content items`);
    this.name = 'QuotaExceededError';
  }
}

export const DEFAULT_EMBEDDING_RETRY = { attempts: 8, baseMs: 2000, maxMs: 60_000 };

/** Point-in-time counts for metrics and health pages. */
export interface EngineMetrics {
  queueDepth: number;
  contentsByStatus: Record<string, number>;
  /** Per knowledge base type: knowledge bases, live chunks, stored vectors, vectors waiting for the HNSW graph. */
  byType: Record<string, { knowledgeBases: number; chunks: number; vectors: number; graphPending: number }>;
  walBytes: number;
  workerCrashes: number;
}

export interface RecoveryReport {
  /** The snapshot start-up began from, if any. */
  snapshot?: { seq: number; records: number; millis: number };
  /** Log records replayed after the snapshot. */
  records: number;
  knowledgeBases: number;
  contents: number;
  chunks: number;
  requeued: number;
  millis: number;
}

export interface NewContent {
  /** A caller-made id (`ct_…`, from newId), when files must be stored under it before the record is logged. */
  id?: string;
  text: string;
  metadata?: Metadata;
  source?: ContentSource;
  pages?: number[];
}

export interface SearchRequest {
  query: string;
  limit: number;
  filter?: MetadataFilter;
}

interface Waiter {
  version: number;
  resolve: () => void;
}

const now = () => new Date().toISOString();

export class Engine {
  private readonly kbs = new Map<string, KnowledgeBase>();
  private wal!: WriteAheadLog;
  private compute!: Compute;
  /** Original bytes of uploaded files. */
  readonly originals: OriginalsStore;
  private graphTimer: ReturnType<typeof setInterval> | undefined;
  private snapshotPool: WorkerPool | undefined;
  private snapshotting: Promise<SnapshotInfo> | undefined;
  /** The newest complete snapshot on local disk. */
  latestSnapshot: SnapshotInfo | undefined;
  private readonly queue: QueueEntry[] = [];
  private inFlight = 0;
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Embedding retries waiting for their backoff to pass. */
  private readonly retryTimers = new Set<ReturnType<typeof setTimeout>>();
  private closed = false;
  /** False while ingestion is held (EngineOptions.holdIngestion) until startIngestion(). */
  private ingesting: boolean;
  recovery!: RecoveryReport;

  private constructor(private readonly options: EngineOptions) {
    this.originals = new OriginalsStore(join(options.dataDir, 'files'));
    this.ingesting = options.holdIngestion !== true;
  }

  private log(level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>): void {
    (this.options.log ?? ((l, m, d) => console[l](m, d ?? '')))(level, message, details);
  }

  static async open(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options);
    const started = performance.now();
    let records = 0;
    // A snapshot killed mid-way left its build directory behind; no snapshot runs before open returns.
    const unfinished = await removeUnfinishedSnapshots(engine.snapshotsDir);
    if (unfinished.length > 0) engine.log('info', 'removed unfinished snapshot directories', { removed: unfinished });
    const snapshot = await engine.loadNewestSnapshot();
    const fromSnapshotMs = Math.round(performance.now() - started);
    engine.wal = await WriteAheadLog.open(
      {
        dir: join(options.dataDir, 'wal'),
        segmentBytes: options.walSegmentBytes,
        afterSeq: snapshot?.seq,
        warn: (message, details) => engine.log('warn', message, details),
      },
      ({ payload }) => {
        const { record, attachment } = decodePayload<LogRecord>(payload);
        engine.apply(record, true, attachment);
        records++;
      },
    );
    engine.compute = new Compute({ documentWorkers: 1, ...options.compute });
    // Whatever was pending or in flight at the last stop is indexed again now.
    let requeued = 0;
    let contents = 0;
    for (const kb of engine.kbs.values()) {
      for (const item of kb.contents.values()) {
        contents++;
        if (item.status === 'pending' || item.status === 'processing') {
          item.status = 'pending';
          engine.queue.push({ kbId: kb.id, id: item.id, version: item.current.version });
          requeued++;
        }
      }
    }
    engine.recovery = {
      snapshot: snapshot ? { seq: snapshot.seq, records: snapshot.stats.records, millis: fromSnapshotMs } : undefined,
      records,
      knowledgeBases: engine.kbs.size,
      contents,
      chunks: [...engine.kbs.values()].reduce((n, kb) => n + kb.chunkCount, 0),
      requeued,
      millis: Math.round(performance.now() - started),
    };
    engine.pump();
    engine.scheduleGraphBuild();
    return engine;
  }

  // --- the log --------------------------------------------------------------------------------

  /**
   * Apply a record to memory. `replaying` is true while the log is read at start-up. Returns the
   * content item the record settled (ready, failed or deleted), so waiters can be told once the
   * record is durable.
   */
  private apply(record: LogRecord, replaying: boolean, attachment?: Uint8Array): ContentItem | undefined {
    switch (record.t) {
      case 'kb.create':
        if (replaying) observeId(record.kb.id);
        this.kbs.set(record.kb.id, new KnowledgeBase(record.kb, this.options.graphThreshold));
        break;
      case 'kb.update': {
        const kb = this.kbs.get(record.id);
        if (!kb) break;
        kb.record = { ...kb.record, name: record.name, description: record.description, updatedAt: record.at };
        break;
      }
      case 'kb.delete': {
        const kb = this.kbs.get(record.id);
        if (!kb) break;
        kb.clear();
        this.kbs.delete(record.id);
        this.discard(this.originals.removeKnowledgeBase(record.id));
        break;
      }
      case 'content.put': {
        const kb = this.kbs.get(record.kbId);
        if (!kb) break;
        if (replaying) observeId(record.id);
        // Text replacing an uploaded file: the original no longer describes the item.
        if (kb.contents.get(record.id)?.current.source.kind === 'file' && record.source.kind !== 'file') {
          this.discard(this.originals.remove(record.kbId, record.id));
        }
        const item = kb.putContent(
          record.id,
          { version: record.version, text: record.text, metadata: record.metadata, source: record.source, pages: record.pages },
          record.at,
          record.createdAt,
        );
        break;
      }
      case 'content.delete': {
        const kb = this.kbs.get(record.kbId);
        const item = kb?.contents.get(record.id);
        if (!kb || !item) break;
        kb.deleteContent(record.id);
        if (item.current.source.kind === 'file') this.discard(this.originals.remove(record.kbId, record.id));
        return item;
      }
      case 'content.indexed': {
        const item = this.kbs.get(record.kbId)?.contents.get(record.id);
        // A result for a version that has since been replaced is stale: the newer one follows.
        if (!item || item.current.version !== record.version) break;
        if (record.analyzer !== ANALYZER_VERSION) break; // stays pending: re-analyzed after start-up
        if (replaying) for (const c of record.chunks) observeId(c.id);
        const kb = this.kbs.get(record.kbId)!;
        const vectors = kb.vectors && attachment && attachment.length > 0 ? kb.vectors.fromBytes(attachment, record.chunks.length) : undefined;
        // Records written before document numbers were logged continue the numbering.
        kb.applyIndexed(item, record.chunks, vectors, record.firstDoc ?? kb.docSpace);
        if (record.embeddingError !== undefined) {
          item.status = 'failed';
          item.error = record.embeddingError;
        }
        if (!replaying) this.scheduleGraphBuild();
        return item;
      }
      case 'content.failed': {
        const item = this.kbs.get(record.kbId)?.contents.get(record.id);
        if (!item || item.current.version !== record.version) break;
        item.status = 'failed';
        item.error = record.error;
        return item;
      }
      case 'content.retry': {
        const item = this.kbs.get(record.kbId)?.contents.get(record.id);
        if (!item || item.current.version !== record.version || item.status !== 'failed') break;
        item.status = 'pending'; // re-queued by the caller, or at start-up after a crash
        item.error = undefined;
        break;
      }
    }
  }

  /**
   * Apply a record and make it durable. State changes in memory at once (in log order); the
   * promise resolves when the record is fsynced, which is when the caller may acknowledge it.
   */
  private async commit(record: LogRecord, attachment?: Uint8Array): Promise<void> {
    if (this.closed) throw new Error('engine is closed');
    const durable = this.wal.append(encodePayload(record, attachment));
    const settled = this.apply(record, false, attachment);
    try {
      await durable;
    } catch (err) {
      this.log('error', 'write-ahead log write failed; no further writes are accepted', { error: String(err) });
      this.options.onFatal?.(err);
      throw err;
    }
    // `?wait=true` answers only once the outcome would survive a crash.
    if (settled) this.notify(settled, record.t === 'content.delete');
  }

  // --- snapshots ------------------------------------------------------------------------------

  /** Where snapshots are kept on local disk: DATA_DIR/snapshots. */
  get snapshotsDir(): string {
    return join(this.options.dataDir, 'snapshots');
  }

  /**
   * Replay the newest intact local snapshot and attach its graphs. A snapshot that fails its
   * checks is reported and skipped for the one before it.
   */
  private async loadNewestSnapshot(): Promise<SnapshotManifest | undefined> {
    for (const candidate of await listSnapshotDirs(this.snapshotsDir)) {
      const check = await verifySnapshot(candidate.dir, { framed: [RECORDS_FILE] });
      // records.log: its size was checked; every frame's CRC32 is checked before anything is applied.
      const scan = check.ok ? scanFrames(new Uint8Array(await Bun.file(join(candidate.dir, RECORDS_FILE)).arrayBuffer())) : undefined;
      if (!check.ok || !scan?.ok) {
        this.log('warn', 'snapshot skipped', { snapshot: candidate.name, reason: check.ok ? `${RECORDS_FILE} fails its frame checksums (${scan?.ok === false ? scan.reason : "unreadable"})` : check.reason });
        continue;
      }
      for (const frame of scan.frames) {
        const { record, attachment } = decodePayload<LogRecord>(frame.payload);
        this.apply(record, true, attachment);
      }
      for (const g of check.manifest.graphs) {
        const vectors = this.kbs.get(g.kbId)?.vectors;
        // The graph holds exactly the vectors of the snapshot's records, all alive at this point.
        if (vectors) vectors.attachGraph(join(candidate.dir, g.file), vectors.aliveDocs());
      }
      this.latestSnapshot = { seq: check.manifest.seq, dir: candidate.dir, manifest: check.manifest };
      return check.manifest;
    }
    return undefined;
  }

  /**
   * Write a snapshot of everything logged so far, built in a worker from the previous snapshot
   * and the closed log segments: writes go on meanwhile (they are held only while the log rolls
   * to a new segment). Concurrent calls share one snapshot.
   *
   * `reuseGraphs` (for the last snapshot before exit, when nothing else needs the main thread):
   * the in-memory HNSW graphs are saved for the worker, which then need not build them again —
   * saving blocks the main thread for a moment, building takes the worker minutes at 100k vectors.
   */
  snapshot(options: { reuseGraphs?: boolean } = {}): Promise<SnapshotInfo> {
    this.snapshotting ??= this.takeSnapshot(options.reuseGraphs === true).finally(() => {
      this.snapshotting = undefined;
    });
    return this.snapshotting;
  }

  private async takeSnapshot(reuseGraphs: boolean): Promise<SnapshotInfo> {
    if (this.closed) throw new Error('engine is closed');
    const seq = await this.wal.roll();
    const prev = this.latestSnapshot;
    if (prev && prev.seq >= seq) return prev;
    await mkdir(this.snapshotsDir, { recursive: true });
    const tmp = join(this.snapshotsDir, `tmp-${seq}-${crypto.randomUUID()}`);
    await mkdir(tmp);
    try {
      const mainGraphs: NonNullable<BuildRequest['mainGraphs']> = [];
      if (reuseGraphs) {
        for (const [kbId, kb] of this.kbs) {
          if (!kb.vectors?.hasGraph) continue;
          const path = join(tmp, `main-graph-${kbId}.usearch`);
          kb.vectors.saveGraph(path);
          mainGraphs.push({ kbId, path, docs: kb.vectors.graphDocs() });
        }
      }
      this.snapshotPool ??= new WorkerPool({ size: 1, workerUrl: workerUrl('snapshot'), retries: 0 });
      const manifest = await this.snapshotPool.run<SnapshotManifest>({
        prevDir: prev?.dir,
        prevSeq: prev?.seq,
        segments: this.wal.segmentsThrough(seq),
        seq,
        outDir: tmp,
        graphThreshold: this.options.graphThreshold ?? DEFAULT_EXACT_THRESHOLD,
        mainGraphs,
      });
      const dir = join(this.snapshotsDir, snapshotDirName(seq));
      await rename(tmp, dir);
      await fsyncPathAsync(this.snapshotsDir);
      this.latestSnapshot = { seq, dir, manifest };
      return this.latestSnapshot;
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }

  /** Sequence number of the newest log record. */
  get lastSequence(): number {
    return this.wal.lastSequence;
  }

  logBytes(): Promise<number> {
    return this.wal.sizeBytes();
  }

  /** Remove log segments whose records are all covered by the snapshot at `seq`. */
  truncateLog(seq: number): Promise<number> {
    return this.wal.deleteThrough(seq);
  }

  /** Run file clean-up in the background; a failure is logged, never fatal (it is only garbage). */
  private discard(task: Promise<void>): void {
    task.catch((err) => this.log('warn', 'could not remove stored files', { error: String(err) }));
  }

  // --- knowledge bases ------------------------------------------------------------------------

  private kbOf(orgId: string, kbId: string): KnowledgeBase | undefined {
    const kb = this.kbs.get(kbId);
    return kb && kb.record.orgId === orgId ? kb : undefined;
  }

  /**
   * Throws QuotaExceededError when the organization already holds `quota`'s limit. The writes
   * check it themselves; callers may check early too (before reading an upload).
   */
  checkQuota(orgId: string, quota: keyof Quotas): void {
    const limit = this.options.quotas?.[quota];
    if (limit === undefined) return;
    let held = 0;
    for (const kb of this.kbs.values()) if (kb.record.orgId === orgId) held += quota === 'knowledgeBases' ? 1 : kb.contentCount;
    if (held >= limit) throw new QuotaExceededError(quota, limit);
  }

  listKnowledgeBases(orgId: string): KnowledgeBaseRecord[] {
    return [...this.kbs.values()]
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
    const kb: KnowledgeBaseRecord = {
      id: newId('kb'),
      orgId,
      name: input.name,
      description: input.description,
      type: input.type,
      config: { ...input.config, id: newId('cfg'), createdAt: at },
      createdAt: at,
      updatedAt: at,
    };
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
    if (!kb) return undefined;
    return { items: kb.listContents(offset, limit), total: kb.contentCount };
  }

  getContent(orgId: string, kbId: string, contentId: string): ContentItem | undefined {
    return this.kbOf(orgId, kbId)?.contents.get(contentId);
  }

  async addContent(orgId: string, kbId: string, input: NewContent): Promise<ContentItem | undefined> {
    if (!this.kbOf(orgId, kbId)) return undefined;
    if (input.id !== undefined && (!isIdOf('ct', input.id) || this.kbs.get(kbId)!.contents.has(input.id))) {
      throw new Error(`invalid or reused content id ${input.id}`);
    }
    this.checkQuota(orgId, 'contents');
    const id = input.id ?? newId('ct');
    await this.commit({
      t: 'content.put',
      kbId,
      id,
      version: 1,
      text: input.text,
      metadata: input.metadata ?? {},
      source: input.source ?? { kind: 'text' },
      pages: input.pages,
      at: now(),
    });
    this.enqueue(kbId, id, 1);
    return this.kbs.get(kbId)?.contents.get(id);
  }

  /** Replace the text (and the metadata, when given). Undefined when the item does not exist. */
  async updateContent(
    orgId: string,
    kbId: string,
    contentId: string,
    input: { text: string; metadata?: Metadata; source?: ContentSource; pages?: number[] },
  ): Promise<ContentItem | undefined> {
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
    this.enqueue(kbId, contentId, version);
    return item;
  }

  async deleteContent(orgId: string, kbId: string, contentId: string): Promise<boolean> {
    if (!this.kbOf(orgId, kbId)?.contents.has(contentId)) return false;
    await this.commit({ t: 'content.delete', kbId, id: contentId });
    return true;
  }

  /**
   * Index a failed item again (its newest version). False when there is no such item; true when it
   * was queued, or was not failed (nothing to do).
   */
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
    if (item.status === 'pending' && item.current.version === version) this.enqueue(item.kbId, item.id, version);
  }

  /** Resolve once the item's current version is ready or failed (or deleted), or at the timeout. */
  waitForContent(item: ContentItem, timeoutMs: number): Promise<void> {
    if (item.status === 'ready' || item.status === 'failed') return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = { version: item.current.version, resolve: () => done() };
      const key = `${item.kbId}/${item.id}`;
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      const timer = setTimeout(() => done(), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        set!.delete(waiter);
        if (set!.size === 0) this.waiters.delete(key);
        resolve();
      };
    });
  }

  private notify(item: ContentItem, deleted = false): void {
    const set = this.waiters.get(`${item.kbId}/${item.id}`);
    if (!set) return;
    const settled = deleted || item.status === 'ready' || item.status === 'failed';
    for (const w of [...set]) if (settled && (deleted || w.version <= item.current.version)) w.resolve();
  }

  // --- ingestion ------------------------------------------------------------------------------

  private enqueue(kbId: string, id: string, version: number): void {
    this.queue.push({ kbId, id, version });
    this.pump();
  }

  get queueDepth(): number {
    return this.queue.length + this.inFlight;
  }

  /** Start sending queued content to the workers (once the models are loaded, with holdIngestion). */
  startIngestion(): void {
    if (this.ingesting) return;
    this.ingesting = true;
    this.pump();
  }

  private pump(): void {
    if (!this.ingesting) return; // held until startIngestion()
    // One request per worker plus one waiting each: the queue itself is cheap, the workers are not.
    const maxItems = this.options.batchItems ?? 16;
    while (!this.closed && this.inFlight < this.compute.documents.size * 2 && this.queue.length > 0) {
      // A batch: consecutive items of one knowledge base (one model), up to maxItems or about
      // 16 chunks of text, so short items share embedding calls and long ones go alone.
      const batch: { job: QueueEntry; item: ContentItem }[] = [];
      let kb: KnowledgeBase | undefined;
      let chars = 0;
      while (this.queue.length > 0 && batch.length < maxItems) {
        const next = this.queue[0]!;
        if (kb && next.kbId !== kb.id) break;
        const nextKb = this.kbs.get(next.kbId);
        const item = nextKb?.contents.get(next.id);
        this.queue.shift();
        if (!nextKb || !item || item.current.version !== next.version) continue; // deleted or superseded
        kb = nextKb;
        batch.push({ job: next, item });
        chars += item.current.text.length;
        if (chars >= 16 * kb.record.config.chunking.size) break;
      }
      if (!kb || batch.length === 0) continue;
      this.runBatch(kb, batch);
    }
  }

  private runBatch(kb: KnowledgeBase, batch: { job: QueueEntry; item: ContentItem }[]): void {
    this.inFlight++;
    const versions = batch.map(({ item }) => {
      item.status = 'processing';
      return item.current;
    });
    const { chunking, embedding } = kb.record.config;
    const started = performance.now();
    this.compute
      .process(
        versions.map((v) => ({ text: v.text, chunking, pages: v.pages })),
        embedding.dimensions > 0 ? toSpec(embedding) : undefined,
      )
      .catch((err: Error): ItemResult[] => batch.map(() => ({ ok: false, error: err.message })))
      .then((results) => {
        this.options.onBatch?.({
          items: results.length,
          chunks: results.reduce((n, r) => n + (r.ok ? r.chunks.length : 0), 0),
          millis: performance.now() - started,
          model: embedding.model,
        });
        return Promise.all(results.map((r, i) => this.commitResult(kb, batch[i]!.job, r)));
      })
      .catch((err) => this.log('error', 'could not record an ingestion result', { error: String(err) }))
      .finally(() => {
        this.inFlight--;
        this.pump();
      });
  }

  private async commitResult(kb: KnowledgeBase, job: QueueEntry, result: ItemResult): Promise<void> {
    const item = kb.contents.get(job.id);
    // Deleted or updated while in flight: the newer version has its own job.
    if (!item || item.current.version !== job.version || this.closed || this.kbs.get(kb.id) !== kb) return;
    if (!result.ok && result.chunks === undefined) {
      await this.commit({ t: 'content.failed', kbId: job.kbId, id: job.id, version: job.version, error: result.error, at: now() });
      return;
    }
    if (!result.ok) {
      // Embedding failed: often a model endpoint that is down for a moment. Try again later; once
      // the attempts are used up, index the chunks for full-text search and mark the item failed.
      const retry = this.options.embeddingRetry ?? DEFAULT_EMBEDDING_RETRY;
      const attempt = job.attempt ?? 1;
      if (attempt < retry.attempts) {
        item.status = 'pending';
        const delay = Math.min(retry.maxMs, retry.baseMs * 2 ** (attempt - 1));
        this.log('warn', 'embedding failed; retrying', { kbId: job.kbId, id: job.id, attempt, retryInMs: delay, error: result.error });
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          this.queue.push({ ...job, attempt: attempt + 1 });
          this.pump();
        }, delay);
        this.retryTimers.add(timer);
        return;
      }
    }
    const vectors = kb.vectors && result.ok && result.vectors ? result.vectors.map((v) => kb.vectors!.quantize(v)) : undefined;
    await this.commit(
      {
        t: 'content.indexed',
        kbId: job.kbId,
        id: job.id,
        version: job.version,
        analyzer: ANALYZER_VERSION,
        // Chunk ids and document numbers are fixed here, just before the record is applied (no
        // await in between), so id order follows document order and replay rebuilds both.
        chunks: result.chunks!.map((c): IndexedChunk => ({ id: newId('ch'), ...c })),
        firstDoc: kb.docSpace,
        ...(result.ok ? {} : { embeddingError: `${result.error} (after ${job.attempt ?? 1} attempts; found by full-text search only until re-indexed)` }),
        at: now(),
      },
      vectors ? kb.vectors!.storedBytes(vectors) : undefined,
    );
  }

  /**
   * Build HNSW graphs in the background on the main thread: 5 ms of every 25 ms while requests are
   * being served, 20 ms of every 25 ms while idle (a request arriving then waits at most one step);
   * searches stay exact (and correct) until a graph has caught up.
   */
  private scheduleGraphBuild(): void {
    if (this.graphTimer || this.closed) return;
    this.graphTimer = setInterval(() => {
      const budget = this.options.idle?.() ? 20 : 5;
      let pending = false;
      for (const kb of this.kbs.values()) {
        if (kb.vectors && kb.vectors.graphPending > 0) {
          // Small batches: one USearch batch add runs to its end, so the batch bounds the stall.
          pending = !kb.vectors.buildStep(budget, 8) || pending;
        }
      }
      if (!pending) {
        clearInterval(this.graphTimer);
        this.graphTimer = undefined;
      }
    }, 25);
    this.graphTimer.unref?.();
  }

  /** Load a model in every worker ahead of the first request; resolves with the load time. */
  preloadModel(spec: EmbeddingSpec): Promise<number> {
    return this.compute.preload(spec);
  }

  // --- search ---------------------------------------------------------------------------------

  searchFullText(orgId: string, kbId: string, req: SearchRequest): ChunkHit[] | undefined {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    return kb.searchFullText(analyze(req.query), req.limit, req.filter);
  }

  private async queryVector(kb: KnowledgeBase, query: string): Promise<Float32Array> {
    const { embedding } = kb.record.config;
    if (embedding.dimensions === 0) throw new EmbeddingError('this knowledge base has no embedding model');
    return this.compute.embedQuery(toSpec(embedding), query);
  }

  /** Nearest chunks by cosine similarity. Throws EmbeddingError when the model fails. */
  async searchSemantic(orgId: string, kbId: string, req: SearchRequest): Promise<ChunkHit[] | undefined> {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    const vector = await this.queryVector(kb, req.query);
    return kb.searchSemantic(vector, req.limit, req.filter);
  }

  async searchHybrid(orgId: string, kbId: string, req: SearchRequest & HybridOptions): Promise<HybridHit[] | undefined> {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    const terms = analyze(req.query);
    // A pure full-text blend needs no query vector (and no model).
    const vector = req.semanticWeight === 0 && req.fusion === 'weighted' ? undefined : await this.queryVector(kb, req.query);
    return kb.searchHybrid(terms, vector, req.limit, req, req.filter);
  }

  /** Direct access for benchmarks and tests inside the process. */
  knowledgeBase(kbId: string): KnowledgeBase | undefined {
    return this.kbs.get(kbId);
  }

  stats(): { knowledgeBases: number; contents: number; chunks: number; queueDepth: number } {
    let contents = 0;
    let chunks = 0;
    for (const kb of this.kbs.values()) {
      contents += kb.contentCount;
      chunks += kb.chunkCount;
    }
    return { knowledgeBases: this.kbs.size, contents, chunks, queueDepth: this.queueDepth };
  }

  async metrics(): Promise<EngineMetrics> {
    const contentsByStatus: Record<string, number> = { pending: 0, processing: 0, ready: 0, failed: 0 };
    const byType: EngineMetrics['byType'] = {};
    for (const kb of this.kbs.values()) {
      for (const item of kb.contents.values()) contentsByStatus[item.status] = (contentsByStatus[item.status] ?? 0) + 1;
      const t = (byType[kb.record.type] ??= { knowledgeBases: 0, chunks: 0, vectors: 0, graphPending: 0 });
      t.knowledgeBases++;
      t.chunks += kb.chunkCount;
      t.vectors += kb.vectors?.size ?? 0;
      t.graphPending += kb.vectors?.graphPending ?? 0;
    }
    return {
      queueDepth: this.queueDepth,
      contentsByStatus,
      byType,
      walBytes: await this.wal.sizeBytes(),
      workerCrashes: this.compute.documents.crashes + this.compute.queries.crashes,
    };
  }

  /** Stop ingestion and flush the log. In-flight items are indexed again at the next start. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.graphTimer);
    for (const timer of this.retryTimers) clearTimeout(timer);
    await this.compute.close();
    await this.snapshotPool?.close();
    await this.wal.close();
  }
}

interface QueueEntry {
  kbId: string;
  id: string;
  version: number;
  /** Which attempt at embedding this is (1 when absent). */
  attempt?: number;
}

/** The provider spec a knowledge base configuration records. */
export function toSpec(embedding: KnowledgeBaseConfig['embedding']): EmbeddingSpec {
  if (embedding.provider === 'none') throw new EmbeddingError('this knowledge base has no embedding model');
  const { metric: _metric, quantization: _quantization, ...spec } = embedding;
  return spec as EmbeddingSpec;
}

export interface SnapshotInfo {
  seq: number;
  dir: string;
  manifest: SnapshotManifest;
}
