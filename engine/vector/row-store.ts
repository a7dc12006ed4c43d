// Where the stored vectors of a VectorIndex live: fixed-size rows at `doc × rowBytes`. In a file of
// the engine's data directory (0600, derived data: the write-ahead log and snapshots carry every
// vector, so the file is rewritten from them at start-up), read back with positioned reads for exact
// scoring; or, for an index without a directory (tests, tools), in memory.
import { closeSync, fchmodSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { PRIVATE_DIR, PRIVATE_FILE } from '../fsync';

export interface RowStore {
  readonly rowBytes: number;
  /** Store a row (`bytes.length === rowBytes`). */
  write(doc: number, bytes: Uint8Array): void;
  /** Rows [first, first + count) into `out` (rows never written read as zeros). */
  read(first: number, count: number, out: Uint8Array): void;
  /** Bytes this store holds in memory (the file's pages are the kernel's page cache, not counted). */
  memoryBytes(): number;
  /** Bytes on disk (0 in memory). */
  diskBytes(): number;
  /** Release the store; a file is removed. */
  close(): void;
}

/** Rows in one growing buffer (its capacity doubles). */
export class MemoryRows implements RowStore {
  private buf = new Uint8Array(0);
  private end = 0;

  constructor(readonly rowBytes: number) {}

  write(doc: number, bytes: Uint8Array): void {
    const at = doc * this.rowBytes;
    if (at + this.rowBytes > this.buf.length) {
      let cap = Math.max(this.buf.length, 1024 * this.rowBytes);
      while (cap < at + this.rowBytes) cap *= 2;
      const grown = new Uint8Array(cap);
      grown.set(this.buf);
      this.buf = grown;
    }
    this.buf.set(bytes, at);
    this.end = Math.max(this.end, at + this.rowBytes);
  }

  read(first: number, count: number, out: Uint8Array): void {
    const from = first * this.rowBytes;
    const to = Math.min(this.end, from + count * this.rowBytes);
    if (to > from) out.set(this.buf.subarray(from, to));
    out.fill(0, Math.max(0, to - from), count * this.rowBytes);
  }

  memoryBytes(): number {
    return this.buf.byteLength;
  }

  diskBytes(): number {
    return 0;
  }

  close(): void {
    this.buf = new Uint8Array(0);
    this.end = 0;
  }
}

/** Consecutive rows are gathered, up to this many, into one write (replay adds rows in order). */
const GATHER_ROWS = 64;

/** Rows in a file, created empty (an existing file is truncated), owner-only. */
export class FileRows implements RowStore {
  private fd: number | undefined;
  private end = 0;
  /** Rows not yet written (held by reference: callers hand over rows they do not change). */
  private pending: Uint8Array[] = [];
  private pendingFirst = 0;

  constructor(
    readonly path: string,
    readonly rowBytes: number,
  ) {
    mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR });
    this.fd = openSync(path, 'w+', PRIVATE_FILE);
    fchmodSync(this.fd, PRIVATE_FILE);
  }

  private get open(): number {
    if (this.fd === undefined) throw new Error(`vector file ${this.path} is closed`);
    return this.fd;
  }

  write(doc: number, bytes: Uint8Array): void {
    const rows = this.pending.length;
    if (rows > 0 && (doc !== this.pendingFirst + rows || rows === GATHER_ROWS)) this.flush();
    if (this.pending.length === 0) this.pendingFirst = doc;
    this.pending.push(bytes);
  }

  /** Write gathered rows to the file (no fsync: the log is what survives a crash). */
  flush(): void {
    const rows = this.pending;
    if (rows.length === 0) return;
    let data = rows[0]!;
    if (rows.length > 1) {
      data = new Uint8Array(rows.length * this.rowBytes);
      rows.forEach((r, i) => data.set(r, i * this.rowBytes));
    }
    const at = this.pendingFirst * this.rowBytes;
    let done = 0;
    while (done < data.length) done += writeSync(this.open, data, done, data.length - done, at + done);
    this.end = Math.max(this.end, at + data.length);
    this.pending = [];
  }

  read(first: number, count: number, out: Uint8Array): void {
    this.flush();
    const from = first * this.rowBytes;
    const length = Math.max(0, Math.min(count * this.rowBytes, this.end - from));
    let done = 0;
    while (done < length) {
      const n = readSync(this.open, out, done, length - done, from + done);
      if (n === 0) break;
      done += n;
    }
    out.fill(0, done, count * this.rowBytes);
  }

  memoryBytes(): number {
    return this.pending.length * this.rowBytes;
  }

  diskBytes(): number {
    return Math.max(this.end, (this.pendingFirst + this.pending.length) * this.rowBytes);
  }

  close(): void {
    if (this.fd === undefined) return;
    this.pending = [];
    closeSync(this.fd);
    this.fd = undefined;
    rmSync(this.path, { force: true });
  }
}
