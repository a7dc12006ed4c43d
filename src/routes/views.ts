// Engine records → the API's resource shapes.
import type { ChunkHit, ContentItem, KnowledgeBaseRecord } from '../../engine';
import { useLiteFallback } from '../kb-types';

export function knowledgeBaseView(kb: KnowledgeBaseRecord) {
  return {
    id: kb.id,
    name: kb.name,
    description: kb.description,
    activeKnowledgeBaseConfigurationId: kb.config.id,
    createdAt: kb.createdAt,
    updatedAt: kb.updatedAt,
  };
}

export function configurationView(kb: KnowledgeBaseRecord) {
  const { id, type, embedding, chunking, bm25, hnsw, modalities, createdAt } = kb.config;
  const warning = useLiteFallback(type, embedding);
  return { id, knowledgeBaseId: kb.id, type, embedding, chunking, bm25, hnsw, modalities, createdAt, ...(warning ? { warning } : {}) };
}

export function contentView(item: ContentItem) {
  const v = item.current;
  const source =
    v.source.kind === 'text'
      ? 'text'
      : { fileName: v.source.fileName, mediaType: v.source.mediaType, size: v.source.size, ...(v.source.pages ? { pages: v.source.pages } : {}) };
  return {
    id: item.id,
    contentChunk: v.text,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    metadata: v.metadata,
    status: item.status,
    ...(item.error ? { error: item.error } : {}),
    // Chunks answering searches now (an update's old chunks answer until its new ones are ready).
    chunkCount: item.live?.docs.length ?? 0,
    source,
  };
}

/**
 * A content item in a list: the text cut to `maxChars` (never inside a surrogate pair), with
 * `truncated` saying so, so a page of 100 items stays small whatever the items hold.
 */
export function contentListView(item: ContentItem, maxChars: number) {
  const view = contentView(item);
  const text = view.contentChunk;
  if (text.length <= maxChars) return { ...view, truncated: false };
  let end = maxChars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return { ...view, contentChunk: text.slice(0, end), truncated: true };
}

export function hitView(hit: ChunkHit) {
  return {
    id: hit.chunkId,
    contentChunk: hit.text,
    score: hit.score,
    contentId: hit.contentId,
    metadata: hit.metadata,
    ...(hit.page !== undefined ? { page: hit.page } : {}),
  };
}
