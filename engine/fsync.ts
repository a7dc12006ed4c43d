// fsync a file or a directory by path (a directory's fsync makes its entries durable).
import { chmodSync, closeSync, copyFileSync, fdatasyncSync, fsyncSync, linkSync, openSync, readSync, writeSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';

/** Mode of the files the engine writes (log segments, snapshot files): its data is the tenants' own. */
export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a large file while the write-ahead log keeps committing: on ext4 an fsync also waits for
 * other files' dirty pages, so a snapshot file flushed once at the end (hundreds of MB) would stall
 * every commit behind it for seconds. Syncing every few MB keeps that backlog small. The CRC32
 * is computed on the way, so the file need not be read back; start-up checks it at ~8 GB/s, where
 * SHA-256 ran at ~0.64 GB/s (0.56 s for the 360 MB of records at 100k chunks, 5.6 s at 1M). A
 * snapshot guards against torn and corrupted files, not against someone forging them.
 */
export class PacedFileWriter {
  private readonly fd: number;
  private crc = 0;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private unsynced = 0;
  bytes = 0;

  constructor(
    path: string,
    private readonly bufferBytes = 1 << 20,
    private readonly syncEveryBytes = 4 << 20,
  ) {
    this.fd = openSync(path, 'w', PRIVATE_FILE);
  }

  write(chunk: Uint8Array): void {
    this.crc = Bun.hash.crc32(chunk, this.crc);
    this.pending.push(chunk);
    this.pendingBytes += chunk.byteLength;
    this.bytes += chunk.byteLength;
    if (this.pendingBytes >= this.bufferBytes) this.flush();
  }

  private flush(): void {
    if (this.pendingBytes === 0) return;
    const joined = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    let off = 0;
    while (off < joined.byteLength) off += writeSync(this.fd, joined, off);
    this.pending = [];
    this.unsynced += this.pendingBytes;
    this.pendingBytes = 0;
    if (this.unsynced >= this.syncEveryBytes) {
      fdatasyncSync(this.fd);
      this.unsynced = 0;
    }
  }

  /** Flush, fsync and close; the file's size and CRC32. */
  end(): { bytes: number; crc32: number } {
    try {
      this.flush();
      fsyncSync(this.fd);
    } finally {
      closeSync(this.fd);
    }
    return { bytes: this.bytes, crc32: this.crc };
  }
}

/**
 * An empty owner-only file at `path` (an existing one is emptied), for a library that writes files
 * with the default mode (USearch's save keeps the mode of a file that exists): private from the
 * first byte, not after a chmod that a reader could race.
 */
export function createPrivateFile(path: string): void {
  closeSync(openSync(path, 'w', PRIVATE_FILE));
  chmodSync(path, PRIVATE_FILE);
}

/**
 * Copy `from` to `to` through a PacedFileWriter (for files a library writes in one go, such as a
 * USearch graph: written to a scratch file never fsynced, then copied with paced syncs).
 */
export function copyFilePaced(from: string, to: string): { bytes: number; crc32: number } {
  const src = openSync(from, 'r');
  const writer = new PacedFileWriter(to);
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(1 << 20);
      const n = readSync(src, chunk, 0, chunk.byteLength, null);
      if (n === 0) break;
      writer.write(chunk.subarray(0, n));
    }
  } finally {
    closeSync(src);
  }
  return writer.end();
}

/** A hard link at `to` (the same file system: snapshots and the data they feed sit side by side), else `copy`. */
export function linkOrCopy(from: string, to: string, copy: (from: string, to: string) => void = copyFileSync): void {
  try {
    linkSync(from, to);
  } catch {
    copy(from, to);
  }
}

/**
 * Unlink a file off the event loop: unlinking a large file frees its page-cache pages, which held
 * the request thread about 20 ms per 400 MB here. For files nothing depends on being gone at once
 * (a file left by a process that ends first is removed by the next start).
 */
export function removeInBackground(path: string): void {
  void rm(path, { force: true }).catch(() => {});
}

/** fsync by path on the thread pool (the event loop keeps running; under heavy IO it can take long). */
export async function fsyncPathAsync(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
