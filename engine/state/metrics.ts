// Point-in-time counts of the state, for metrics and health pages.
import type { KnowledgeBase } from '../kb/knowledge-base';

export interface EngineMetrics {
  queueDepth: number;
  contentsByStatus: Record<string, number>;
  /** Per knowledge base type: knowledge bases, live chunks, stored vectors, vectors waiting for the HNSW graph. */
  byType: Record<string, { knowledgeBases: number; chunks: number; vectors: number; graphPending: number }>;
  walBytes: number;
  workerCrashes: number;
}

export function collectMetrics(kbs: Iterable<KnowledgeBase>, rest: Pick<EngineMetrics, 'queueDepth' | 'walBytes' | 'workerCrashes'>): EngineMetrics {
  const contentsByStatus: Record<string, number> = { pending: 0, processing: 0, ready: 0, failed: 0 };
  const byType: EngineMetrics['byType'] = {};
  for (const kb of kbs) {
    for (const item of kb.contents.values()) contentsByStatus[item.status] = (contentsByStatus[item.status] ?? 0) + 1;
    const t = (byType[kb.record.type] ??= { knowledgeBases: 0, chunks: 0, vectors: 0, graphPending: 0 });
    t.knowledgeBases++;
    t.chunks += kb.chunkCount;
    t.vectors += kb.vectorCount;
    t.graphPending += kb.graphPending;
  }
  return { ...rest, contentsByStatus, byType };
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
