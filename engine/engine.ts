import type { EmbeddingSpec } from './embedding/provider';
import { EngineError } from './errors';
import type { Compute } from './ingest/compute';
import { progressOf, type IngestionProgress } from './ingest/progress';
import { buildKey, type IngestionQueue } from './ingest/queue';
import { ContentWaiters } from './ingest/waiters';
import type { ContentItem, KnowledgeBase } from './kb/knowledge-base';
import type { ItemMark } from './kb/item-dump';
import type { LogRange } from './log/log';
import { checkOrgQuota, contentOf, heldKbOf, kbOf, now, type EngineCore } from './methods/core';
import * as contents from './methods/contents';
import * as imports from './methods/import';
import * as kbs from './methods/knowledge-bases';
import * as reembedding from './methods/reembed';
import * as search from './methods/search';
import { openNode, type Node } from './node/open';
import { assembleParts, type EngineParts } from './parts';
import { commitRecord } from './node/commit';
import { ItemSettler } from './search/items';
import type { KnowledgeBaseConfig, KnowledgeBaseRecord, LogRecord } from './records';
import type { HybridOptions } from './search/hybrid';
import type { ShardSet } from './shards';
import type { LiveState } from './state/live-state';
import { collectMetrics, countState, reembedSummary, type EngineMetrics } from './state/metrics';
import type { Quotas } from './state/quotas';
import type { TextStore } from './text/text-store';
import type { GraphBuilder } from './vector/graph-builder';
import { lockDataDir } from './files/data-dir-lock';
import type { EngineLog, EngineOptions, NewContent, RecoveryReport, ReplicationStatus, SearchRequest } from './options';

export class Engine {
  private readonly state: LiveState;
  private readonly texts: TextStore;
  private readonly waiters = new ContentWaiters();
  private readonly pacer: GraphBuilder;
  /** Groups newly indexed items in the background (search/items.ts). */
  private readonly settler: ItemSettler;
  private readonly compute: Compute;
  private readonly ingestion: IngestionQueue;
  /** The knowledge bases whose content this node holds (all on a single node). */
  readonly shards: ShardSet;
  /** What the methods (engine/methods) work on. */
  private readonly core: EngineCore;
  private readonly say: EngineLog;
  private closed = false;
  private readonly closers: (() => Promise<void>)[] = [];

  private constructor(
    parts: EngineParts,
    private readonly node: Node,
    readonly recovery: RecoveryReport,
    quotas: EngineOptions['quotas'],
  ) {
    ({ say: this.say, shards: this.shards, state: this.state, pacer: this.pacer, compute: this.compute, ingestion: this.ingestion, texts: this.texts } = parts);
    this.settler = new ItemSettler(this.state.kbs);
    this.core = {
      state: this.state,
      originals: parts.originals,
      shards: this.shards,
      searcher: parts.searcher,
      routeOf: (kbId) => this.node.routeOf(kbId),
      quotas,
      commit: (r, a, check) => this.commit(r, a, check),
      enqueue: (kbId, id, version, configId) => this.enqueue(kbId, id, version, configId),
    };
  }

  /** Open from the starting point (a snapshot, see snapshots/), then the log after it. */
  static async open(options: EngineOptions): Promise<Engine> {
    // One engine per data directory (files/data-dir-lock.ts), held until close.
    const unlock = lockDataDir(options.dataDir, options.log);
    try {
      const engine = await Engine.openLocked(options);
      engine.unlock = unlock;
      return engine;
    } catch (err) {
      unlock();
      throw err;
    }
  }

  private unlock = () => {};

  private static async openLocked(options: EngineOptions): Promise<Engine> {
    let engine: Engine | undefined;
    const parts = assembleParts(options, {
      commit: (record, attachment) => engine?.commit(record, attachment) ?? Promise.reject(new EngineError('ENGINE_CLOSED', 'The engine is not open yet')),
      built: (kbId) => engine?.activateIfBuilt(kbId),
      vectorsAdded: () => engine?.pacer.schedule(),
      indexed: (kbId) => engine?.settler.indexed(kbId),
    });
    const { state, shards, compute, ingestion, say } = parts;
    // Nothing of a failed start stays behind (the server may try again from another snapshot).
    const abandon = async () => {
      state.close();
      await compute.close();
      parts.texts.close();
    };
    const started = performance.now();
    let checksWaitMs = 0;
    const start = await options.startFrom?.();
    // Item dumps (a snapshot of the engine's own state) stand for every record of the snapshot.
    const fromDumps = start?.items !== undefined && shards.holdsAll;
    try {
      // Index sets the snapshot dumped are loaded as they were, not rebuilt record by record.
      // Not for knowledge bases whose content this node skips (shards held elsewhere): nothing to load into.
      if (start?.indexes) state.restoreIndexes(start.indexes.filter((d) => shards.holds(d.kbId)));
      if (fromDumps) state.loadItems(start.items!);
      else start?.replay((record, attachment, text) => state.apply(record, attachment, text));
      state.finishRestore();
      // A snapshot holding more shards than this node (its content was skipped above): their graphs too.
      for (const g of start?.graphs ?? []) if (shards.holds(g.kbId)) state.kbs.get(g.kbId)?.attachGraph(g.path, g.docs);
      const checked = performance.now();
      await start?.checks;
      checksWaitMs = Math.round(performance.now() - checked);
    } catch (err) {
      await abandon();
      throw err;
    }
    const fromSnapshotMs = Math.round(performance.now() - started);
    const capacity = compute.documents.size * (options.batchItems ?? 16) * 2;
    const room = { capacity, free: () => capacity - ingestion.depth };
    const node = await openNode(
      options,
      room,
      {
        state,
        ingestion,
        shards,
        apply: (record, attachment) => state.apply(record, attachment),
        settled: (record) => engine?.waiters.settled(record, state.kbs),
        say,
        fatal: (message, err) => {
          say('error', message, { error: String(err) });
          options.onFatal?.(err);
        },
      },
      start?.seq,
    ).catch(async (err) => {
      await abandon();
      throw err;
    });
    const requeued = node.requeueUnfinished();
    engine = new Engine(
      parts,
      node,
      {
        snapshot: start
          ? {
              seq: start.seq,
              records: start.records,
              millis: fromSnapshotMs,
              from: fromDumps ? 'dumps' : 'records',
              ...(start.checks ? { checksWaitMillis: checksWaitMs } : {}),
            }
          : undefined,
        records: node.recovered,
        ...countState(state.kbs),
        requeued,
        millis: Math.round(performance.now() - started),
      },
      options.quotas,
    );
    // A build whose last result was logged just before a stop is complete: activate it now.
    for (const kb of state.kbs.values()) if (kb.building && shards.holds(kb.id)) engine.activateIfBuilt(kb.id);
    engine.pacer.schedule();
    // Items a restart replayed (not loaded from a dump) are grouped in the background, not by the first search.
    for (const kb of state.kbs.values()) if (shards.holds(kb.id)) engine.settler.indexed(kb.id);
    if (!options.holdIngestion) engine.startIngestion();
    return engine;
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

  /** Bytes of the log (after `afterSeq`: of the records after it). */
  logBytes = (afterSeq?: number): Promise<number> => this.node.log.sizeBytes(afterSeq);
  /** Seal the log written so far; resolves with the last sealed sequence number. */
  sealLog(): Promise<number> {
    return this.closed ? Promise.reject(new EngineError('ENGINE_CLOSED', 'The engine is closed')) : this.node.log.roll();
  }

  /** Log a record that changes nothing (LogRecord 'log.mark'): a later log position for the next snapshot. */
  markLog = async (): Promise<void> => {
    await this.commit({ t: 'log.mark', at: now() });
  };
  /**
   * Whether snapshots can hold dumps of this engine's state: a single node, whose own log (segments
   * on disk) holds every record of every shard. A cluster's snapshots never do (the log is shared).
   */
  get dumpsState(): boolean {
    const seq = this.lastSequence;
    return this.shards.holdsAll && this.logRange(seq, seq).kind === 'segments';
  }

  /** Sealed log records (afterSeq, throughSeq], readable from a worker thread (readLogRange). */
  logRange = (afterSeq: number, throughSeq: number): LogRange => this.node.log.range(afterSeq, throughSeq);
  /** Remove log records a snapshot at `seq` covers (as far as the mode allows); resolves with the log parts removed. */
  truncateLog = (seq: number): Promise<number> => this.node.truncateLog(seq);
  /** Knowledge bases with fewer vectors keep no HNSW graph (in memory or in snapshots). */
  get graphThreshold(): number {
    return this.state.graphThreshold;
  }
  /** Vectors not yet in graphs holding these many keys per knowledge base, or in the graphs as they are (LiveState.vectorsOutsideGraphs). */
  vectorsOutsideGraphs = (inGraphs?: ReadonlyMap<string, number>): number => this.state.vectorsOutsideGraphs(inGraphs);
  /** Knowledge bases past the graph threshold whose graph is not a file the builder wrote (LiveState.graphsOutsideFiles). */
  graphsOutsideFiles = (): number => this.state.graphsOutsideFiles();
  /** Save every in-memory HNSW graph (to `pathOf(kbId)`), with the documents each holds. */
  saveGraphs = (pathOf: (kbId: string) => string, options: { viewsOnly?: boolean } = {}) => this.state.saveGraphs(pathOf, options.viewsOnly);
  /** Every index set as flat arrays that later changes leave as they are (a snapshot writes them while the engine goes on). */
  dumpIndexes = () => this.state.dumpIndexes();
  /**
   * Every knowledge base's items and the text store's file, when all can be dumped (LiveState.dumpItems);
   * same rule as dumpIndexes. `bases`: marks of full item dumps held, whose deltas may be given instead.
   */
  dumpItems = (bases?: ReadonlyMap<string, ItemMark>) => this.state.dumpItems(bases);

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
  reembedChanged = (wanted: Parameters<typeof reembedding.reembedChanged>[1]) => reembedding.reembedChanged(this.core, wanted);

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
  /** Many text items logged as one durable batch (JSONL import) and queued for indexing; their ids, in order. */
  importContents = (orgId: string, kbId: string, items: readonly imports.ImportItem[]): Promise<string[]> =>
    imports.importContents(this.core, orgId, kbId, items);
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
    progressOf([heldKbOf(this.core, orgId, kbId)], this.ingestion.throughput.perSecond(kbId), (item) => this.ingestion.chunksDone.get(item) ?? 0);

  /** BM25 (the query's phrases and exclusions hold on every hit), cosine, and the blend: methods/search.ts. */
  searchFullText = (orgId: string, kbId: string, req: SearchRequest) => search.fullText(this.core, orgId, kbId, req);
  searchSemantic = (orgId: string, kbId: string, req: SearchRequest) => search.semantic(this.core, this.compute, orgId, kbId, req);
  searchHybrid = (orgId: string, kbId: string, req: SearchRequest & HybridOptions) => search.hybrid(this.core, this.compute, orgId, kbId, req);

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

  /** Resolves true once the log is applied as far as it reaches now, on whichever node it was written; false after `timeoutMs`. */
  whenCurrent = (timeoutMs: number): Promise<boolean> => this.node.whenCurrent(timeoutMs);

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
      textBytes: this.texts.bytes,
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
    await this.pacer.stop();
    await this.core.searcher.stop();
    this.settler.stop();
    this.ingestion.close();
    await this.compute.close();
    await this.node.close();
    this.state.close();
    this.texts.close();
    this.unlock();
  }
}
