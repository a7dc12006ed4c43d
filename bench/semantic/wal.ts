// bench/semantic.ts, a closed engine data directory's log read back (texts, chunks and vectors)
// without opening it for writing.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodePayload, scanFrames, type IndexedChunk, type KnowledgeBaseRecord, type LogRecord, type Metadata } from '../../engine';

export interface WalItem {
  id: string;
  version: number;
  text: string;
  metadata: Metadata;
  chunks?: IndexedChunk[];
  vectors?: Float32Array[];
}

/** Read a closed engine data directory's log without opening it for writing. */
export function readWal(dataDir: string): { kb: KnowledgeBaseRecord; items: WalItem[] } {
  const dir = join(dataDir, 'wal');
  const kbs = new Map<string, KnowledgeBaseRecord>();
  const items = new Map<string, WalItem>();
  for (const name of readdirSync(dir)
    .filter((n) => /^wal-\d{20}\.log$/.test(n))
    .sort()) {
    const scan = scanFrames(new Uint8Array(readFileSync(join(dir, name))));
    for (const frame of scan.frames) {
      const { record, attachment } = decodePayload<LogRecord>(frame.payload);
      switch (record.t) {
        case 'kb.create':
          kbs.set(record.kb.id, record.kb);
          break;
        case 'content.put': {
          const prev = items.get(record.id);
          items.set(record.id, {
            id: record.id,
            version: record.version,
            text: record.text,
            metadata: record.metadata,
            ...(prev && prev.version === record.version ? prev : {}),
          });
          break;
        }
        case 'content.delete':
          items.delete(record.id);
          break;
        case 'content.indexed': {
          const item = items.get(record.id);
          if (!item || item.version !== record.version) break;
          const kb = kbs.get(record.kbId)!;
          const d = kb.config.embedding.dimensions;
          if (kb.config.embedding.quantization !== 'f32') throw new Error('readWal expects f32 vectors');
          item.chunks = record.chunks;
          item.vectors = record.chunks.map((_, i) => new Float32Array(attachment.slice(i * d * 4, (i + 1) * d * 4).buffer));
          break;
        }
      }
    }
  }
  if (kbs.size !== 1) throw new Error(`expected one knowledge base in ${dataDir}, found ${kbs.size}`);
  return { kb: [...kbs.values()][0]!, items: [...items.values()].filter((i) => i.chunks) };
}

export type Wal = ReturnType<typeof readWal>;
