// The log every state change goes through, as the engine sees it: numbered, durable, in order.
// Implementations: segment files on local disk (segment-log.ts, single node), a NATS
// JetStream stream replicated by JetStream's Raft (jetstream-log.ts, cluster mode), and memory
// (memory-log.ts: tests, and logs that need no disk).
// Nothing outside engine/log/ knows how records are stored.
import type { NatsAuth } from './nats';

export interface LogEntry {
  seq: number;
  payload: Uint8Array;
}

/**
 * Records (after, through] of a log, described so that another thread can read them itself
 * (readLogRange): a snapshot is built in a worker without copying the log through the main thread.
 */
export type LogRange =
  | {
      kind: 'segments';
      files: string[];
      afterSeq: number;
      throughSeq: number;
      /**
       * Per file, the sequence numbers its records lie within (a closed segment's first, and one
       * before the next segment's): a file wholly inside the range can be taken as it is.
       */
      spans?: { first: number; last: number }[];
    }
  | { kind: 'jetstream'; servers: string[]; auth?: NatsAuth; stream: string; afterSeq: number; throughSeq: number }
  // The records themselves (memory-log.ts): copied to the thread that reads them.
  | { kind: 'memory'; entries: LogEntry[]; afterSeq: number; throughSeq: number };

export interface RecordLog {
  /** Sequence number of the newest record appended. */
  readonly lastSequence: number;
  /**
   * Append a record; resolves with its sequence number once it is durable. `partition`: where a
   * replicated log files it (cluster mode: `kb` for knowledge-base records, `s<shard>` for
   * content), so that a reader could take only its shards; the order stays one for all.
   */
  append(payload: Uint8Array, partition?: string): Promise<number>;
  /** Wait until everything appended so far is durable. */
  sync(): Promise<void>;
  /** Every record after `afterSeq`, in order. */
  read(afterSeq: number, visit: (entry: LogEntry) => void): Promise<void>;
  /**
   * Seal what has been written: later appends go to a new part. Resolves with the sequence number
   * of the last sealed record; records up to it can be read through range() while writes go on.
   */
  roll(): Promise<number>;
  /** Records (afterSeq, throughSeq], both at most the last roll() result. */
  range(afterSeq: number, throughSeq: number): LogRange;
  /** Discard records below `seq` (a snapshot covers them); whole parts only. Resolves with the parts removed. */
  truncateBefore(seq: number): Promise<number>;
  /**
   * Bytes the log occupies (metrics); with `afterSeq`, those of the records after it (snapshot
   * policy: the log written since the newest snapshot, not the part kept for the one before).
   */
  sizeBytes(afterSeq?: number): Promise<number>;
  close(): Promise<void>;
}
