// The search engine as a library: knowledge bases, content items and their indexes in memory,
// every change logged durably before it is acknowledged, ingestion in worker threads. No HTTP here;
// callers pass the organization that owns each resource, and another organization's resources
// behave as if they did not exist.
import { join } from 'node:path';
import { analyze, ANALYZER_VERSION } from './analysis/analyzer';
import type { Metadata, MetadataFilter } from './filter/metadata';
import { newId, observeId } from './ids';
import { WorkerPool } from './ingest/pool';
import { KnowledgeBase, type ChunkHit, type ContentItem } from './kb/knowledge-base';
import type { ContentSource, IndexedChunk, KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from './records';
import { decodePayload, encodePayload } from './wal/codec';
import { WriteAheadLog } from './wal/log';

export interface EngineOptions {
  dataDir: string;
  /** Ingestion worker threads. */
  workers?: number;
  walSegmentBytes?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => void;
  /** Called when the log can no longer be written; the owner should stop the process. */
  onFatal?: (err: unknown) => void;
}

export interface RecoveryReport {
  records: number;
  knowledgeBases: number;
  contents: number;
  chunks: number;
  requeued: number;
  millis: number;
}

export interface NewContent {
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
  private pool!: WorkerPool;
  private readonly queue: { kbId: string; id: string; version: number }[] = [];
  private inFlight = 0;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private closed = false;
  recovery!: RecoveryReport;

  private constructor(private readonly options: EngineOptions) {}

  private log(level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>): void {
    (this.options.log ?? ((l, m, d) => console[l](m, d ?? '')))(level, message, details);
  }

  static async open(options: EngineOptions): Promise<Engine> {
    const engine = new Engine(options);
    const started = performance.now();
    let records = 0;
    engine.wal = await WriteAheadLog.open(
      {
        dir: join(options.dataDir, 'wal'),
        segmentBytes: options.walSegmentBytes,
        warn: (message, details) => engine.log('warn', message, details),
      },
      ({ payload }) => {
        const { record } = decodePayload<LogRecord>(payload);
        engine.apply(record, true);
        records++;
      },
    );
    engine.pool = new WorkerPool(options.workers ?? 1);
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
      records,
      knowledgeBases: engine.kbs.size,
      contents,
      chunks: [...engine.kbs.values()].reduce((n, kb) => n + kb.chunkCount, 0),
      requeued,
      millis: Math.round(performance.now() - started),
    };
    engine.pump();
    return engine;
  }

  // --- the log --------------------------------------------------------------------------------

  /**
   * Apply a record to memory. `replaying` is true while the log is read at start-up. Returns the
   * content item the record settled (ready, failed or deleted), so waiters can be told once the
   * record is durable.
   */
  private apply(record: LogRecord, replaying: boolean): ContentItem | undefined {
    switch (record.t) {
      case 'kb.create':
        if (replaying) observeId(record.kb.id);
        this.kbs.set(record.kb.id, new KnowledgeBase(record.kb));
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
        break;
      }
      case 'content.put': {
        const kb = this.kbs.get(record.kbId);
        if (!kb) break;
        if (replaying) observeId(record.id);
        const item = kb.putContent(
          record.id,
          { version: record.version, text: record.text, metadata: record.metadata, source: record.source, pages: record.pages },
          record.at,
        );
        break;
      }
      case 'content.delete': {
        const kb = this.kbs.get(record.kbId);
        const item = kb?.contents.get(record.id);
        if (!kb || !item) break;
        kb.deleteContent(record.id);
        return item;
      }
      case 'content.indexed': {
        const item = this.kbs.get(record.kbId)?.contents.get(record.id);
        // A result for a version that has since been replaced is stale: the newer one follows.
        if (!item || item.current.version !== record.version) break;
        if (record.analyzer !== ANALYZER_VERSION) break; // stays pending: re-analyzed after start-up
        if (replaying) for (const c of record.chunks) observeId(c.id);
        this.kbs.get(record.kbId)!.applyIndexed(item, record.chunks);
        return item;
      }
      case 'content.failed': {
        const item = this.kbs.get(record.kbId)?.contents.get(record.id);
        if (!item || item.current.version !== record.version) break;
        item.status = 'failed';
        item.error = record.error;
        return item;
      }
    }
  }

  /**
   * Apply a record and make it durable. State changes in memory at once (in log order); the
   * promise resolves when the record is fsynced, which is when the caller may acknowledge it.
   */
  private async commit(record: LogRecord): Promise<void> {
    if (this.closed) throw new Error('engine is closed');
    const durable = this.wal.append(encodePayload(record));
    const settled = this.apply(record, false);
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

  // --- knowledge bases ------------------------------------------------------------------------

  private kbOf(orgId: string, kbId: string): KnowledgeBase | undefined {
    const kb = this.kbs.get(kbId);
    return kb && kb.record.orgId === orgId ? kb : undefined;
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
    const id = newId('ct');
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

  private pump(): void {
    // Keep every worker busy plus one job waiting each, no more: the queue itself is cheap.
    while (!this.closed && this.inFlight < this.pool.size * 2 && this.queue.length > 0) {
      const next = this.queue.shift()!;
      const kb = this.kbs.get(next.kbId);
      const item = kb?.contents.get(next.id);
      if (!kb || !item || item.current.version !== next.version) continue; // deleted or superseded
      this.inFlight++;
      item.status = 'processing';
      const version = item.current;
      this.pool
        .run({ text: version.text, chunking: kb.record.config.chunking, pages: version.pages })
        .then(
          (chunks) =>
            this.commitIfCurrent(next, {
              t: 'content.indexed',
              kbId: next.kbId,
              id: next.id,
              version: next.version,
              analyzer: ANALYZER_VERSION,
              // Chunk ids are made here, in commit order, so id order follows document order.
              chunks: chunks.map((c): IndexedChunk => ({ id: newId('ch'), ...c })),
              at: now(),
            }),
          (err: Error) =>
            this.commitIfCurrent(next, { t: 'content.failed', kbId: next.kbId, id: next.id, version: next.version, error: err.message, at: now() }),
        )
        .catch((err) => this.log('error', 'could not record an ingestion result', { contentId: next.id, error: String(err) }))
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  private async commitIfCurrent(job: { kbId: string; id: string; version: number }, record: LogRecord): Promise<void> {
    const item = this.kbs.get(job.kbId)?.contents.get(job.id);
    if (!item || item.current.version !== job.version || this.closed) return;
    await this.commit(record);
  }

  // --- search ---------------------------------------------------------------------------------

  searchFullText(orgId: string, kbId: string, req: SearchRequest): ChunkHit[] | undefined {
    const kb = this.kbOf(orgId, kbId);
    if (!kb) return undefined;
    return kb.searchFullText(analyze(req.query), req.limit, req.filter);
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

  /** Stop ingestion and flush the log. In-flight items are indexed again at the next start. */
  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close();
    await this.wal.close();
  }
}
