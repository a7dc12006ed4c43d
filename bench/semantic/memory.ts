// bench/semantic.ts, part 4: bytes per chunk of vectors, postings, text and metadata for each
// knowledge base type, rebuilt from the USE-Lite data directory's log.
import type { EmbeddingSpec, KnowledgeBaseConfig, KnowledgeBaseRecord } from '../../engine';
import type { KbType } from '../../src/kb-types';
import { DEFAULT_EXACT_THRESHOLD, KnowledgeBase, MetadataIndex } from '../lib/engine-internals';
import { fmtInt } from '../lib/format';
import { settledMemory } from '../lib/memory';
import { printTable } from '../lib/table';
import { kbConfig, useLite, type Quantization } from './models';
import { prepare } from './prepare';
import { readWal, type Wal } from './wal';
import type { Workload } from './workload';

/** Bytes JavaScriptCore keeps for a string: 1 per character when all are Latin-1, else 2. */
const stringBytes = (s: string) => (/[^\u0000-\u00ff]/.test(s) ? 2 : 1) * s.length;

// Each measurement runs inside its own call and returns only numbers: JavaScriptCore scans the
// stack conservatively, so an index held by a local of a long-lived function can survive the next
// "before" snapshot and hide the growth being measured.

async function measureType(wal: Wal, spec: EmbeddingSpec, type: KbType, quantization: Quantization, keep: unknown[]) {
  const config: KnowledgeBaseConfig = { ...kbConfig(spec, quantization, type), id: 'cfg_bench', createdAt: wal.kb.createdAt };
  const record: KnowledgeBaseRecord = { ...wal.kb, type, config };
  const before = await settledMemory();
  const kb = new KnowledgeBase(record);
  for (const item of wal.items) {
    const content = kb.putContent(item.id, { version: 1, text: item.text, metadata: item.metadata, source: { kind: 'text' } }, wal.kb.createdAt);
    kb.applyIndexed(
      content,
      item.chunks!,
      item.vectors!.map((v) => kb.vectors!.quantize(v)),
      kb.docSpace,
    );
  }
  const flatVectorBytes = kb.vectors!.memoryBytes(); // the graph holds nothing yet
  const afterAdd = await settledMemory();
  const t = performance.now();
  while (!kb.vectors!.buildStep(1000, 256));
  const graphMs = performance.now() - t;
  const afterGraph = await settledMemory();
  // Kept alive by the caller, so its memory is never freed inside the next measurement.
  keep.push(kb);
  return {
    chunks: kb.chunkCount,
    graph: kb.vectors!.graphReady,
    graphMs,
    flatVectorBytes,
    vectorBytes: kb.vectors!.memoryBytes(),
    postingBytes: kb.bm25.memoryBytes(),
    heapBytes: afterAdd.heap - before.heap,
    graphRssBytes: afterGraph.rss - afterAdd.rss,
  };
}

/** Heap growth of the metadata index alone, averaged over a few copies. */
async function measureMetadata(wal: Wal, keep: unknown[]): Promise<number> {
  const copies = 5;
  const before = await settledMemory();
  const metas: MetadataIndex[] = Array.from({ length: copies }, () => {
    const meta = new MetadataIndex();
    let doc = 0;
    for (const item of wal.items) for (const _ of item.chunks!) meta.add(doc++, item.metadata);
    return meta;
  });
  const after = await settledMemory();
  keep.push(metas);
  return (after.heap - before.heap) / copies;
}

export async function memoryPart(work: Workload) {
  const model = useLite();
  const prepared = await prepare(model, work, { graph: false });
  await prepared.engine.close();
  const wal = readWal(prepared.dir);
  const chunks = wal.items.reduce((s, i) => s + i.chunks!.length, 0);
  const textBytes = wal.items.reduce((s, i) => s + stringBytes(i.text), 0);
  const spanChars = wal.items.reduce((s, i) => s + i.chunks!.reduce((t, c) => t + (c.end - c.start), 0), 0);
  const keep: unknown[] = [];
  const metaBytes = await measureMetadata(wal, keep);
  const results: Record<string, unknown> = {};
  const rows: (string | number)[][] = [];
  let graphNote = '';
  for (const [type, quantization] of [
    ['TEXT_COST_EFFECTIVE', 'i8'],
    ['TEXT_HIGH_QUALITY', 'f32'],
  ] as const) {
    const m = await measureType(wal, model.spec, type, quantization, keep);
    if (!m.graph) graphNote = ` (no HNSW graph: ${fmtInt(chunks)} vectors is below the exact threshold ${DEFAULT_EXACT_THRESHOLD})`;
    const usedVectorBytes = chunks * (512 * (quantization === 'i8' ? 1 : 4) + 4 + 1);
    const other = m.heapBytes - m.flatVectorBytes - m.postingBytes - metaBytes;
    const per = (x: number) => (x / chunks).toFixed(0);
    rows.push([
      `${type} (${quantization})`,
      per(usedVectorBytes),
      per(m.flatVectorBytes),
      per(m.vectorBytes - m.flatVectorBytes),
      per(m.graphRssBytes),
      per(m.postingBytes),
      per(textBytes),
      per(metaBytes),
      per(other),
      per(m.heapBytes),
    ]);
    results[type] = {
      quantization,
      chunks,
      graphBuildMs: m.graphMs,
      perChunk: {
        vectorsUsed: usedVectorBytes / chunks,
        vectorsAllocated: m.flatVectorBytes / chunks,
        hnswEstimate: (m.vectorBytes - m.flatVectorBytes) / chunks,
        hnswRss: m.graphRssBytes / chunks,
        postings: m.postingBytes / chunks,
        text: textBytes / chunks,
        metadataIndex: metaBytes / chunks,
        otherHeap: other / chunks,
        heapTotal: m.heapBytes / chunks,
      },
    };
  }
  keep.length = 0;
  printTable(
    `Memory per chunk, bytes (${fmtInt(chunks)} chunks of ${fmtInt(wal.items.length)} SciFact documents, USE-Lite 512-d, chunking ${wal.kb.config.chunking.size}/${wal.kb.config.chunking.overlap})`,
    ['type', 'vectors used', 'vectors alloc', 'HNSW est.', 'HNSW RSS', 'postings', 'text', 'metadata idx', 'other heap', 'JS heap total'],
    rows,
  );
  console.log(
    `  vectors used = 512 × bytes per value + norm (4) + alive flag (1); vectors alloc = VectorIndex.memoryBytes() before the graph (capacity doubles, so up to 2× used);\n` +
      `  HNSW est. = what memoryBytes() adds for the graph (size × (vector bytes + connectivity × 2 × 8)); HNSW RSS = measured RSS growth while USearch built it${graphNote};\n` +
      `  postings = InvertedIndex.memoryBytes(); text = content texts as JSC strings, stored once per item (a chunk spans ${(spanChars / chunks).toFixed(0)} characters incl. overlap);\n` +
      `  metadata idx = heap growth of a MetadataIndex alone, one unique { sciId } per item; other heap = JS heap growth of the KnowledgeBase minus vectors, postings and metadata\n` +
      `  (chunk slots, chunk ids, content items, bookkeeping); JS heap total excludes the texts (already in memory) and USearch's native graph.`,
  );
  return results;
}
