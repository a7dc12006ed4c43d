// bench/snapshot.ts, the base data directory: every item in the log, no snapshot. Built once
// through the engine under .bench-out/snapshot/base-<chunks>/ and reused (--fresh rebuilds it).
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chunkText } from '../lib/engine-internals';
import { dirBytes } from '../lib/files';
import type { BenchContext } from './context';
import { args, CHUNKING, ORG, OUT, targetChunks } from './options';
import { mib } from './units';

export interface BaseMeta {
  kbId: string;
  items: number;
  chunks: number;
  walBytes: number;
  ingestAckSeconds: number;
  ingestIndexedSeconds: number;
}

export async function baseDirectory({
  say,
  elapsed,
  itemText,
  open,
  kbConfig,
  ingest,
  failedItems,
}: BenchContext): Promise<{ baseDir: string; meta: BaseMeta }> {
  const baseDir = join(OUT, `base-${targetChunks}`);
  const metaPath = join(baseDir, 'bench-meta.json');
  let meta: BaseMeta;
  if (!args.fresh && existsSync(metaPath)) {
    meta = (await Bun.file(metaPath).json()) as BaseMeta;
    say(`reusing ${baseDir}: ${meta.items} items, ${meta.chunks} chunks (--fresh rebuilds)`);
  } else {
    rmSync(baseDir, { recursive: true, force: true });
    mkdirSync(baseDir, { recursive: true });
    // How many items give the target chunk count (the chunker is deterministic).
    let items = 0;
    let expected = 0;
    while (expected < targetChunks) expected += chunkText(itemText(items++), CHUNKING).length;
    say(`building ${baseDir}: ${items} items (~${expected} chunks) through the engine…`);
    const engine = await open(baseDir);
    const kb = await engine.createKnowledgeBase(ORG, { name: 'snapshot bench', description: '', type: 'TEXT_HIGH_QUALITY', config: kbConfig });
    const times = await ingest(engine, kb.id, 0, items);
    await failedItems(engine, 'building the data directory');
    const chunks = engine.stats().chunks;
    await engine.close();
    meta = {
      kbId: kb.id,
      items,
      chunks,
      walBytes: dirBytes(join(baseDir, 'wal')),
      ingestAckSeconds: times.ackSeconds,
      ingestIndexedSeconds: times.indexedSeconds,
    };
    await Bun.write(metaPath, JSON.stringify(meta, null, 2));
    say(
      `  [${elapsed()}] built: ${meta.chunks} chunks indexed in ${meta.ingestIndexedSeconds}s (acks ${meta.ingestAckSeconds}s), log ${mib(meta.walBytes)} MiB`,
    );
  }
  return { baseDir, meta };
}
