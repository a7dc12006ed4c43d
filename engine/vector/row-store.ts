// Where the stored vectors of a VectorIndex live: fixed-size rows at `doc × rowBytes`. In a file of
// the engine's data directory (0600, derived data: the write-ahead log and snapshots carry every
// vector, so the file can be rewritten from them), read back with positioned reads for exact
// scoring; or, for an index without a directory (tests, tools), in memory.
// A row is written once: documents are numbered anew for every version, so rows only ever go after
// the highest one written. A snapshot keeps a hard link to the file with the length it had then
// (writeIndexDumps in snapshots/snapshotter.ts: later writes never touch those bytes), and a
// restart takes that link over instead of writing every vector again.
import { closeSync, fchmodSync, ftruncateSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
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

/**
 * Open vector files at most (one per knowledge base and configuration with vectors): the least
 * recently used beyond this are closed and opened again when next read or written.
 */
export const MAX_OPEN_VECTOR_FILES = 128;
const openFiles = new Set<FileRows>();

/** Rows in a file, created empty at the first write (an existing file is truncated), owner-only. */
export class FileRows implements RowStore {
  private fd: number | undefined;
  private created = false;
  private closed = false;
  private end = 0;
  /** Rows not yet written (held by reference: callers hand over rows they do not change). */
  private pending: Uint8Array[] = [];
  private pendingFirst = 0;

  /**
   * `existingRows`: `path` already holds this many rows (a snapshot's vector file linked there);
   * anything after them is cut off. Absent: the file is created empty.
   */
  constructor(
    readonly path: string,
    readonly rowBytes: number,
    existingRows?: number,
  ) {
    mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR });
    if (existingRows !== undefined) {
      this.created = true;
      this.end = existingRows * rowBytes;
      ftruncateSync(this.open, this.end);
    }
  }

  /** Write every gathered row; the bytes the file holds (nothing below them is written again). Not made durable. */
  written(): number {
    this.flush();
    return this.end;
  }

  /** The file descriptor, opening (at first: creating) the file when it is not open. */
  private get open(): number {
    if (this.closed) throw new Error(`vector file ${this.path} is closed`);
    if (this.fd !== undefined) {
      // Most recently used last.
      openFiles.delete(this);
      openFiles.add(this);
      return this.fd;
    }
    for (const f of openFiles) {
      if (openFiles.size < MAX_OPEN_VECTOR_FILES) break;
      f.release();
    }
    this.fd = openSync(this.path, this.created ? 'r+' : 'w+', PRIVATE_FILE);
    if (!this.created) fchmodSync(this.fd, PRIVATE_FILE);
    this.created = true;
    openFiles.add(this);
    return this.fd;
  }

  /** Close the descriptor (the file stays; it opens again when needed). */
  private release(): void {
    openFiles.delete(this);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  write(doc: number, bytes: Uint8Array): void {
    if (!this.created) void this.open;
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
    const fd = this.open;
    while (done < data.length) done += writeSync(fd, data, done, data.length - done, at + done);
    this.end = Math.max(this.end, at + data.length);
    this.pending = [];
  }

  read(first: number, count: number, out: Uint8Array): void {
    const gathered = this.pending.length;
    if (gathered > 0 && first < this.pendingFirst + gathered && first + count > this.pendingFirst) {
      // One row still gathered (a duplicate check against the vector just added): from memory, so
      // that replay keeps writing in runs instead of a write per check.
      if (count === 1) {
        out.set(this.pending[first - this.pendingFirst]!);
        return;
      }
      this.flush();
    }
    const from = first * this.rowBytes;
    const length = Math.max(0, Math.min(count * this.rowBytes, this.end - from));
    let done = 0;
    const fd = length > 0 ? this.open : -1;
    while (done < length) {
      const n = readSync(fd, out, done, length - done, from + done);
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
    if (this.closed) return;
    this.pending = [];
    this.release();
    this.closed = true;
    if (this.created) rmSync(this.path, { force: true });
  }
}
