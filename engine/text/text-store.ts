// Item texts kept out of the JavaScript heap (issue 25): an append-only file read by position when
// a hit, a content read or a re-index needs a text. The file is derived state, never a source of
// truth: it is created empty at every open (a crash's file is replaced, never read), and replaying
// the log rebuilds it. Its bytes never change once written (texts are only appended), so a
// snapshot hard-links it with its length then, and a restart from that snapshot takes the file
// back (adopt) instead of storing every text again; the snapshot makes it durable, not the store.
// Texts are stored as Latin-1 (one byte per character) when every character fits, else as UTF-16LE
// (two bytes), so a chunk's character range is a byte range and a hit reads only its chunk.
import { closeSync, ftruncateSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { linkOrCopy } from '../fsync';
import { join } from 'node:path';
import { isLatin1, type EncodedText } from './encoded-text';

/** Where a text lies in the store. */
export interface TextRef {
  /** Byte offset in the store. */
  at: number;
  /** Length in characters (UTF-16 code units, as String.length). */
  length: number;
  /** Two bytes per character (UTF-16LE), else one (Latin-1). */
  wide: boolean;
}

const BUFFER_BYTES = 1 << 20;
/** The store's file in its directory. */
export const TEXT_FILE = 'texts.bin';

export class TextStore {
  readonly path: string;
  private fd: number;
  /** Bytes written to the file; later ones are still in `pending`. */
  private flushed = 0;
  private pending = Buffer.allocUnsafe(BUFFER_BYTES);
  private pendingBytes = 0;
  private scratch = Buffer.allocUnsafe(64 * 1024);
  private live = 0;
  private dead = 0;
  private closed = false;

  /** A new, empty store in `dir` (created if missing), replacing the file there (a snapshot's link to it keeps its bytes). */
  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.path = join(dir, TEXT_FILE);
    this.fd = TextStore.fresh(this.path);
  }

  private static fresh(path: string): number {
    // Unlinked, never truncated: the inode may be a snapshot's too.
    rmSync(path, { force: true });
    return openSync(path, 'wx+', 0o600);
  }

  /**
   * Take over a snapshot's copy of a store's file (`path`, its first `bytes`; whatever follows is
   * not the snapshot's and is cut) in place of this empty store's, linked where it can be; `live`:
   * how many of those bytes are texts that still answer. Texts are appended after them.
   */
  adopt(path: string, bytes: number, live: number): void {
    if (this.flushed + this.pendingBytes > 0) throw new Error('only an empty text store can take over a file');
    closeSync(this.fd);
    rmSync(this.path, { force: true });
    linkOrCopy(path, this.path);
    this.fd = openSync(this.path, 'r+');
    ftruncateSync(this.fd, bytes);
    this.flushed = bytes;
    this.live = live;
    this.dead = bytes - live;
  }

  /** The file with every text written so far: its first `bytes` never change (what a snapshot links). */
  writtenFile(): { path: string; bytes: number } {
    this.flush();
    return { path: this.path, bytes: this.flushed };
  }

  /** Bytes of live texts and of texts released since (the file holds both). */
  get bytes(): { live: number; dead: number } {
    return { live: this.live, dead: this.dead };
  }

  /** Store the bytes of a text already in the store's encoding (a restart's, from a snapshot) as they are. */
  putEncoded(text: EncodedText): TextRef {
    const at = this.flushed + this.pendingBytes;
    const { bytes } = text;
    if (this.pendingBytes + bytes.length > this.pending.length) this.flush();
    if (bytes.length > this.pending.length) this.writeAll(bytes);
    else {
      this.pending.set(bytes, this.pendingBytes);
      this.pendingBytes += bytes.length;
    }
    this.live += bytes.length;
    return { at, length: text.length, wide: text.wide };
  }

  put(text: string): TextRef {
    const wide = !isLatin1(text);
    const size = wide ? text.length * 2 : text.length;
    const at = this.flushed + this.pendingBytes;
    if (this.pendingBytes + size > this.pending.length) this.flush();
    if (size > this.pending.length) {
      const bytes = Buffer.from(text, wide ? 'utf16le' : 'latin1');
      this.writeAll(bytes);
    } else {
      this.pending.write(text, this.pendingBytes, size, wide ? 'utf16le' : 'latin1');
      this.pendingBytes += size;
    }
    this.live += size;
    return { at, length: text.length, wide };
  }

  /**
   * Write the texts at `refs` into a new file in place of this one, leaving dead texts behind;
   * returns where each now lies (in the order given). The old file is read in file order, a window
   * at a time. A snapshot's link to the old file keeps its bytes.
   */
  rewrite(refs: readonly TextRef[]): TextRef[] {
    this.flush();
    const order = refs.map((_, i) => i).sort((a, b) => refs[a]!.at - refs[b]!.at);
    const temporary = `${this.path}.new`;
    const fd = TextStore.fresh(temporary);
    const out = new Array<TextRef>(refs.length);
    let window = Buffer.allocUnsafe(4 * BUFFER_BYTES);
    let windowAt = 0;
    let windowBytes = 0;
    let written = 0;
    let pendingBytes = 0;
    const flushOut = () => {
      let done = 0;
      while (done < pendingBytes) done += writeSync(fd, this.pending, done, pendingBytes - done, written + done);
      written += pendingBytes;
      pendingBytes = 0;
    };
    try {
      for (const i of order) {
        const ref = refs[i]!;
        const size = ref.wide ? ref.length * 2 : ref.length;
        if (ref.at < windowAt || ref.at + size > windowAt + windowBytes) {
          if (size > window.length) window = Buffer.allocUnsafe(size);
          windowAt = ref.at;
          windowBytes = 0;
          const want = Math.min(window.length, this.flushed - windowAt);
          while (windowBytes < want) {
            const n = readSync(this.fd, window, windowBytes, want - windowBytes, windowAt + windowBytes);
            if (n <= 0) break;
            windowBytes += n;
          }
          if (windowBytes < size) throw new Error(`text store: short read at ${ref.at} while rewriting`);
        }
        const bytes = window.subarray(ref.at - windowAt, ref.at - windowAt + size);
        out[i] = { at: written + pendingBytes, length: ref.length, wide: ref.wide };
        if (pendingBytes + size > this.pending.length) flushOut();
        if (size > this.pending.length) {
          let done = 0;
          while (done < size) done += writeSync(fd, bytes, done, size - done, written + done);
          written += size;
        } else {
          this.pending.set(bytes, pendingBytes);
          pendingBytes += size;
        }
      }
      flushOut();
    } catch (err) {
      closeSync(fd);
      rmSync(temporary, { force: true });
      throw err;
    }
    closeSync(this.fd);
    renameSync(temporary, this.path);
    this.fd = fd;
    this.flushed = written;
    this.live = written;
    this.dead = 0;
    return out;
  }

  /** Characters [start, end) of a stored text (the whole text by default). */
  read(ref: TextRef, start = 0, end = ref.length): string {
    if (start < 0) start = 0;
    if (end > ref.length) end = ref.length;
    if (end <= start) return '';
    const width = ref.wide ? 2 : 1;
    const from = ref.at + start * width;
    const size = (end - start) * width;
    const encoding = ref.wide ? 'utf16le' : 'latin1';
    if (from >= this.flushed) {
      const o = from - this.flushed;
      return this.pending.toString(encoding, o, o + size);
    }
    if (from + size > this.flushed) this.flush();
    if (size > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(size, this.scratch.length * 2));
    let got = 0;
    while (got < size) {
      const n = readSync(this.fd, this.scratch, got, size - got, from + got);
      if (n <= 0) throw new Error(`text store: short read at ${from + got}`);
      got += n;
    }
    return this.scratch.toString(encoding, 0, size);
  }

  /** The text no longer answers anything (its bytes stay until the store is rebuilt at the next open). */
  release(ref: TextRef): void {
    const size = ref.wide ? ref.length * 2 : ref.length;
    this.live -= size;
    this.dead += size;
  }

  /** Close the store; its file goes (a snapshot's link to it keeps the bytes). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
    rmSync(this.path, { force: true });
  }

  private flush(): void {
    if (this.pendingBytes === 0) return;
    const bytes = this.pending.subarray(0, this.pendingBytes);
    this.pendingBytes = 0;
    this.writeAll(bytes);
  }

  private writeAll(bytes: Uint8Array): void {
    let done = 0;
    while (done < bytes.length) done += writeSync(this.fd, bytes, done, bytes.length - done, this.flushed + done);
    this.flushed += bytes.length;
  }
}
