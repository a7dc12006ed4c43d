// On-disk layout of a snapshot: a directory `snap-<seq>` holding
//   records.log          the compacted log (write-ahead-log frames) up to `seq`; from format 2 on,
//                        a term dictionary first (sequence number 0) and binary indexed records
//   graph-<kbId>.usearch HNSW graphs, keyed by document number, of large knowledge bases
//   index-<kbId>-<configId>.dump  optional: an index set's chunk table and BM25 index as the engine
//                        had them at `seq` (snapshots/index-dump.ts); restart loads it instead of
//                        re-adding every chunk, and replays the records in full without it
//   vectors-<kbId>-<configId>.rows  optional, beside a dump: the set's stored vectors, a hard link
//                        to the engine's vector file (its first `bytes`); restart links it back
//                        instead of writing every vector of the records again
//   items-<kbId>.dump    optional, with index dumps of every set: a knowledge base's items as the
//                        engine had them at `seq` (snapshots/item-dump.ts); with them a restart
//                        replays no record
//   items-<kbId>.delta   instead of a dump: the items changed since a full dump (its manifest
//                        entry's `base`, linked from the snapshot before) and the ids removed
//   texts.bin            beside item dumps: a hard link to the engine's text store file (its first
//                        `bytes`), where the dumped items' texts lie
//   manifest.json        format version, seq, and the size and SHA-256 of every file (written last)
// A snapshot is valid only when its manifest parses and every file matches its checksum. Index
// dumps are derived data checked when they are read (a CRC32 per section): one that fails is not
// used, the snapshot still is (its records hold everything).
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { sha256File, type ShardSet } from '../engine';

/**
 * Written: 4, as 3 with item dumps and the text store's file (a server reading only 3 would check
 * that file's length as the file's, which grows). 3: as 2 with content records in the binary
 * encoding too, and vector files beside index dumps (a server reading only 2 would decode neither,
 * and would check a vector file's length as the file's). 2: records.log with indexed records in
 * the binary encoding after a term dictionary (engine/log/codec.ts). Read: 3, 2 and 1 too (1: all
 * records JSON as in the write-ahead log).
 */
export const SNAPSHOT_FORMAT = 4;
const FORMATS_READ = [1, 2, 3, 4];
export const MANIFEST_FILE = 'manifest.json';
export const RECORDS_FILE = 'records.log';

export interface SnapshotFile {
  name: string;
  bytes: number;
  /** One of the two checksums: CRC32 (every file written now: 12× faster to check than SHA-256), or SHA-256 (hex): records of older snapshots. */
  sha256?: string;
  crc32?: number;
}

/**
 * CRC32 of a file (of its first `bytes`), read in pieces. `from`: the CRC32 of its first
 * `from.bytes` is known (the previous snapshot's, of the same file): only the rest is read.
 */
export function crc32File(path: string, bytes = Number.POSITIVE_INFINITY, from = { bytes: 0, crc32: 0 }): number {
  const fd = openSync(path, 'r');
  try {
    const buf = new Uint8Array(8 << 20);
    let crc = from.crc32;
    for (let done = from.bytes; done < bytes; ) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, bytes - done), done);
      if (n === 0) return crc;
      crc = Bun.hash.crc32(buf.subarray(0, n), crc);
      done += n;
    }
    return crc;
  } finally {
    closeSync(fd);
  }
}

/** A manifest entry for a finished file, with its CRC32. */
export const fileEntryCrc32 = (dir: string, name: string): SnapshotFile => {
  const path = join(dir, name);
  return { name, bytes: statSync(path).size, crc32: crc32File(path) };
};

export interface SnapshotManifest {
  format: number;
  /** Every log record up to this sequence number is in the snapshot. */
  seq: number;
  createdAt: string;
  files: SnapshotFile[];
  /** HNSW graphs: the file and the document numbers it holds (for re-attaching). */
  graphs: {
    kbId: string;
    file: string;
    vectors: number /** Where the graph came from: the engine's memory, the previous snapshot, or built anew. */;
    from?: 'memory' | 'previous' | 'new';
    /**
     * A file of the document numbers the graph holds (u32, little-endian) when they may differ from
     * the vectors of the records (a graph saved from memory as it was, at shutdown): re-attaching
     * removes keys not alive and queues vectors missing from it. Absent: exactly the records' vectors.
     */
    docs?: string;
  }[];
  /**
   * Files of log frames replayed after records.log, in order (format 2 on). An incremental snapshot
   * (at shutdown, or while serving: Snapshotter.continues) holds the previous snapshot's record
   * files, hard-linked (never written again), then the log after it as it was written (closed log
   * segments it holds whole hard-linked, the records of others copied); a compaction writes them
   * into one again.
   */
  tails?: string[];
  /**
   * Index dumps of the state at `seq` (absent: none, as in snapshots written before them). Written
   * only when the engine's state was exactly the snapshot's when it was taken (a single node).
   */
  indexes?: {
    kbId: string;
    configId: string;
    file: string;
    /**
     * `file` is an index delta (engine/kb/index-delta.ts) continuing this full index dump, a hard
     * link of the previous snapshot's: the set's dump is the two together.
     */
    base?: string;
    /**
     * The set's vector file, hard-linked from the engine's (format 3 on): its first `bytes` (the
     * files entry's) are the set's stored vectors by document number; the engine may have written
     * more after them, which are not the snapshot's. Derived like the dump: checked when read.
     */
    vectors?: string;
  }[];
  /**
   * Item dumps of every knowledge base (format 4 on), each with index dumps of all its sets, and the
   * text store's file they point into, hard-linked from the engine's (its first `bytes`, the files
   * entry's): a restart builds its state from them and the index dumps, and replays no record.
   * Derived like the index dumps: checked when read, and the records are replayed when one fails.
   */
  items?: {
    /** `base`: `file` is an item delta of this full dump, a hard link of the previous snapshot's. */
    files: { kbId: string; file: string; base?: string }[];
    texts: string;
  };
  stats: { knowledgeBases: number; contents: number; chunks: number; records: number };
  /** Cluster mode with shards: the only shards whose content the snapshot holds (absent: all). */
  shards?: { count: number; held: number[] };
}

/**
 * Whether a snapshot holds every knowledge base a node with `shards` needs (cluster mode with
 * shards); any snapshot does for a node holding every shard.
 */
export const coversShards = (shards: ShardSet | undefined) => (manifest: SnapshotManifest) => !shards || shards.coveredBy(manifest.shards);

/** The files of a snapshot's records, in the order they are replayed. */
export const recordFiles = (manifest: Pick<SnapshotManifest, 'tails'>): string[] => [RECORDS_FILE, ...(manifest.tails ?? [])];
/** A tail of the incremental snapshot at `seq`; `part` numbers its files after the first (log segments linked whole). */
export const tailFileName = (seq: number, part = 0) => `records-${String(seq).padStart(20, '0')}${part > 0 ? `-${part}` : ''}.log`;
/** How many incremental snapshots in a row the tails are (each may have several files). */
export const tailSnapshots = (manifest: Pick<SnapshotManifest, 'tails'>): number =>
  new Set((manifest.tails ?? []).map((name) => /^records-(\d{20})/.exec(name)?.[1] ?? name)).size;
export const graphDocsFileName = (kbId: string) => `graph-${kbId}.docs`;

const DIR = /^snap-(\d{20})$/;
/** Where a snapshot is built before it is renamed to its `snap-<seq>` name (Snapshotter). */
const TMP_DIR = /^tmp-/;
export const snapshotDirName = (seq: number) => `snap-${String(seq).padStart(20, '0')}`;
export const graphFileName = (kbId: string) => `graph-${kbId}.usearch`;
export const vectorFileName = (kbId: string, configId: string) => `vectors-${kbId}-${configId}.rows`;
export const TEXTS_FILE = 'texts.bin';

/** Snapshot directories under `root`, newest first. */
export async function listSnapshotDirs(root: string): Promise<{ seq: number; dir: string; name: string }[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  return names
    .map((name) => ({ name, m: DIR.exec(name) }))
    .filter((x) => x.m)
    .map(({ name, m }) => ({ seq: Number(m![1]), dir: join(root, name), name }))
    .sort((a, b) => b.seq - a.seq);
}

/** Whether two paths name one file (hard links); false when either is missing. */
export function sameFile(a: string, b: string): boolean {
  const x = statSync(a, { throwIfNoEntry: false });
  const y = statSync(b, { throwIfNoEntry: false });
  return x !== undefined && y !== undefined && x.ino === y.ino && x.dev === y.dev;
}

/**
 * Whether two snapshot directories share their compacted records (one continues the other: its
 * records.log is a hard link to the other's), so that damage to that file is damage to both.
 */
export const sharesRecords = (a: string, b: string): boolean => sameFile(join(a, RECORDS_FILE), join(b, RECORDS_FILE));

/** Whether the snapshot in `dir` holds `file` among its record files (the same file, hard-linked). */
export function holdsRecordFile(dir: string, file: string): boolean {
  let manifest: SnapshotManifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8')) as SnapshotManifest;
  } catch {
    return false;
  }
  return recordFiles(manifest).some((name) => sameFile(join(dir, name), file));
}

/**
 * The newest snapshot under `root` older than the one in `dir` that shares no records with it:
 * the one to fall back to should they be damaged (its directory), or undefined.
 */
export function fallbackOf(root: string, dir: string): string | undefined {
  const seq = Number(DIR.exec(basename(dir))?.[1]);
  const older = readdirSync(root)
    .map((name) => ({ name, seq: Number(DIR.exec(name)?.[1]) }))
    .filter((s) => s.seq < seq)
    .sort((a, b) => b.seq - a.seq);
  return older.map((s) => join(root, s.name)).find((other) => !sharesRecords(dir, other));
}

/**
 * Remove the `tmp-*` build directories of snapshots that never finished (the process died while
 * writing them; a finished one is renamed to `snap-<seq>`). Only for start-up, before any snapshot
 * can run. Returns the names removed.
 */
export async function removeUnfinishedSnapshots(root: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const unfinished = names.filter((name) => TMP_DIR.test(name));
  for (const name of unfinished) await rm(join(root, name), { recursive: true, force: true });
  return unfinished;
}

/** The manifest when the snapshot in `dir` is complete and intact, else the reason it is not. */
/**
 * Check a snapshot directory against its manifest: every file present with its size and SHA-256.
 * `framed`: the record files (recordFiles) are only size-checked here: the caller reads them anyway
 * and every frame carries its own CRC32 (readFramesSync), so hashing them too would read them twice.
 */
export async function verifySnapshot(
  dir: string,
  options: { framed?: boolean } = {},
): Promise<{ ok: true; manifest: SnapshotManifest } | { ok: false; reason: string }> {
  let manifest: SnapshotManifest;
  try {
    manifest = JSON.parse(await Bun.file(join(dir, MANIFEST_FILE)).text()) as SnapshotManifest;
  } catch {
    return { ok: false, reason: 'manifest missing or unreadable' };
  }
  if (!FORMATS_READ.includes(manifest.format)) return { ok: false, reason: `unknown snapshot format ${manifest.format}` };
  const framed = options.framed ? recordFiles(manifest) : [];
  const dumps = new Set([
    ...(manifest.indexes ?? []).flatMap((d) => [d.file, ...(d.base ? [d.base] : []), ...(d.vectors ? [d.vectors] : [])]),
    ...(manifest.items ? [...manifest.items.files.flatMap((f) => [f.file, ...(f.base ? [f.base] : [])]), manifest.items.texts] : []),
  ]);
  for (const f of manifest.files) {
    // Checked section by section when read (readIndexDump); not needed for the snapshot to be usable.
    if (dumps.has(f.name)) continue;
    const path = join(dir, f.name);
    const file = Bun.file(path);
    if (!(await file.exists())) return { ok: false, reason: `${f.name} is missing` };
    if (file.size !== f.bytes) return { ok: false, reason: `${f.name} has ${file.size} bytes, expected ${f.bytes}` };
    if (framed.includes(f.name)) continue;
    const intact = f.crc32 !== undefined ? crc32File(path) === f.crc32 : (await sha256File(path)) === f.sha256;
    if (!intact) return { ok: false, reason: `${f.name} fails its checksum` };
  }
  return { ok: true, manifest };
}

/** A graph's document numbers (SnapshotManifest graphs[].docs). */
export function readDocs(path: string): number[] {
  // An aligned copy: a small file's Buffer may sit at any offset of a shared pool.
  const bytes = Uint8Array.from(readFileSync(path));
  const docs = new Uint32Array(bytes.buffer);
  // A loop: Array.from's iterator took 0.2 s at 300k documents.
  const out = new Array<number>(docs.length);
  for (let i = 0; i < docs.length; i++) out[i] = docs[i]!;
  return out;
}
