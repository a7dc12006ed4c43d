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
  workerCrashes: number;
}

export function collectMetrics(
  kbs: KnowledgeBase[],
  chunksPerSecond: number,
  rest: Pick<EngineMetrics, 'queueDepth' | 'walBytes' | 'workerCrashes'>,
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
  return { ...rest, contentsByStatus: ingestion.contents, ingestion, byType };
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
