// bench/snapshot.ts, part 3: snapshot bytes per chunk (records.log, HNSW graph) against the log
// before compaction, broken down by record kind.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodePayload, FRAME_HEADER, scanFrames, type LogRecord } from '../../engine';
import type { BaseMeta } from './base';
import type { SnapMeta } from './snapshot-dir';
import { round1 } from './units';

export const perChunk = (b: number, chunks: number) => round1(b / chunks);

/** What the base log (before any compaction) holds, by kind. */
export async function logBreakdown(baseDir: string) {
  const breakdown = { frames: 0, frameHeaderBytes: 0, putJsonBytes: 0, indexedJsonBytes: 0, vectorBytes: 0, otherBytes: 0 };
  const walDir = join(baseDir, 'wal');
  for (const name of readdirSync(walDir).sort()) {
    const bytes = new Uint8Array(await Bun.file(join(walDir, name)).arrayBuffer());
    for (const f of scanFrames(bytes).frames) {
      breakdown.frames++;
      breakdown.frameHeaderBytes += FRAME_HEADER;
      const { record, attachment } = decodePayload<LogRecord>(f.payload);
      const json = f.payload.length - attachment.length;
      if (record.t === 'content.put') breakdown.putJsonBytes += json;
      else if (record.t === 'content.indexed') {
        breakdown.indexedJsonBytes += json;
        breakdown.vectorBytes += attachment.length;
      } else breakdown.otherBytes += f.payload.length;
    }
  }
  return breakdown;
}

export type LogBreakdown = Awaited<ReturnType<typeof logBreakdown>>;

export function sizesOf(meta: BaseMeta, snapMeta: SnapMeta, breakdown: LogBreakdown) {
  const manifest = snapMeta.manifest;
  const recordsBytes = manifest.files.find((f) => f.name === 'records.log')?.bytes ?? 0;
  const graphBytes = manifest.files.filter((f) => f.name.startsWith('graph-')).reduce((n, f) => n + f.bytes, 0);
  const snapChunks = manifest.stats.chunks;
  const sizes = {
    chunks: meta.chunks,
    logBytes: meta.walBytes,
    logBytesPerChunk: perChunk(meta.walBytes, meta.chunks),
    logFrames: breakdown.frames,
    logBreakdownPerChunk: {
      contentPutJson: perChunk(breakdown.putJsonBytes, meta.chunks),
      contentIndexedJson: perChunk(breakdown.indexedJsonBytes, meta.chunks),
      vectors: perChunk(breakdown.vectorBytes, meta.chunks),
      frameHeaders: perChunk(breakdown.frameHeaderBytes, meta.chunks),
      other: perChunk(breakdown.otherBytes, meta.chunks),
    },
    snapshot: {
      seq: manifest.seq,
      chunks: snapChunks,
      records: manifest.stats.records,
      recordsLogBytes: recordsBytes,
      recordsLogBytesPerChunk: perChunk(recordsBytes, snapChunks),
      graphBytes,
      graphBytesPerChunk: perChunk(graphBytes, snapChunks),
      totalBytesPerChunk: perChunk(recordsBytes + graphBytes, snapChunks),
      graphs: manifest.graphs,
    },
  };
  return { sizes, recordsBytes, graphBytes, snapChunks };
}
