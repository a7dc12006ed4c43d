// The record log in memory (RecordLog, log.ts), as tantivy's RAMDirectory is to its directory on
// disk: the same numbering, reads, rolls, ranges and truncation as the segment log, nothing on
// disk and nothing durable past the process. For tests, and for code that needs a log only to
// hold records in order.
import { FRAME_HEADER } from './frame';
import type { LogEntry, LogRange, RecordLog } from './log';

export interface MemoryLogOptions {
  /** Records up to this sequence number are taken as covered by a snapshot: numbering continues after it. */
  afterSeq?: number;
}

export class MemoryLog implements RecordLog {
  private entries: LogEntry[] = [];
  private lastSeq: number;
  /** First sequence number of each part; the last part is the one appended to (a segment, on disk). */
  private parts: number[];
  private closed = false;

  constructor(options: MemoryLogOptions = {}) {
    this.lastSeq = options.afterSeq ?? 0;
    this.parts = [this.lastSeq + 1];
  }

  get lastSequence(): number {
    return this.lastSeq;
  }

  /** Resolves with the record's sequence number; the payload is copied (the caller may reuse its buffer). */
  async append(payload: Uint8Array): Promise<number> {
    if (this.closed) throw new Error('memory log: append after close');
    const seq = ++this.lastSeq;
    this.entries.push({ seq, payload: payload.slice() });
    return seq;
  }

  async sync(): Promise<void> {}

  async read(afterSeq: number, visit: (entry: LogEntry) => void): Promise<void> {
    for (const entry of this.entries) if (entry.seq > afterSeq) visit(entry);
  }

  /** Seal the current part (when it holds records) and start another; resolves with the last sealed record's number. */
  async roll(): Promise<number> {
    if (this.closed) throw new Error('memory log: roll after close');
    if (this.parts.at(-1)! <= this.lastSeq) this.parts.push(this.lastSeq + 1);
    return this.parts.at(-1)! - 1;
  }

  /** Records (afterSeq, throughSeq] of the sealed parts, copied out: a worker thread can take them (readLogRange). */
  range(afterSeq: number, throughSeq: number): Extract<LogRange, { kind: 'memory' }> {
    const sealedThrough = Math.min(throughSeq, this.parts.at(-1)! - 1);
    const entries = this.entries.filter((e) => e.seq > afterSeq && e.seq <= sealedThrough).map((e) => ({ seq: e.seq, payload: e.payload.slice() }));
    return { kind: 'memory', entries, afterSeq, throughSeq };
  }

  /** Drop sealed parts whose records are all below `seq`, as the segment log deletes segments. */
  async truncateBefore(seq: number): Promise<number> {
    let dropped = 0;
    while (this.parts.length > 1 && this.parts[1]! <= seq) {
      this.parts.shift();
      dropped++;
    }
    const first = this.parts[0]!;
    if (dropped > 0) this.entries = this.entries.filter((e) => e.seq >= first);
    return dropped;
  }

  /** What the records would take on disk, framed (the segment log's size for the same records). */
  async sizeBytes(afterSeq = 0): Promise<number> {
    let total = 0;
    for (const e of this.entries) if (e.seq > afterSeq) total += FRAME_HEADER + e.payload.length;
    return total;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
