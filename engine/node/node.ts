// What differs between running alone and as one node of a cluster, behind one interface: where
// records are logged and how they come back to be applied, where indexing jobs wait, which
// knowledge bases' content this node holds and which node serves the others. The engine
// (engine.ts) is the same in both modes and talks to a Node only; openNode picks the mode.
import type { NodeEntry } from '../cluster/live-nodes';
import type { IngestionQueue } from '../ingest/queue';
import type { LogRecord } from '../records';
import type { RecordLog } from '../log/log';
import type { ShardSet } from '../shards';
import type { LiveState } from '../state/live-state';
import type { EngineLog, ReplicationStatus } from '../options';

/** A version of an item to index, for the active configuration or for the one `configId` being built. */
export interface JobKey {
  kbId: string;
  id: string;
  version: number;
  configId?: string;
}

/** Where requests about a knowledge base are answered: here, or by one of `nodes` (in the order to try them). */
export type Route = { here: true } | { here: false; shard: number; nodes: NodeEntry[] };

/** A record to log: its encoded payload, and the record itself to apply without decoding it again. */
export interface Entry {
  record: LogRecord;
  attachment?: Uint8Array;
  payload: Uint8Array;
  /** Where a replicated log files it (content by its knowledge base's shard). */
  partition: string;
}

/**
 * An append was made conditional on the log ending where this node had applied it, and another
 * record came first: catch up, check again, retry (Engine.commit).
 */
export class LogConflict extends Error {
  /** The log's end when it refused, when it said. */
  constructor(readonly logSeq?: number) {
    super('another record was logged first');
  }
}

/** What a node works on: the engine's state and ingestion queue, and how it applies and reports. */
export interface NodeContext {
  state: LiveState;
  ingestion: IngestionQueue;
  shards: ShardSet;
  /** Apply a record taken from the log (replayed, appended or delivered); whether it changed the state. */
  apply(record: LogRecord, attachment?: Uint8Array): boolean;
  /** A record applied earlier is durable now: waiters on its outcome may answer. */
  settled(record: LogRecord): void;
  say: EngineLog;
  /** The log can no longer be written: the owner should stop the process. */
  fatal(message: string, err: unknown): void;
}

export interface Node {
  readonly log: RecordLog;
  /** Log records replayed or followed while opening. */
  readonly recovered: number;
  /**
   * Log an entry and apply it (every record is applied in log order, whichever node wrote it);
   * resolves with its sequence number once it is durable and applied here. With `expectSeq`, only
   * if the log still ends at that position (LogConflict otherwise).
   */
  append(entry: Entry, expectSeq?: number): Promise<number>;
  /** The newest record applied here (what a conditional append expects). */
  readonly appliedSeq: number;
  /** Resolves once this node has applied the log up to `seq` (default: everything it holds now). */
  catchUp(seq?: number): Promise<void>;
  /** Queue a version for indexing: in this node's ingestion queue, or in the cluster's shared queue. */
  queueJob(job: JobKey): Promise<void>;
  /** At start-up: jobs again for every unfinished item and build; how many. */
  requeueUnfinished(): number;
  /** Begin serving: take indexing jobs; in a cluster, announce this node to the others. */
  start(): void;
  /** Resolves true once the log is applied up to `seq`, false after `timeoutMs`. */
  whenApplied(seq: number, timeoutMs: number): Promise<boolean>;
  /**
   * Resolves true once this node has applied every record the log held when asked (so a read then
   * sees every write answered before it, on any node), false after `timeoutMs`.
   */
  whenCurrent(timeoutMs: number): Promise<boolean>;
  routeOf(kbId: string): Route;
  /** Remove log records a snapshot at `seq` covers (as far as the mode allows); resolves with the parts removed. */
  truncateLog(seq: number): Promise<number>;
  /** Cluster mode: applied vs stream position and queued jobs; undefined on a single node. */
  replication(timeoutMs: number): Promise<ReplicationStatus | undefined>;
  close(): Promise<void>;
}
