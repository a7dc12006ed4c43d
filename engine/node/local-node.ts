// A single node: the log is segment files on local disk (or a log it is given, such as a
// MemoryLog in tests), indexing jobs go straight to this node's ingestion queue, and every
// knowledge base is served here.
import { join } from 'node:path';
import { decodePayload } from '../log/codec';
import type { LogEntry, RecordLog } from '../log/log';
import { SegmentLog } from '../log/segment-log';
import type { LogRecord } from '../records';
import { LogConflict, type Entry, type JobKey, type Node, type NodeContext, type Route } from './node';

export class LocalNode implements Node {
  private constructor(
    readonly log: RecordLog,
    private readonly ctx: NodeContext,
    readonly recovered: number,
  ) {}

  /** Replay the log after `afterSeq` (the starting snapshot's position) into the state. */
  static async open(options: { dataDir: string; walSegmentBytes?: number; recordLog?: RecordLog }, ctx: NodeContext, afterSeq?: number): Promise<LocalNode> {
    let records = 0;
    const replay = ({ payload }: LogEntry) => {
      const { record, attachment } = decodePayload<LogRecord>(payload);
      if (ctx.apply(record, attachment)) ctx.settled(record);
      records++;
    };
    const given = options.recordLog;
    if (given) await given.read(afterSeq ?? 0, replay);
    const log = given ?? (await SegmentLog.open({ dir: join(options.dataDir, 'wal'), segmentBytes: options.walSegmentBytes, afterSeq, log: ctx.say }, replay));
    return new LocalNode(log, ctx, records);
  }

  get appliedSeq(): number {
    return this.log.lastSequence;
  }

  /**
   * Appended and applied in one synchronous step, so whatever the caller checked just before still
   * holds (the expectation cannot fail here; it is checked all the same). Waiters are told once
   * the record is durable.
   */
  async append({ record, attachment, payload }: Entry, expectSeq?: number): Promise<number> {
    if (expectSeq !== undefined && expectSeq !== this.log.lastSequence) throw new LogConflict();
    const durable = this.log.append(payload);
    const applied = this.ctx.apply(record, attachment);
    const seq = await durable.catch((err) => {
      this.ctx.fatal('write-ahead log write failed; no further writes are accepted', err);
      throw err;
    });
    if (applied) this.ctx.settled(record);
    return seq;
  }

  async catchUp(): Promise<void> {}

  async queueJob({ kbId, id, version, configId }: JobKey): Promise<void> {
    this.ctx.ingestion.enqueue(kbId, id, version, undefined, configId);
  }

  requeueUnfinished(): number {
    return this.ctx.ingestion.requeueUnfinished();
  }

  start(): void {}

  whenApplied(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** One node's log is applied as it is written: always current. */
  whenCurrent(): Promise<boolean> {
    return Promise.resolve(true);
  }

  routeOf(): Route {
    return { here: true };
  }

  truncateLog(seq: number): Promise<number> {
    return this.log.truncateBefore(seq + 1);
  }

  async replication(): Promise<undefined> {
    return undefined;
  }

  close(): Promise<void> {
    return this.log.close();
  }
}
