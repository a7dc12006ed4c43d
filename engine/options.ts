// What an engine is opened with, and the shapes its methods take and report.
import type { ComputeOptions } from './ingest/compute';
import type { IngestionBatch } from './ingest/queue';
import type { Metadata, MetadataFilter } from './filter/metadata';
import type { ContentSource, LogRecord } from './records';
import type { Quotas } from './state/quotas';
import type { ShardSet } from './shards';
import type { NatsAuth } from './log/nats';
import type { RecordLog } from './log/log';
import type { Refinements } from './search/refine';
import type { IndexSetDump } from './kb/index-set';
import type { EncodedText } from './text/encoded-text';
import type { ItemDump } from './kb/item-dump';

/** Where an engine's state begins before its log is replayed: a snapshot (see snapshots/). */
export interface StartingPoint {
  /** Every log record up to this sequence number is in the starting state. */
  seq: number;
  /** How many records replay hands over. */
  records: number;
  /** Hands every record of the starting state to `apply`, in order. */
  /**
   * Hand every record to `apply`, in order. The attachment may be a view of a buffer reused for the
   * next record (snapshots are streamed): what the state keeps of it must be copied. `text`: a
   * content record's text as the snapshot stores it (a view too), the record's own `text` empty.
   */
  replay(apply: (record: LogRecord, attachment: Uint8Array, text?: EncodedText) => void): void;
  /**
   * Saved HNSW graphs, each holding exactly the vectors of its knowledge base after replay, or the
   * documents in `docs` (then keys not alive are removed and vectors missing from it queued).
   */
  graphs: { kbId: string; path: string; docs?: number[] }[];
  /**
   * Index sets as they were after the last record (chunk table and BM25): their sets skip that
   * work while records replay and load these after. An indexed record of such a set may come
   * without its chunks' terms.
   */
  indexes?: RestoredIndex[];
  /**
   * Every knowledge base's items as they were after the last record (with `indexes` for each of
   * its index sets): given, the engine starts from these and does not replay the records.
   */
  items?: StartingItems;
  /**
   * Checks of what a start from `items` does not read but serves (whole dumps and linked files), run
   * in another thread while the state loads: the engine opens once they pass, and not when one fails.
   */
  checks?: Promise<void>;
}

/** Item dumps of every knowledge base, and the text store's file their texts lie in (its first `bytes`). */
export interface StartingItems {
  kbs: ItemDump[];
  texts: { path: string; bytes: number };
}

/**
 * An index set as it was after the last record. `vectors`: a file holding its stored vectors
 * (`bytes` of rows by document number; whatever follows is not the set's) that the set takes
 * over, hard-linked, instead of storing every vector of the records again.
 */
export interface RestoredIndex {
  kbId: string;
  configId: string;
  dump: IndexSetDump;
  vectors?: { path: string; bytes: number };
}

/** Cluster mode: the log is a replicated JetStream stream every node follows (see engine/log/jetstream-log.ts). */
export interface ClusterOptions {
  /** NATS server URLs (any of the cluster's servers). */
  servers: string[];
  /** Credentials and TLS for every NATS connection of the node (absent: none; see README, "Running a cluster"). */
  natsAuth?: NatsAuth;
  /** The log stream's name; indexing jobs go to `<stream>_JOBS`. */
  stream: string;
  /** Copies JetStream keeps of each record and job (3 on a 3-server cluster). */
  replicas: number;
  /** An indexing job its node stopped reporting on goes to another node after this long (default 30 s). */
  jobAckWaitMs?: number;
  /**
   * A job pulled before this node applied the record that made its version waits this long for it,
   * then goes back to the queue for a node that has (default 30 s). Jobs waiting count against
   * the node's room, so a node whose log stalls cannot pull every job in the cluster.
   */
  jobFollowWaitMs?: number;
  /**
   * How often a node looks for items pending with no job queued (their writer died between
   * logging them and queuing the job) and queues one (default 30 s; an item is looked at once it
   * was pending at two looks in a row).
   */
  jobSweepMs?: number;
  /**
   * Purge the shared stream below this node's snapshots (only with a snapshot store other nodes
   * can start from: a node whose own snapshot the purge passed starts from the store's newest),
   * keeping `purgeMarginRecords` records below (default 10,000) for nodes a little behind.
   */
  purge?: boolean;
  purgeMarginRecords?: number;
  /**
   * The lowest stream position every node can still start from (cluster-wide: each node's shards
   * covered by a snapshot in the store at or after it); the purge never passes it. Absent: this
   * node's own snapshot decides alone (every node holds every shard, and starts from any snapshot).
   */
  purgeFloor?: () => Promise<number>;
  /** This node's name among the live nodes. */
  nodeId?: string;
  /** Where other nodes reach this one over HTTP (requests for shards it holds are forwarded there). */
  advertiseUrl?: string;
  /** The shards this node holds (default: all of one). */
  shards?: ShardSet;
  /** How often a node announces itself among the live nodes (default 1 s). */
  heartbeatMs?: number;
}

/** How the engine and its parts report: one signature everywhere (the server passes its logger). */
export type EngineLog = (level: 'info' | 'warn' | 'error', message: string, details?: Record<string, unknown>) => void;

export interface EngineOptions {
  dataDir: string;
  /** Run as one node of a cluster (absent: a single node with its log on local disk). */
  cluster?: ClusterOptions;
  /** The state to begin from (the log is then replayed after its `seq`); empty when absent. */
  startFrom?: () => Promise<StartingPoint | undefined>;
  /** Worker threads (documents and query lanes) and embedding settings. */
  compute?: Partial<ComputeOptions>;
  /** Most content items in one worker request (small items share embedding batches). */
  batchItems?: number;
  walSegmentBytes?: number;
  /**
   * A single node's log, instead of segment files under `dataDir/wal` (tests: a MemoryLog, as
   * tantivy's RAMDirectory). Replayed after the starting point at open.
   */
  recordLog?: RecordLog;
  log?: EngineLog;
  /** Called when the log can no longer be written; the owner should stop the process. */
  onFatal?: (err: unknown) => void;
  /** Knowledge bases with fewer vectors are searched exactly and keep no HNSW graph (in memory or in snapshots). */
  graphThreshold?: number;
  /** Hybrid search hands its graph search to the searcher thread from this many vectors on (default 200,000: graph-searcher.ts). */
  searcherMinVectors?: number;
  /** True while nothing is asking for the main thread (no request in flight): background graph building then takes most of it. */
  idle?: () => boolean;
  /** Called after each ingestion batch (for metrics). */
  onBatch?: (batch: IngestionBatch) => void;
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

/** Cluster mode: how far this node has applied the shared log, and the indexing work waiting. */
export interface ReplicationStatus {
  /** The newest log record applied here. */
  appliedSeq: number;
  /** The newest record in the stream. */
  streamSeq: number;
  /** Records in the stream not yet applied here. */
  lag: number;
  /** Indexing jobs waiting in the cluster's queue (not yet taken by any node). */
  jobsWaiting: number;
  /** Items this node is indexing or has taken to index. */
  jobsHere: number;
  /** The cluster's shard count and those held here. */
  shards: { count: number; held: number[] };
  /** Nodes announcing themselves alive (this one included), with the shards each holds. */
  liveNodes: { nodeId: string; url: string; shards: number[] }[];
}

export interface RecoveryReport {
  /**
   * The snapshot start-up began from, if any: its records, and whether the state came from them
   * (replayed) or from its item and index dumps.
   */
  snapshot?: {
    seq: number;
    records: number;
    millis: number;
    from: 'records' | 'dumps';
    /** Of `millis`, the wait for the checks of what a start from dumps does not read, once the state was loaded. */
    checksWaitMillis?: number;
  };
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

export interface SearchRequest extends Refinements {
  query: string;
  limit: number;
  filter?: MetadataFilter;
  /** Full-text and hybrid: words also match terms a typo or two away, the last word also as a prefix (default true; search/expansion.ts). */
  typoTolerance?: boolean;
}
