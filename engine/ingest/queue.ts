// The ingestion queue: content versions waiting to be chunked and embedded, sent to the document
// workers in batches, their results committed to the log as `content.indexed` (or `failed`)
// records. A job indexes for the knowledge base's active configuration, or for the one being built
// beside it (re-embedding: engine/reembed.ts); each writes its configuration into its record, so a
// result for a configuration since replaced is a no-op. Batches are taken fairly: round robin across organizations, then across an
// organization's knowledge bases, in order within a knowledge base (fair-queue.ts). Embedding
// failures are retried with backoff; then the chunks are indexed for full-text search only and the
// item is failed.
import { ANALYZER_VERSION } from '../analysis/analyzer';
import { toSpec } from '../embedding/provider';
import { newId } from '../ids';
import type { ContentItem, KnowledgeBase } from '../kb/knowledge-base';
import type { IndexSet } from '../kb/index-set';
import type { IndexedChunk, LogRecord } from '../records';
import { markPending, markProcessing } from '../state/content-status';
import type { Compute } from './compute';
import { RecordTooLargeError } from '../log/jetstream-log';
import { ThroughputMeter } from './progress';
import type { ItemResult } from './handlers';
import { FairQueue } from './fair-queue';
import { textLengthOf } from '../kb/status-tally';
import { backoffDelay } from '../retry';

export const DEFAULT_EMBEDDING_RETRY = { attempts: 8, baseMs: 2000, maxMs: 60_000 };

/** One worker request done: how much of one knowledge base it indexed and how long it took. */
export interface IngestionBatch {
  kbId: string;
  /** A batch of a configuration being built (re-embedding). */
  configId?: string;
  items: number;
  chunks: number;
  millis: number;
  model: string;
}

interface QueueEntry {
  kbId: string;
  id: string;
  version: number;
  /** Which attempt at embedding this is (1 when absent). */
  attempt?: number;
  /** For the configuration being built (re-embedding); absent: the active one. */
  configId?: string;
  /** Told once the job is over: its result committed (or nothing left to do), or not (it failed). */
  settled?: (outcome: 'done' | 'failed') => void;
}

export interface IngestionQueueOptions {
  knowledgeBases: Map<string, KnowledgeBase>;
  compute: Compute;
  /** Log a record (applied at once, resolved when durable). */
  commit: (record: LogRecord, attachment?: Uint8Array) => Promise<unknown>;
  /** Most content items in one worker request (default 16; a share of it while several organizations wait). */
  batchItems?: number;
  embeddingRetry?: { attempts: number; baseMs: number; maxMs: number };
  onBatch?: (batch: IngestionBatch) => void;
  /** A result for a configuration being built was committed (the build may be complete). */
  onBuilt?: (kbId: string) => void;
  log: (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => void;
  /** Send nothing to the workers until start() (the models load first). */
  held?: boolean;
}

const now = () => new Date().toISOString();

/** Under which key the throughput of a build is measured. */
export const buildKey = (kbId: string, configId: string) => `${kbId} ${configId}`;

/** Items whose newest version the configuration being built has no outcome for (at start-up: a build to go on with). */
export function* unbuiltItems(knowledgeBases: Map<string, KnowledgeBase>): Generator<{ kbId: string; item: ContentItem; configId: string }> {
  for (const kb of knowledgeBases.values()) {
    const configId = kb.building?.id;
    const set = kb.indexSet(configId);
    if (!configId || !set) continue;
    for (const item of kb.contents.values()) if (kb.statusIn(set, item) === 'pending') yield { kbId: kb.id, item, configId };
  }
}

/** Items waiting for indexing or in flight (at start-up: those the last run left unfinished). */
export function* unfinishedItems(knowledgeBases: Map<string, KnowledgeBase>): Generator<{ kbId: string; item: ContentItem }> {
  for (const kb of knowledgeBases.values()) {
    for (const item of kb.contents.values()) if (item.status === 'pending' || item.status === 'processing') yield { kbId: kb.id, item };
  }
}

/** About this many chunks of text in one worker request (a share of it while several organizations wait). */
const BATCH_CHUNKS = 16;
/**
 * Batches for a remote embedding endpoint (OpenAI-compatible) are this many times larger: its
 * worker mostly waits on one round trip per request, so per-batch costs (the round trip, the worker
 * message, the log commit) set the pace, not the model. A 16-chunk batch made bulk loads with a
 * fast endpoint wait on round trips (Little's law: 2 batches in flight per worker).
 */
const REMOTE_BATCH_SCALE = 4;

/**
 * How much of a full batch one turn takes when `organizations` have content waiting: all of it for
 * one indexing alone (its throughput unchanged); with others waiting, an equal share, so a round of
 * turns stays about one full batch of work and another organization's small write waits for the
 * batches in flight and about one batch more, however many organizations have a backlog. Never
 * below a quarter: batching is what makes embedding fast.
 */
export function batchShare(full: number, organizations: number): number {
  return organizations <= 1 ? full : Math.max(Math.ceil(full / organizations), Math.ceil(full / 4));
}

export class IngestionQueue {
  /** Waiting entries, taken fairly across organizations and knowledge bases. */
  private readonly queue = new FairQueue<QueueEntry>();
  /** Batches in the workers (or committing their results). */
  private inFlight = 0;
  private readonly retryTimers = new Set<ReturnType<typeof setTimeout>>();
  private running: boolean;
  private closed = false;
  /** Chunks indexed per second over the last minute, per knowledge base. */
  readonly throughput = new ThroughputMeter();
  /** Items being indexed in runs (large ones): the chunks done so far. */
  readonly chunksDone = new WeakMap<ContentItem, number>();

  constructor(private readonly options: IngestionQueueOptions) {
    this.running = options.held !== true;
  }

  /** Items waiting plus batches being indexed. */
  get depth(): number {
    return this.queue.size + this.inFlight;
  }

  /** Queue a content version for the active configuration, or (`configId`) for the one being built. */
  enqueue(kbId: string, id: string, version: number, settled?: QueueEntry['settled'], configId?: string): void {
    this.push({ kbId, id, version, settled, ...(configId ? { configId } : {}) });
    this.pump();
  }

  /** Into the fair queue, under its knowledge base's organization; a build takes turns with the knowledge base's own writes. */
  private push(job: QueueEntry): void {
    // A knowledge base already gone: its jobs are dropped at their turn, whatever they are filed under.
    const org = this.options.knowledgeBases.get(job.kbId)?.record.orgId ?? '';
    this.queue.push(org, job.configId ? `${job.kbId} ${job.configId}` : job.kbId, job);
  }

  /** At start-up: whatever was pending or in flight at the last stop is indexed again (builds too). Returns how many. */
  requeueUnfinished(): number {
    let requeued = 0;
    for (const { kbId, item } of unfinishedItems(this.options.knowledgeBases)) {
      markPending(this.options.knowledgeBases.get(kbId)!, item);
      this.push({ kbId, id: item.id, version: item.current.version });
      requeued++;
    }
    for (const { kbId, item, configId } of unbuiltItems(this.options.knowledgeBases)) {
      this.push({ kbId, id: item.id, version: item.current.version, configId });
      requeued++;
    }
    this.pump();
    return requeued;
  }

  /** Start sending queued content to the workers (once the models are loaded, when held). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.pump();
  }

  close(): void {
    this.closed = true;
    for (const timer of this.retryTimers) clearTimeout(timer);
  }

  private pump(): void {
    if (!this.running) return;
    // One request per worker plus one waiting each: the queue itself is cheap, the workers are not.
    const fullItems = this.options.batchItems ?? 16;
    const { compute, knowledgeBases } = this.options;
    while (!this.closed && this.inFlight < compute.documents.size * 2 && this.queue.size > 0) {
      // A batch: the next items of the knowledge base whose turn it is (one model), up to maxItems
      // or about maxChunks chunks of text, so short items share embedding calls and long ones go alone.
      const organizations = this.queue.organizations;
      const maxItems = batchShare(fullItems, organizations);
      const maxChunks = batchShare(BATCH_CHUNKS, organizations);
      const batch: { job: QueueEntry; item: ContentItem }[] = [];
      let chars = 0;
      let target: { kb: KnowledgeBase; set: IndexSet } | undefined;
      let scale = 1;
      this.queue.take(maxItems * REMOTE_BATCH_SCALE, (job) => {
        const jobKb = knowledgeBases.get(job.kbId);
        const item = jobKb?.contents.get(job.id);
        const set = jobKb?.indexSet(job.configId);
        // Deleted or superseded; or built already, or for a build no longer wanted.
        if (!jobKb || !item || !set || item.current.version !== job.version || (job.configId && jobKb.statusIn(set, item) !== 'pending')) {
          job.settled?.('done');
          return 'drop';
        }
        if (!target) scale = set.config.embedding.provider === 'http' ? REMOTE_BATCH_SCALE : 1;
        target = { kb: jobKb, set };
        batch.push({ job, item });
        // The length alone: a stored text is read once, when the batch is sent.
        chars += textLengthOf(item.current);
        return batch.length >= maxItems * scale || chars >= maxChunks * scale * set.config.chunking.size ? 'last' : 'take';
      });
      if (!target || batch.length === 0) continue;
      this.runBatch(target.kb, target.set, batch);
    }
  }

  private runBatch(kb: KnowledgeBase, set: IndexSet, batch: { job: QueueEntry; item: ContentItem }[]): void {
    this.inFlight++;
    const building = set !== kb.indexSet(undefined);
    const versions = batch.map(({ item }) => {
      if (!building) markProcessing(kb, item);
      return item.current;
    });
    const { chunking, embedding } = set.config;
    const started = performance.now();
    const paceKey = building ? buildKey(kb.id, set.config.id) : kb.id;
    // A large item reports its runs as they are done: the pace moves, and its chunks leave the waiting count.
    let reported = 0;
    let lastReport = started;
    const onChunks = (chunks: number) => {
      const at = performance.now();
      this.throughput.record({ kbId: paceKey, chunks, millis: at - lastReport });
      lastReport = at;
      reported += chunks;
      for (const { item } of batch) this.chunksDone.set(item, reported);
    };
    // Texts are read here (from the text store): a read that fails fails this batch; thrown out of
    // runBatch it would leave inFlight counted for ever and stop the pump.
    let processing: Promise<ItemResult[]>;
    try {
      processing = this.options.compute.process(
        versions.map((v) => ({ text: v.text, chunking, pages: v.pages })),
        embedding.dimensions > 0 ? toSpec(embedding) : undefined,
        onChunks,
      );
    } catch (err) {
      processing = Promise.reject(err);
    }
    processing
      .catch((err: Error): ItemResult[] => batch.map(() => ({ ok: false, error: err.message })))
      .then((results) => {
        const done: IngestionBatch = {
          kbId: kb.id,
          ...(building ? { configId: set.config.id } : {}),
          items: results.length,
          chunks: results.reduce((n, r) => n + (r.ok ? r.chunks.length : 0), 0),
          millis: performance.now() - started,
          model: embedding.model,
        };
        // A build's pace apart from the knowledge base's own writes (its progress has an ETA of its own);
        // what the runs of a large item reported already is not counted twice.
        for (const { item } of batch) this.chunksDone.delete(item);
        this.throughput.record({ ...done, kbId: paceKey, chunks: Math.max(0, done.chunks - reported), millis: performance.now() - lastReport });
        this.options.onBatch?.(done);
        return Promise.all(
          results.map((r, i) => {
            const { job } = batch[i]!;
            return this.commitResult(kb, set, job, r).then(
              (retrying) => retrying || job.settled?.('done'),
              (err) => {
                job.settled?.('failed');
                throw err;
              },
            );
          }),
        );
      })
      .catch((err) => this.options.log('error', 'could not record an ingestion result', { error: String(err) }))
      .finally(() => {
        this.inFlight--;
        this.pump();
      });
  }

  /** Commit a job's result; true when the job is instead tried again later. */
  private async commitResult(kb: KnowledgeBase, set: IndexSet, job: QueueEntry, result: ItemResult): Promise<boolean> {
    const item = kb.contents.get(job.id);
    // Deleted or updated while in flight (the newer version has its own job), or the configuration
    // indexed for is no longer active or being built.
    if (!item || item.current.version !== job.version || this.closed || this.options.knowledgeBases.get(kb.id) !== kb || kb.indexSet(set.config.id) !== set)
      return false;
    if (!result.ok && result.chunks === undefined) {
      await this.options.commit({
        t: 'content.failed',
        kbId: job.kbId,
        id: job.id,
        version: job.version,
        error: result.error,
        configId: set.config.id,
        at: now(),
      });
      this.built(job);
      return false;
    }
    if (!result.ok && this.retryLater(item, job, result.error)) return true;
    const vectors = result.ok && result.vectors ? set.storedVectors(result.vectors) : undefined;
    await this.commitIndexed(job, set, result, vectors);
    this.built(job);
    return false;
  }

  /** A build's result is in: it may be complete now. */
  private built(job: QueueEntry): void {
    if (job.configId) this.options.onBuilt?.(job.kbId);
  }

  private async commitIndexed(job: QueueEntry, set: IndexSet, result: ItemResult, vectors: ReturnType<IndexSet['storedVectors']>): Promise<void> {
    try {
      await this.options.commit(
        {
          t: 'content.indexed',
          kbId: job.kbId,
          id: job.id,
          version: job.version,
          analyzer: ANALYZER_VERSION,
          // Chunk ids and document numbers are fixed here, just before the record is applied (no
          // await in between), so id order follows document order and replay rebuilds both.
          chunks: result.chunks!.map((c): IndexedChunk => ({ id: newId('ch'), ...c })),
          firstDoc: set.docSpace,
          configId: set.config.id,
          ...(result.ok ? {} : { embeddingError: `${result.error} (after ${job.attempt ?? 1} attempts; found by full-text search only until re-indexed)` }),
          at: now(),
        },
        vectors ? set.vectorBytes(vectors) : undefined,
      );
    } catch (err) {
      // Cluster mode: an item whose result exceeds what NATS carries in one message fails (trying
      // again would fail alike); the operator raises max_payload and re-indexes it.
      if (!(err instanceof RecordTooLargeError)) throw err;
      await this.options.commit({
        t: 'content.failed',
        kbId: job.kbId,
        id: job.id,
        version: job.version,
        error: err.message,
        configId: set.config.id,
        at: now(),
      });
    }
  }

  /**
   * Embedding failed: often a model endpoint that is down for a moment. Queue another attempt after
   * a backoff; false once the attempts are used up (the chunks are then indexed for full-text only).
   */
  private retryLater(item: ContentItem, job: QueueEntry, error: string): boolean {
    const retry = this.options.embeddingRetry ?? DEFAULT_EMBEDDING_RETRY;
    const attempt = job.attempt ?? 1;
    if (attempt >= retry.attempts) return false;
    const kb = this.options.knowledgeBases.get(job.kbId);
    if (!job.configId && kb) markPending(kb, item);
    const delay = backoffDelay(attempt, retry);
    this.options.log('warn', 'embedding failed; retrying', { kbId: job.kbId, id: job.id, attempt, retryInMs: delay, error });
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.push({ ...job, attempt: attempt + 1 });
      this.pump();
    }, delay);
    this.retryTimers.add(timer);
    return true;
  }
}
