// Builds a snapshot off the main thread: the previous snapshot's records plus the sealed log
// records after it up to `seq`, compacted; an HNSW graph per large knowledge base, continued from the
// previous snapshot's graph (only vectors added since are inserted); a manifest written last.
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import {
  copyFilePaced,
  decodePayload,
  PRIVATE_FILE,
  ShardSet,
  encodeFrame,
  fsyncPath as fsyncFile,
  PacedFileWriter,
  readLogRange,
  scanFrames,
  VectorIndex,
  type KnowledgeBaseRecord,
  type LogEntry,
  type LogRange,
  type LogRecord,
} from '../engine';
import { Compactor, type KeptRecord } from './compactor';
import { graphFileName, MANIFEST_FILE, RECORDS_FILE, SNAPSHOT_FORMAT, type SnapshotManifest } from './format';

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
   * Graphs the engine saved from memory (at shutdown, when its own graphs are complete), with the
   * documents they hold: used instead of building; differences from the snapshot's records are
   * reconciled (keys not alive removed, missing vectors added). Deleted once used.
   */
  mainGraphs?: { kbId: string; path: string; docs: number[] }[];
  /** Cluster mode with shards: the shards whose content the snapshot keeps (absent: all). */
  shards?: { count: number; held: number[] };
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

function keptOf(entry: LogEntry): KeptRecord {
  const { record, attachment } = decodePayload<LogRecord>(entry.payload);
  return { seq: entry.seq, record: slim(record), payload: entry.payload, attachment };
}

async function readSnapshotRecords(path: string, visit: (kept: KeptRecord) => void): Promise<void> {
  const scan = scanFrames(new Uint8Array(await Bun.file(path).arrayBuffer()));
  if (!scan.ok) throw new Error(`${path}: ${scan.reason}`);
  for (const f of scan.frames) visit(keptOf(f));
}

/** Document numbers with vectors per knowledge base, from kept records. */
function vectorDocs(kept: KeptRecord[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const k of kept) {
    if (k.record.t !== 'content.indexed' || k.attachment.length === 0) continue;
    const docs = out.get(k.record.kbId) ?? [];
    for (let i = 0; i < k.record.chunks.length; i++) docs.push(k.record.firstDoc + i);
    out.set(k.record.kbId, docs);
  }
  return out;
}

export async function buildSnapshot(req: BuildRequest): Promise<SnapshotManifest> {
  const shards = req.shards && new ShardSet(req.shards.count, req.shards.held);
  const compactor = new Compactor(shards && ((kbId) => shards.holds(kbId)));
  let prevManifest: SnapshotManifest | undefined;
  let prevGraphDocs = new Map<string, number[]>();
  if (req.prevDir) {
    prevManifest = JSON.parse(await Bun.file(join(req.prevDir, MANIFEST_FILE)).text()) as SnapshotManifest;
    await readSnapshotRecords(join(req.prevDir, RECORDS_FILE), (k) => compactor.add(k));
    prevGraphDocs = vectorDocs(compactor.kept());
  }
  await readLogRange(req.log, (entry) => compactor.add(keptOf(entry)));

  const kept = compactor.kept();
  // The compacted log: the same frames as the write-ahead log, original sequence numbers kept.
  const writer = new PacedFileWriter(join(req.outDir, RECORDS_FILE));
  for (const k of kept) writer.write(encodeFrame(k.seq, k.payload));
  const files = [{ name: RECORDS_FILE, ...writer.end() }];

  const graphs: SnapshotManifest['graphs'] = [];
  const kbRecords = new Map<string, KnowledgeBaseRecord>();
  for (const k of kept) if (k.record.t === 'kb.create') kbRecords.set(k.record.kb.id, k.record.kb);
  for (const [kbId, docs] of vectorDocs(kept)) {
    const kb = kbRecords.get(kbId);
    if (!kb || docs.length < req.graphThreshold) continue;
    const { embedding, hnsw } = kb.config;
    const file = graphFileName(kbId);
    // The vectors go to a scratch file beside the graph (this worker shares the server's memory).
    const index = new VectorIndex({
      dimensions: embedding.dimensions,
      quantization: embedding.quantization,
      connectivity: hnsw.connectivity,
      expansionAdd: hnsw.expansionAdd,
      expansionSearch: hnsw.expansionSearch,
      autoGraph: false,
      file: join(req.outDir, `${file}.vectors.unsynced`),
    });
    let from: SnapshotManifest['graphs'][number]['from'];
    let vectors = 0;
    try {
      for (const k of kept) {
        if (k.record.t !== 'content.indexed' || k.record.kbId !== kbId || k.attachment.length === 0) continue;
        const vectors = index.fromBytes(k.attachment, k.record.chunks.length);
        vectors.forEach((v, i) => index.add((k.record as { firstDoc: number }).firstDoc + i, v));
      }
      const prevGraph = prevManifest?.graphs.find((g) => g.kbId === kbId);
      const mainGraph = req.mainGraphs?.find((g) => g.kbId === kbId);
      from = mainGraph ? 'memory' : prevGraph && req.prevDir ? 'previous' : 'new';
      if (mainGraph) index.attachGraph(mainGraph.path, mainGraph.docs);
      else if (prevGraph && req.prevDir) index.attachGraph(join(req.prevDir, prevGraph.file), prevGraphDocs.get(kbId) ?? []);
      else index.startGraph();
      // One core is left to the main thread, which keeps serving and committing meanwhile.
      while (!index.buildStep(1000, 256, Math.max(1, availableParallelism() - 1)));
      const scratch = join(req.outDir, `${file}.unsynced`);
      index.saveGraph(scratch);
      files.push({ name: file, ...copyFilePaced(scratch, join(req.outDir, file)) });
      rmSync(scratch);
      vectors = index.size;
    } finally {
      index.close();
    }
    graphs.push({ kbId, file, vectors, from });
  }

  for (const g of req.mainGraphs ?? []) rmSync(g.path, { force: true });

  const manifest: SnapshotManifest = {
    format: SNAPSHOT_FORMAT,
    seq: req.seq,
    createdAt: new Date().toISOString(),
    files,
    graphs,
    stats: { ...compactor.stats, records: kept.length },
    ...(shards && !shards.holdsAll ? { shards: shards.toJSON() } : {}),
  };
  const manifestPath = join(req.outDir, MANIFEST_FILE);
  await writeFile(manifestPath, JSON.stringify(manifest, null, 2), { mode: PRIVATE_FILE });
  fsyncFile(manifestPath);
  fsyncFile(req.outDir);
  return manifest;
}
