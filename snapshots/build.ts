// Builds a snapshot off the main thread: the previous snapshot's records plus the sealed log
// records after it up to `seq`, compacted; an HNSW graph per large knowledge base, continued from the
// previous snapshot's graph (only vectors added since are inserted); a manifest written last.
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { renameSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import {
  copyFilePaced,
  linkOrCopy,
  decodePayload,
  encodeTextRecord,
  isBinaryPayload,
  PayloadDecoder,
  PRIVATE_FILE,
  withRecordFields,
  readFramesSync,
  TermDictionary,
  ShardSet,
  encodeFrame,
  fsyncPath as fsyncFile,
  PacedFileWriter,
  readLogRange,
  VectorIndex,
  type KnowledgeBaseRecord,
  type LogRange,
  type LogRecord,
  type SavedGraph,
} from '../engine';
import { Compactor, type KeptRecord } from './compactor';
import {
  crc32File,
  fileEntryCrc32,
  graphDocsFileName,
  graphFileName,
  MANIFEST_FILE,
  RECORDS_FILE,
  readDocs,
  recordFiles,
  sameFile,
  SNAPSHOT_FORMAT,
  tailFileName,
  type SnapshotFile,
  type SnapshotManifest,
} from './format';

export interface BuildRequest {
  /** The snapshot this one continues (already verified by the caller). */
  prevDir?: string;
  /** The log records after the previous snapshot, up to `seq`. */
  log: LogRange;
  seq: number;
  outDir: string;
  /** Knowledge bases with fewer vectors get no graph (they are searched exactly). */
  graphThreshold: number;
  /**
   * Graphs the engine saved (views of the builder's files, linked; at shutdown also graphs in
   * memory), with their configuration and the documents they hold: written into the snapshot as
   * they are, with their documents, in place of building one (a restart reconciles the
   * difference: keys no longer alive removed, vectors missing from it built). Used only for the
   * configuration active at `seq`; deleted once used.
   */
  mainGraphs?: SavedGraph[];
  /** Cluster mode with shards: the shards whose content the snapshot keeps (absent: all). */
  shards?: { count: number; held: number[] };
  /**
   * Build an incremental snapshot (single node, the previous snapshot of format 2 on; when:
   * Snapshotter.continues):
   * the previous snapshot's record files hard-linked, the log after it as written (placeLogTail), the
   * graphs in `mainGraphs` as they are, with their documents. `stats`: the engine's counts, for the
   * manifest (nothing here reads the records).
   */
  incremental?: { stats: Omit<SnapshotManifest['stats'], 'records'> };
  /**
   * An incremental snapshot's record files and graphs, placed by an earlier request
   * (placeIncrementalParts) while the engine wrote the dumps: this one only finishes it (the dumps
   * made durable, the manifest written). `mainGraphs` are not used again.
   */
  parts?: IncrementalParts;
  /**
   * Index dumps the engine wrote into `outDir` at `seq` (Snapshotter), with their manifest
   * entries: made durable and listed here. `vectors`: the set's vector file linked there, whose
   * first `bytes` are the set's (made durable and checksummed here, off the main thread); `from`:
   * the previous snapshot holds the same file, with the CRC32 of its first `from.bytes` (only the
   * rows after them are read); `base`: `file` is an index delta of this full dump, linked from the
   * previous snapshot (already durable, its entry that snapshot's).
   */
  indexes?: { kbId: string; configId: string; file: SnapshotFile; base?: SnapshotFile; vectors?: LinkedFile }[];
  /**
   * Item dumps of every knowledge base the engine wrote into `outDir` at `seq` (Snapshotter), and
   * the text store's file linked there (`texts`: its first `bytes` hold the dumps' texts):
   * made durable (the text file checksummed) and listed here; `base`: `file` is an item delta of
   * this full dump, linked from the previous snapshot (already durable, its entry that snapshot's).
   */
  items?: { files: { kbId: string; file: SnapshotFile; base?: SnapshotFile }[]; texts: LinkedFile };
}

/**
 * A file of the engine's linked into a snapshot (a vector file, the text store's): its first
 * `bytes` are the snapshot's; `from`: the previous snapshot holds the same file, with the CRC32 of
 * its first `from.bytes` (only the bytes after them are read).
 */
export interface LinkedFile {
  name: string;
  bytes: number;
  from?: { bytes: number; crc32: number };
}

/** A linked file made durable, with its manifest entry (its first `bytes`, checksummed). */
function linkedFileEntry(dir: string, f: LinkedFile): SnapshotFile {
  const path = join(dir, f.name);
  fsyncFile(path);
  return { name: f.name, bytes: f.bytes, crc32: crc32File(path, f.bytes, f.from) };
}

/** The index and item dumps of a request made durable; their manifest entries. */
function indexFiles(req: BuildRequest): Pick<SnapshotManifest, 'files' | 'indexes' | 'items'> {
  const files: SnapshotFile[] = [];
  const indexes: NonNullable<SnapshotManifest['indexes']> = [];
  for (const d of req.indexes ?? []) {
    fsyncFile(join(req.outDir, d.file.name));
    files.push(d.file);
    if (d.base) files.push(d.base);
    if (d.vectors) files.push(linkedFileEntry(req.outDir, d.vectors));
    indexes.push({
      kbId: d.kbId,
      configId: d.configId,
      file: d.file.name,
      ...(d.base ? { base: d.base.name } : {}),
      ...(d.vectors ? { vectors: d.vectors.name } : {}),
    });
  }
  const items = req.items;
  if (!items) return { files, ...(indexes.length > 0 ? { indexes } : {}) };
  for (const { file, base } of items.files) {
    fsyncFile(join(req.outDir, file.name));
    files.push(file);
    if (base) files.push(base);
  }
  files.push(linkedFileEntry(req.outDir, items.texts));
  return {
    files,
    indexes,
    items: { files: items.files.map(({ kbId, file, base }) => ({ kbId, file: file.name, ...(base ? { base: base.name } : {}) })), texts: items.texts.name },
  };
}

/**
 * What compaction and graph building read of a record: texts, metadata and term vectors dropped (the
 * encoded payload is written out unchanged), so the worker does not hold every decoded record.
 * An indexed record keeps its chunk count as the length of an empty array.
 */
function slim(record: LogRecord): LogRecord {
  if (record.t === 'content.put') return { ...record, text: '', metadata: {}, pages: undefined };
  if (record.t === 'content.indexed') return { ...record, chunks: new Array(record.chunks.length) };
  return record;
}

/** What compaction reads of a record of the log (JSON, codec.ts) or of a snapshot read by `decoder`; undefined for a dictionary payload. */
function keptOf(seq: number, payload: Uint8Array, decoder?: PayloadDecoder): KeptRecord | undefined {
  // Only the header of a binary record: compaction needs no terms, and no text.
  const decoded = decoder ? decoder.decodeForReplay<LogRecord>(payload) : decodePayload<LogRecord>(payload);
  return decoded && { seq, record: slim(decoded.record), attachmentBytes: decoded.attachment.length };
}

/**
 * A snapshot's records, streamed (records.log is never read whole); returns the terms of its
 * dictionary (snapshot format 2 on), by number.
 */
function readSnapshotRecords(dir: string, manifest: SnapshotManifest, visit: (kept: KeptRecord) => void): string[] {
  const decoder = new PayloadDecoder();
  forEachSnapshotFrame(dir, manifest, (seq, payload) => {
    const kept = keptOf(seq, payload, decoder);
    if (kept) visit(kept);
  });
  return decoder.terms;
}

/** Every frame of a snapshot's record files in order; a payload is a view valid during `visit`. */
function forEachSnapshotFrame(dir: string, manifest: SnapshotManifest, visit: (seq: number, payload: Uint8Array) => void): void {
  for (const name of recordFiles(manifest)) {
    const path = join(dir, name);
    const scan = readFramesSync(path, visit);
    if (!scan.ok) throw new Error(`${path}: ${scan.reason}`);
  }
}

/**
 * Writes the kept records (in log order) as the snapshot's records.log while the build's input is
 * read a second time: a kept record's payload is taken from its input frame (or is one compaction
 * made), with settled fields applied; indexed and content records still in JSON (from the log, or
 * an older snapshot) go to the binary encoding, the new terms of indexed ones in a dictionary frame
 * just before them (PayloadDecoder reads dictionary frames anywhere, in order). Only one record is
 * held at a time.
 */
class RecordsWriter {
  private readonly writer: PacedFileWriter;
  private readonly dict: TermDictionary;
  private dictWritten: number;
  private next = 0;
  private lastSeq = 0;

  constructor(
    path: string,
    prevTerms: readonly string[],
    private readonly kept: readonly KeptRecord[],
    /** Each kept record with its attachment, once written (graph vectors). */
    private readonly onWritten: (k: KeptRecord, attachment: Uint8Array) => void,
  ) {
    this.writer = new PacedFileWriter(path);
    // The previous snapshot's binary records are written unchanged: its terms keep their numbers.
    this.dict = TermDictionary.from(prevTerms);
    this.writer.write(encodeFrame(0, this.dict.encode()));
    this.dictWritten = this.dict.size;
  }

  /** One frame of the input, in log order (dictionary frames are skipped: the whole dictionary leads). */
  input(seq: number, payload: Uint8Array): void {
    if (seq === 0) return;
    if (seq <= this.lastSeq) throw new Error(`snapshot input out of order: ${seq} after ${this.lastSeq}`);
    this.lastSeq = seq;
    this.madeBefore(seq);
    const k = this.kept[this.next];
    if (k?.seq === seq) {
      this.next++;
      this.write(k, payload);
    }
  }

  /** The rest, and the file's entry. */
  end(): { bytes: number; crc32: number } {
    this.madeBefore(Number.POSITIVE_INFINITY);
    return this.writer.end();
  }

  /** Records compaction made at sequence numbers no input frame has (none are expected; kept in order all the same). */
  private madeBefore(seq: number): void {
    for (let k = this.kept[this.next]; k && k.seq < seq; k = this.kept[this.next]) {
      if (!k.payload) throw new Error(`kept record ${k.seq} (${k.record.t}) was not found in the snapshot's input`);
      this.next++;
      this.write(k, k.payload);
    }
  }

  private write(k: KeptRecord, input: Uint8Array): void {
    let payload = k.payload ?? input;
    if (k.settled) payload = withRecordFields(payload, k.settled);
    if (k.record.t === 'content.indexed' && !isBinaryPayload(payload)) {
      const { record, attachment } = decodePayload<LogRecord>(payload);
      payload = this.dict.encodeIndexed(record, attachment) ?? payload;
      if (this.dict.size > this.dictWritten) {
        this.writer.write(encodeFrame(0, this.dict.encode(this.dictWritten)));
        this.dictWritten = this.dict.size;
      }
    } else if (k.record.t === 'content.put' && !isBinaryPayload(payload)) {
      const { record, attachment } = decodePayload<LogRecord>(payload);
      payload = encodeTextRecord(record, attachment) ?? payload;
    }
    this.writer.write(encodeFrame(k.seq, payload));
    this.onWritten(k, payload.subarray(payload.length - k.attachmentBytes));
  }
}

/** What an incremental snapshot holds besides its dumps: record files (the previous snapshot's, the log's tail) and graphs, with their manifest entries. */
export interface IncrementalParts {
  files: SnapshotFile[];
  graphs: SnapshotManifest['graphs'];
  /** Every tail file, the previous snapshot's first. */
  tails: string[];
  records: number;
}

/** Milliseconds since the last lap, added to `phases` under each name. */
function lapper(phases?: Record<string, number>): (name: string) => void {
  let t = performance.now();
  return (name) => {
    const now = performance.now();
    if (phases) phases[name] = (phases[name] ?? 0) + Math.round(now - t);
    t = now;
  };
}

/**
 * An incremental snapshot (BuildRequest.incremental): nothing is decoded, compacted or built. Its
 * cost is the log since the previous snapshot (placeLogTail: closed segments linked, checksummed)
 * and the graphs (already saved by the engine, moved in and synced): seconds at shutdown where a
 * full snapshot rewrites every record and graph. The parts are placed first (the Snapshotter asks
 * for them on their own, while it writes the dumps), then the dumps made durable and the manifest.
 */
async function buildIncremental(
  req: BuildRequest,
  { stats }: NonNullable<BuildRequest['incremental']>,
  phases?: Record<string, number>,
): Promise<SnapshotManifest> {
  const parts = req.parts ?? (await placeIncrementalParts(req, phases));
  return finish(req, parts.files, parts.graphs, { tails: parts.tails, stats: { ...stats, records: parts.records } }, lapper(phases));
}

/** Either kind of snapshot ends here: its dumps made durable, then the manifest written last. */
async function finish(
  req: BuildRequest,
  files: SnapshotFile[],
  graphs: SnapshotManifest['graphs'],
  rest: Pick<SnapshotManifest, 'stats' | 'tails' | 'shards'>,
  lap: (name: string) => void,
): Promise<SnapshotManifest> {
  const dumps = indexFiles(req);
  lap('index dumps');
  const manifest: SnapshotManifest = {
    format: SNAPSHOT_FORMAT,
    seq: req.seq,
    createdAt: new Date().toISOString(),
    files: [...files, ...dumps.files],
    graphs,
    ...(dumps.indexes ? { indexes: dumps.indexes } : {}),
    ...(dumps.items ? { items: dumps.items } : {}),
    ...rest,
  };
  await writeManifest(req.outDir, manifest);
  lap('manifest');
  return manifest;
}

/** An incremental snapshot's record files and graphs, placed in `req.outDir` (buildIncremental). */
export async function placeIncrementalParts(req: BuildRequest, phases?: Record<string, number>): Promise<IncrementalParts> {
  const lap = lapper(phases);
  if (!req.prevDir) throw new Error('an incremental snapshot continues a previous one');
  const prev = JSON.parse(await Bun.file(join(req.prevDir, MANIFEST_FILE)).text()) as SnapshotManifest;
  const files: SnapshotManifest['files'] = [];
  // Record files are never written again once their snapshot is complete: shared, not copied.
  for (const name of recordFiles(prev)) {
    const entry = prev.files.find((f) => f.name === name);
    if (!entry) throw new Error(`previous snapshot lacks ${name}`);
    linkOrCopy(join(req.prevDir, name), join(req.outDir, name), copyFilePaced);
    files.push(entry);
  }
  lap('link previous records');
  const { tails, records } = await placeLogTail(req, files);
  lap('log tail');
  const graphs: SnapshotManifest['graphs'] = [];
  for (const g of req.mainGraphs ?? []) graphs.push(await placeMainGraph(req.outDir, g, files, prevGraphPath(req.prevDir, prev, g.kbId)));
  lap('graphs');
  return { files, graphs, tails: [...(prev.tails ?? []), ...tails], records: prev.stats.records + records };
}

/**
 * The log since the previous snapshot as record files of an incremental one, in order, with their
 * manifest entries added to `files`. A closed log segment the range holds whole is hard-linked:
 * the log never writes it again, and the link keeps it when the log is truncated. Its frames are
 * checked and counted (a damaged one fails the snapshot rather than be kept) and its CRC32 taken,
 * in one read that the page cache usually serves. The records of segments held in part are copied.
 * After a bulk load the log since the last snapshot is gigabytes: copied with paced syncs it
 * took about 4 s a GB here, against 0.15 s a GB to checksum.
 */
async function placeLogTail(req: BuildRequest, files: SnapshotFile[]): Promise<{ tails: string[]; records: number }> {
  const tails: string[] = [];
  let records = 0;
  let writer: { name: string; file: PacedFileWriter } | undefined;
  const endCopy = () => {
    if (!writer) return;
    files.push({ name: writer.name, ...writer.file.end() });
    writer = undefined;
  };
  const copy = (entry: { seq: number; payload: Uint8Array }) => {
    if (!writer) {
      const name = tailFileName(req.seq, tails.length);
      tails.push(name);
      writer = { name, file: new PacedFileWriter(join(req.outDir, name)) };
    }
    writer.file.write(encodeFrame(entry.seq, entry.payload));
    records++;
  };
  const { log } = req;
  if (log.kind !== 'segments' || !log.spans) {
    await readLogRange(log, copy);
    endCopy();
    return { tails, records };
  }
  for (let i = 0; i < log.files.length; i++) {
    const path = log.files[i]!;
    const span = log.spans[i]!;
    const part = { ...log, files: [path], spans: undefined };
    if (span.first <= log.afterSeq || span.last > log.throughSeq) {
      await readLogRange(part, copy);
      continue;
    }
    endCopy();
    const name = tailFileName(req.seq, tails.length);
    let frames = 0;
    // One read: the frames checked and counted, the file's CRC32 taken on the way.
    const scan = readFramesSync(
      path,
      (seq) => {
        if (seq < span.first || seq > span.last) throw new Error(`log segment ${path} holds record ${seq}, outside ${span.first}-${span.last}`);
        frames++;
      },
      undefined,
      false,
      true,
    );
    if (!scan.ok || scan.end !== statSync(path).size) throw new Error(`log segment ${path} fails its frame checksums${scan.ok ? '' : ` (${scan.reason})`}`);
    linkOrCopy(path, join(req.outDir, name), copyFilePaced);
    tails.push(name);
    files.push({ name, bytes: scan.end, crc32: scan.crc32! });
    records += frames;
  }
  endCopy();
  return { tails, records };
}

/**
 * A graph the engine saved, moved into the snapshot as it is, with the list of its documents; its
 * manifest entry. It may be a link to the file the engine serves (nobody writes that file again);
 * when the previous snapshot's graph is that same file (nothing changed the graph since), it is
 * copied instead: a damaged file must not take both snapshots down, leaving none to fall back to.
 */
async function placeMainGraph(outDir: string, g: SavedGraph, files: SnapshotFile[], prevGraph?: string): Promise<SnapshotManifest['graphs'][number]> {
  const file = graphFileName(g.kbId);
  const path = join(outDir, file);
  if (prevGraph && sameFile(prevGraph, g.path)) {
    files.push({ name: file, ...copyFilePaced(g.path, path) });
    rmSync(g.path);
  } else {
    renameSync(g.path, path);
    fsyncFile(path);
    files.push(fileEntryCrc32(outDir, file));
  }
  const docs = graphDocsFileName(g.kbId);
  await writeFile(join(outDir, docs), new Uint8Array(Uint32Array.from(g.docs).buffer), { mode: PRIVATE_FILE });
  fsyncFile(join(outDir, docs));
  files.push(fileEntryCrc32(outDir, docs));
  return { kbId: g.kbId, file, vectors: g.docs.length, from: 'memory', docs };
}

/** Where the previous snapshot keeps the knowledge base's graph, if it has one. */
function prevGraphPath(prevDir: string | undefined, prev: SnapshotManifest | undefined, kbId: string): string | undefined {
  const g = prev?.graphs.find((x) => x.kbId === kbId);
  return prevDir && g ? join(prevDir, g.file) : undefined;
}

/** The manifest, written last and made durable with its directory: the snapshot counts from here on. */
async function writeManifest(outDir: string, manifest: SnapshotManifest): Promise<void> {
  const manifestPath = join(outDir, MANIFEST_FILE);
  await writeFile(manifestPath, JSON.stringify(manifest, null, 2), { mode: PRIVATE_FILE });
  fsyncFile(manifestPath);
  fsyncFile(outDir);
}

/** Document numbers with vectors per knowledge base, from kept records. */
function vectorDocs(kept: KeptRecord[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const k of kept) {
    if (k.record.t !== 'content.indexed' || k.attachmentBytes === 0) continue;
    const docs = out.get(k.record.kbId) ?? [];
    for (let i = 0; i < k.record.chunks.length; i++) docs.push(k.record.firstDoc + i);
    out.set(k.record.kbId, docs);
  }
  return out;
}

/** What the snapshot worker answers a request for an incremental snapshot's parts with (placeIncrementalParts). */
export interface PartsResult {
  parts: IncrementalParts;
  phases: Record<string, number>;
}

/** What the snapshot worker answers a build with: the manifest written, and milliseconds per phase (logged). */
export interface BuildResult {
  manifest: SnapshotManifest;
  phases: Record<string, number>;
}

/**
 * `phases` (the worker, in-process callers): milliseconds spent per phase are added to it.
 */
export async function buildSnapshot(req: BuildRequest, phases?: Record<string, number>): Promise<SnapshotManifest> {
  if (req.incremental) return buildIncremental(req, req.incremental, phases);
  const lap = lapper(phases);
  const shards = req.shards && new ShardSet(req.shards.count, req.shards.held);
  const compactor = new Compactor(shards && ((kbId) => shards.holds(kbId)));
  let prevManifest: SnapshotManifest | undefined;
  let prevGraphDocs = new Map<string, number[]>();
  let prevTerms: string[] = [];
  // Pass 1: compaction decides what is kept, holding records without their payloads.
  if (req.prevDir) {
    prevManifest = JSON.parse(await Bun.file(join(req.prevDir, MANIFEST_FILE)).text()) as SnapshotManifest;
    prevTerms = readSnapshotRecords(req.prevDir, prevManifest, (k) => compactor.add(k));
    prevGraphDocs = vectorDocs(compactor.kept());
    // A graph saved from memory (an incremental snapshot) says which documents it holds.
    for (const g of prevManifest.graphs) if (g.docs) prevGraphDocs.set(g.kbId, readDocs(join(req.prevDir, g.docs)));
  }
  lap('read previous snapshot');
  await readLogRange(req.log, (entry) => compactor.add(keptOf(entry.seq, entry.payload)!));
  lap('read log');
  const kept = compactor.kept();
  lap('compact');

  // A graph per knowledge base with enough vectors: the vectors go to a scratch file beside it
  // (this worker shares the server's memory) while the records are written.
  const kbRecords = new Map<string, KnowledgeBaseRecord>();
  for (const k of kept) if (k.record.t === 'kb.create') kbRecords.set(k.record.kb.id, k.record.kb);
  /** The engine's graph of the configuration active at `seq` (a re-embedding activated since must not lend its own). */
  const mainGraphOf = (kbId: string) => req.mainGraphs?.find((g) => g.kbId === kbId && g.configId === kbRecords.get(kbId)?.config.id);
  const graphIndexes = new Map<string, VectorIndex>();
  const graphs: SnapshotManifest['graphs'] = [];
  const files: SnapshotManifest['files'] = [];
  try {
    for (const [kbId, docs] of vectorDocs(kept)) {
      const kb = kbRecords.get(kbId);
      if (!kb || docs.length < req.graphThreshold) continue;
      // The engine's graph of the configuration active here goes in as it is, with the documents it
      // holds: no vectors to gather, nothing to build. One behind its vectors (the builder lags a bulk
      // load) is not completed here: that built the same vectors twice, once in each worker (300k
      // JSONL load: a quarter of the server's CPU); a restart from it builds what it lacks, searching
      // those vectors exactly meanwhile.
      const mainGraph = mainGraphOf(kbId);
      if (mainGraph) {
        graphs.push(await placeMainGraph(req.outDir, mainGraph, files, prevGraphPath(req.prevDir, prevManifest, kbId)));
        continue;
      }
      const { embedding, hnsw } = kb.config;
      graphIndexes.set(
        kbId,
        new VectorIndex({
          dimensions: embedding.dimensions,
          quantization: embedding.quantization,
          connectivity: hnsw.connectivity,
          expansionAdd: hnsw.expansionAdd,
          expansionSearch: hnsw.expansionSearch,
          autoGraph: false,
          file: join(req.outDir, `${graphFileName(kbId)}.vectors.unsynced`),
        }),
      );
    }

    // Pass 2: the input again, each kept record written as it passes (write-ahead-log frames,
    // original sequence numbers kept, indexed records in the binary encoding).
    const records = new RecordsWriter(join(req.outDir, RECORDS_FILE), prevTerms, kept, (k, attachment) => {
      if (k.record.t !== 'content.indexed' || attachment.length === 0) return;
      const index = graphIndexes.get(k.record.kbId);
      if (!index) return;
      const { firstDoc } = k.record;
      index.fromBytes(attachment, k.record.chunks.length).forEach((v, i) => index.add(firstDoc + i, v));
    });
    if (req.prevDir && prevManifest) forEachSnapshotFrame(req.prevDir, prevManifest, (seq, payload) => records.input(seq, payload));
    await readLogRange(req.log, (entry) => records.input(entry.seq, entry.payload));
    files.push({ name: RECORDS_FILE, ...records.end() });
    lap('write records');

    for (const [kbId, index] of graphIndexes) {
      const file = graphFileName(kbId);
      const prevGraph = prevManifest?.graphs.find((g) => g.kbId === kbId);
      const mainGraph = mainGraphOf(kbId);
      const from: SnapshotManifest['graphs'][number]['from'] = mainGraph ? 'memory' : prevGraph && req.prevDir ? 'previous' : 'new';
      if (mainGraph) index.attachGraph(mainGraph.path, mainGraph.docs);
      else if (prevGraph && req.prevDir) index.attachGraph(join(req.prevDir, prevGraph.file), prevGraphDocs.get(kbId) ?? []);
      else index.startGraph();
      // One core is left to the main thread, which keeps serving and committing meanwhile.
      lap('graph: attach');
      while (!index.buildStep(1000, 256, Math.max(1, availableParallelism() - 1)));
      lap('graph: build');
      const scratch = join(req.outDir, `${file}.unsynced`);
      index.saveGraph(scratch);
      files.push({ name: file, ...copyFilePaced(scratch, join(req.outDir, file)) });
      lap('graph: save');
      rmSync(scratch);
      graphs.push({ kbId, file, vectors: index.size, from });
      index.close();
      graphIndexes.delete(kbId);
    }
  } finally {
    for (const index of graphIndexes.values()) index.close();
  }

  for (const g of req.mainGraphs ?? []) rmSync(g.path, { force: true });
  return finish(
    req,
    files,
    graphs,
    { stats: { ...compactor.stats, records: kept.length }, ...(shards && !shards.holdsAll ? { shards: shards.toJSON() } : {}) },
    lap,
  );
}
