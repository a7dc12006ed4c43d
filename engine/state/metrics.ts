// Point-in-time counts of the state, for metrics and health pages.
import { progressOf, type IngestionProgress } from '../ingest/progress';
import type { KnowledgeBase } from '../kb/knowledge-base';

export interface EngineMetrics {
  queueDepth: number;
  contentsByStatus: IngestionProgress['contents'];
  /** Every knowledge base together: chunks waiting, pace over the last minute, time left. */
  ingestion: IngestionProgress;
  /** Per knowledge base type: knowledge bases, live chunks, stored vectors, vectors waiting for the HNSW graph. */
  byType: Record<string, { knowledgeBases: number; chunks: number; vectors: number; graphPending: number }>;
  walBytes: number;
  /** The text store's file: texts of versions something refers to, and texts dead since (the file holds both until written anew). */
  textBytes: { live: number; dead: number };
  workerCrashes: number;
  /** Knowledge bases being re-embedded, and their items built so far of all their items. */
  reembedding: { knowledgeBases: number; done: number; total: number };
}

export function collectMetrics(
  kbs: KnowledgeBase[],
  chunksPerSecond: number,
  rest: Pick<EngineMetrics, 'queueDepth' | 'walBytes' | 'textBytes' | 'workerCrashes'>,
): EngineMetrics {
  const byType: EngineMetrics['byType'] = {};
  for (const kb of kbs) {
    const t = (byType[kb.record.type] ??= { knowledgeBases: 0, chunks: 0, vectors: 0, graphPending: 0 });
    t.knowledgeBases++;
    t.chunks += kb.chunkCount;
    t.vectors += kb.vectorCount;
    t.graphPending += kb.graphPending;
  }
  const ingestion = progressOf(kbs, chunksPerSecond);
  return { ...rest, contentsByStatus: ingestion.contents, ingestion, byType, reembedding: reembedSummary(kbs) };
}

/** Knowledge bases being re-embedded and their items built so far (only those are walked). */
export function reembedSummary(kbs: Iterable<KnowledgeBase>): EngineMetrics['reembedding'] {
  const summary = { knowledgeBases: 0, done: 0, total: 0 };
  for (const kb of kbs) {
    if (!kb.building) continue;
    const build = kb.buildProgress()!;
    summary.knowledgeBases++;
    summary.done += build.done;
    summary.total += build.total;
  }
  return summary;
}

/** How much the state holds. */
export function countState(kbs: Map<string, KnowledgeBase>): { knowledgeBases: number; contents: number; chunks: number } {
  let contents = 0;
  let chunks = 0;
  for (const kb of kbs.values()) {
    contents += kb.contentCount;
    chunks += kb.chunkCount;
  }
  return { knowledgeBases: kbs.size, contents, chunks };
}
