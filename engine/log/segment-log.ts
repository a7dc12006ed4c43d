// The write-ahead log on local disk (RecordLog, log.ts): numbered segment files of checksummed frames. Appends are group-committed:
// every append issued while an fsync is in flight joins the next batch, so concurrent writers share
// one fdatasync. A caller's promise resolves only once its record is on disk.
import { mkdir, open, readdir, rename, rm, truncate, writeFile, type FileHandle } from 'node:fs/promises';
import { fsyncPathAsync, PRIVATE_DIR, PRIVATE_FILE } from '../fsync';
import { dirname, join } from 'node:path';
import { encodeFrame, scanFrames } from './frame';
import type { EngineLog } from '../options';
import type { LogEntry, LogRange, RecordLog } from './log';

export interface WalOptions {
  dir: string;
  /** Start a new segment once the current one passes this size. */
  segmentBytes?: number;
  /** Records up to this sequence number are covered by a snapshot: not replayed, and numbering continues after it. */
  afterSeq?: number;
  /**
   * A file of frames written before the log had segments (one file, the key store's old layout):
   * moved in unchanged as the first segment when the directory holds none yet, so nothing it holds
   * is lost. Left where it is (with a warning) when the log already has segments.
   */
  adopt?: string;
  /** Reports recovery events (torn tails, corrupt segments). */
  /** Where warnings go (a torn tail cut off, a file of an earlier layout): the engine's one signature. */
  log?: EngineLog;
}

const SEGMENT = /^wal-(\d{20})\.log$/;
const segmentName = (firstSeq: number) => `wal-${String(firstSeq).padStart(20, '0')}.log`;

/** Move a single file of frames in as the first segment (WalOptions.adopt). */
async function adoptFile(dir: string, file: string, warn: (message: string, details: Record<string, unknown>) => void): Promise<void> {
  const bytes = await Bun.file(file)
    .bytes()
    .catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
  if (!bytes) return;
  if ((await readdir(dir)).some((n) => SEGMENT.test(n))) {
    warn('write-ahead log: a file of an earlier layout lies beside the log and is not read', { file, dir });
    return;
  }
  const first = scanFrames(bytes).frames[0]?.seq ?? 1;
  try {
    await rename(file, join(dir, segmentName(first)));
  } catch (err) {
    // Another process opening the same log moved it first.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  await fsyncPathAsync(dir);
  await fsyncPathAsync(dirname(file));
}

interface Pending {
  frame: Uint8Array;
  seq: number;
  resolve: (seq: number) => void;
  reject: (err: unknown) => void;
}

export class SegmentLog implements RecordLog {
  private fh: FileHandle | undefined;
  private segmentSize = 0;
  private lastSeq = 0;
  private queue: Pending[] = [];
  private flushing: Promise<void> | undefined;
  private failure: unknown;
  /** fdatasync calls so far: with group commit, fewer than appends under concurrency. */
  syncs = 0;
  private readonly segmentLimit: number;
  private readonly warn: (message: string, details: Record<string, unknown>) => void;
  private segments: { firstSeq: number; name: string }[] = [];
  /** Sequence number of the last record on disk. */
  private durableSeq = 0;
  /** Rolls asked for, each sealing the records appended before it was asked (`through`). */
  private rollRequests: { through: number; resolve: (seq: number) => void; reject: (err: unknown) => void }[] = [];

  private constructor(private readonly options: WalOptions) {
    this.segmentLimit = options.segmentBytes ?? 64 * 1024 * 1024;
    this.warn = (m, d) => (options.log ?? ((_, message, details) => console.warn(message, details)))('warn', m, d);
  }

  /**
   * Open the log in `dir`, handing every intact record to `replay` in order. A torn or corrupt
   * tail is reported and cut off; the log then continues after the last intact record.
   */
  static async open(options: WalOptions, replay: (entry: LogEntry) => void): Promise<SegmentLog> {
    const wal = new SegmentLog(options);
    await mkdir(options.dir, { recursive: true, mode: PRIVATE_DIR });
    if (options.adopt) await adoptFile(options.dir, options.adopt, wal.warn);
    const names = (await readdir(options.dir)).filter((n) => SEGMENT.test(n)).sort();
    wal.segments = names.map((name) => ({ name, firstSeq: Number(SEGMENT.exec(name)![1]) }));
    const afterSeq = options.afterSeq ?? 0;
    for (let i = 0; i < wal.segments.length; i++) {
      const seg = wal.segments[i]!;
      const path = join(options.dir, seg.name);
      // A segment the snapshot covers whole (the next one starts at most right after it) is not
      // read: at a million chunks the log kept between two snapshots took 0.4 s to scan.
      const next = wal.segments[i + 1];
      if (next && next.firstSeq <= afterSeq + 1) {
        wal.lastSeq = Math.max(wal.lastSeq, next.firstSeq - 1);
        continue;
      }
      const bytes = new Uint8Array(await Bun.file(path).arrayBuffer());
      const scan = scanFrames(bytes);
      for (const frame of scan.frames) {
        if (frame.seq <= (options.afterSeq ?? 0)) {
          wal.lastSeq = Math.max(wal.lastSeq, frame.seq);
          continue; // covered by the snapshot
        }
        if (wal.lastSeq < (options.afterSeq ?? 0) && frame.seq > (options.afterSeq ?? 0) + 1) {
          wal.warn('write-ahead log: records between the snapshot and the log are missing', { snapshotSeq: options.afterSeq, firstLogSeq: frame.seq });
        }
        if (frame.seq <= wal.lastSeq) {
          throw new Error(`write-ahead log out of order: record ${frame.seq} after ${wal.lastSeq} in ${seg.name}`);
        }
        wal.lastSeq = frame.seq;
        replay({ seq: frame.seq, payload: frame.payload });
      }
      if (!scan.ok) {
        const cut = bytes.length - scan.end;
        const isLast = i === wal.segments.length - 1;
        // Keep the cut bytes beside the log for inspection; never silently drop them.
        const aside = `${path}.damaged-${Date.now()}`;
        await writeFile(aside, bytes.subarray(scan.end), { mode: PRIVATE_FILE });
        await truncate(path, scan.end);
        wal.warn(isLast ? 'write-ahead log: torn tail cut off' : 'write-ahead log: corrupt segment, later segments set aside', {
          segment: seg.name,
          reason: scan.reason,
          offset: scan.end,
          bytesCut: cut,
          keptAt: aside,
          lastGoodSeq: wal.lastSeq,
        });
        if (!isLast) {
          for (const later of wal.segments.slice(i + 1)) {
            await rename(join(options.dir, later.name), join(options.dir, `${later.name}.orphaned-${Date.now()}`));
          }
          wal.segments = wal.segments.slice(0, i + 1);
        }
        break;
      }
    }
    wal.lastSeq = Math.max(wal.lastSeq, options.afterSeq ?? 0);
    wal.durableSeq = wal.lastSeq;
    const last = wal.segments[wal.segments.length - 1];
    if (last) {
      wal.fh = await open(join(options.dir, last.name), 'a', PRIVATE_FILE);
      wal.segmentSize = (await wal.fh.stat()).size;
    } else {
      await wal.startSegment();
    }
    return wal;
  }

  get lastSequence(): number {
    return this.lastSeq;
  }

  /** Total bytes of all segments (for metrics and snapshot policy). */
  async sizeBytes(afterSeq = 0): Promise<number> {
    let total = 0;
    // A segment holding `afterSeq` counts whole (a snapshot rolls the log, so its seq ends one).
    for (let i = 0; i < this.segments.length; i++) {
      const next = this.segments[i + 1];
      if (next && next.firstSeq <= afterSeq + 1) continue;
      total += Bun.file(join(this.options.dir, this.segments[i]!.name)).size;
    }
    return total;
  }

  /** A new segment starting at the next record to be written. */
  private async startSegment(): Promise<void> {
    const firstSeq = this.durableSeq + 1;
    const name = segmentName(firstSeq);
    this.fh = await open(join(this.options.dir, name), 'a', PRIVATE_FILE);
    this.segmentSize = 0;
    this.segments.push({ name, firstSeq });
    // The new file's directory entry must be durable before records in it are acknowledged (the
    // flush loop awaits this before writing). Off the event loop: a snapshot writing hundreds of MB
    // can make it take tens of milliseconds.
    await fsyncPathAsync(this.options.dir);
  }

  /** Append a record; resolves with its sequence number once it is fsynced. */
  append(payload: Uint8Array): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    const seq = ++this.lastSeq;
    const frame = encodeFrame(seq, payload);
    return new Promise((resolve, reject) => {
      this.queue.push({ frame, seq, resolve, reject });
      this.flushing ??= this.flushLoop();
    });
  }

  private async flushLoop(): Promise<void> {
    // Yield first: callers assign `this.flushing` from this call, and a loop with nothing to await
    // would otherwise clear it (in `finally`) before that assignment, leaving it set for ever.
    await null;
    try {
      while (this.queue.length > 0 || this.rollRequests.length > 0) {
        // One roll at a time: the records appended before it was asked go into the segment it closes.
        const roll = this.rollRequests.shift();
        if (roll) {
          let n = 0;
          while (n < this.queue.length && this.queue[n]!.seq <= roll.through) n++;
          if (n > 0) {
            const head = this.queue.slice(0, n);
            this.queue = this.queue.slice(n);
            await this.writeBatch(head);
          }
          if (this.failure) {
            roll.reject(this.failure);
            continue;
          }
          if (this.segmentSize > 0) {
            await this.fh!.close();
            await this.startSegment();
          }
          roll.resolve(this.durableSeq);
          continue;
        }
        const batch = this.queue;
        this.queue = [];
        await this.writeBatch(batch);
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /** Write and fsync frames, then acknowledge them. The disk refusing fails the log and every write queued. */
  private async writeBatch(batch: Pending[]): Promise<void> {
    try {
      if (this.segmentSize > 0 && this.segmentSize >= this.segmentLimit) {
        await this.fh!.close();
        await this.startSegment();
      }
      const bytes = batch.length === 1 ? batch[0]!.frame : Buffer.concat(batch.map((p) => p.frame));
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await this.fh!.write(bytes, written, bytes.length - written);
        written += bytesWritten;
      }
      await this.fh!.datasync();
      this.syncs++;
      this.segmentSize += bytes.length;
      this.durableSeq = batch[batch.length - 1]!.seq;
      for (const p of batch) p.resolve(p.seq);
    } catch (err) {
      // The disk refused a write or an fsync: nothing after this point can be trusted to be
      // durable, so the log stops accepting writes (the owner decides whether to exit).
      this.failure = err;
      for (const p of [...batch, ...this.queue]) p.reject(err);
      this.queue = [];
    }
  }

  /**
   * Close the current segment and start a new one. Resolves with the last sequence number of the
   * closed segments: every record appended before this call, and none after it (what a caller's
   * state held when it asked, which a snapshot's dumps rely on), is on disk in a file that will
   * not change again.
   */
  roll(): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    const through = this.lastSeq;
    return new Promise((resolve, reject) => {
      this.rollRequests.push({ through, resolve, reject });
      this.flushing ??= this.flushLoop();
    });
  }

  /** Closed segments holding records in (afterSeq, throughSeq], in order. */
  range(afterSeq: number, throughSeq: number): Extract<LogRange, { kind: 'segments' }> {
    const files: string[] = [];
    const spans: { first: number; last: number }[] = [];
    for (let i = 0; i < this.segments.length - 1; i++) {
      if (this.segments[i]!.firstSeq > throughSeq) break;
      // A segment ends where the next begins.
      const last = this.segments[i + 1]!.firstSeq - 1;
      if (last <= afterSeq) continue;
      files.push(join(this.options.dir, this.segments[i]!.name));
      spans.push({ first: this.segments[i]!.firstSeq, last });
    }
    return { kind: 'segments', files, afterSeq, throughSeq, spans };
  }

  async read(afterSeq: number, visit: (entry: LogEntry) => void): Promise<void> {
    await this.sync();
    for (const seg of this.segments) {
      const scan = scanFrames(new Uint8Array(await Bun.file(join(this.options.dir, seg.name)).arrayBuffer()));
      for (const f of scan.frames) if (f.seq > afterSeq) visit({ seq: f.seq, payload: f.payload });
    }
  }

  /** Delete closed segments whose records are all below `seq` (a snapshot covers them). */
  async truncateBefore(seq: number): Promise<number> {
    let deleted = 0;
    while (this.segments.length > 1 && this.segments[1]!.firstSeq <= seq) {
      await rm(join(this.options.dir, this.segments[0]!.name), { force: true });
      this.segments.shift();
      deleted++;
    }
    if (deleted > 0) await fsyncPathAsync(this.options.dir);
    return deleted;
  }

  /** Wait until everything appended so far is durable. */
  async sync(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  async close(): Promise<void> {
    await this.sync();
    await this.fh?.close();
    this.fh = undefined;
  }
}
