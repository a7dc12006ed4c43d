// Engine records → the API's resource shapes.
import { analyzerOf, type ChunkHit, type ContentItem, type Highlighted, type KnowledgeBaseRecord, type Metadata } from '../../engine';
import { useLiteFallback } from '../kb-types';
import { MAX_METADATA_ARRAY, MAX_METADATA_JSON_BYTES, MAX_METADATA_KEYS, MAX_METADATA_STRING } from '../schemas/common';

/** A string cut to `max` characters, never inside a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

const bounded = new WeakMap<Metadata, { metadata: Metadata; truncated: boolean }>();

/**
 * Metadata as answers carry it: within the limits new writes are held to (keys, string lengths,
 * array lengths, 16 KiB as JSON), so an item stored before those limits (kept whole, never lost)
 * cannot make a search answer huge by repeating its metadata on every hit. Worked out once per
 * metadata object; metadata within the limits is answered as it is.
 */
export function answerMetadata(metadata: Metadata): { metadata: Metadata; truncated: boolean } {
  let answer = bounded.get(metadata);
  if (answer) return answer;
  if (
    Buffer.byteLength(JSON.stringify(metadata), 'utf8') <= MAX_METADATA_JSON_BYTES &&
    Object.values(metadata).every((v) => !Array.isArray(v) || v.length <= MAX_METADATA_ARRAY)
  ) {
    answer = { metadata, truncated: false };
  } else {
    // Keys in order while they fit; of an array, its first strings that fit.
    const kept: Metadata = {};
    const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
    let bytes = 2; // {}
    for (const [key, value] of Object.entries(metadata).slice(0, MAX_METADATA_KEYS)) {
      const keyBytes = size(key) + 2; // ':' and ','
      if (Array.isArray(value)) {
        const strings: string[] = [];
        let arrayBytes = 2; // []
        for (const s of value.slice(0, MAX_METADATA_ARRAY)) {
          const item = cut(s, MAX_METADATA_STRING);
          if (bytes + keyBytes + arrayBytes + size(item) + 1 > MAX_METADATA_JSON_BYTES) break;
          strings.push(item);
          arrayBytes += size(item) + 1;
        }
        if (strings.length === 0 && value.length > 0) continue;
        kept[key] = strings;
        bytes += keyBytes + arrayBytes;
        continue;
      }
      const v = typeof value === 'string' ? cut(value, MAX_METADATA_STRING) : value;
      if (bytes + keyBytes + size(v) > MAX_METADATA_JSON_BYTES) continue;
      kept[key] = v;
      bytes += keyBytes + size(v);
    }
    answer = { metadata: kept, truncated: true };
  }
  bounded.set(metadata, answer);
  return answer;
}

export function knowledgeBaseView(kb: KnowledgeBaseRecord) {
  return {
    id: kb.id,
    name: kb.name,
    description: kb.description,
    activeKnowledgeBaseConfigurationId: kb.config.id,
    // The model its vectors come from (the configuration has the rest): lists show it at no cost.
    embeddingModel: kb.config.embedding.model,
    createdAt: kb.createdAt,
    updatedAt: kb.updatedAt,
  };
}

export function configurationView(kb: KnowledgeBaseRecord) {
  const { id, type, embedding, chunking, bm25, hnsw, modalities, createdAt } = kb.config;
  const warning = useLiteFallback(type, embedding);
  return {
    id,
    knowledgeBaseId: kb.id,
    type,
    embedding,
    chunking,
    bm25,
    hnsw,
    modalities,
    analyzer: analyzerOf(kb.config),
    createdAt,
    ...(warning ? { warning } : {}),
  };
}

/** `metadata`, plus `metadataTruncated: true` when the stored metadata is over the limits. */
function metadataFields(stored: Metadata): { metadata: Metadata; metadataTruncated?: true } {
  const { metadata, truncated } = answerMetadata(stored);
  return truncated ? { metadata, metadataTruncated: true } : { metadata };
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
    ...metadataFields(v.metadata),
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
  return { ...view, contentChunk: cut(text, maxChars), truncated: true };
}

const contextView = (c: { id: string; text: string }) => ({ id: c.id, contentChunk: c.text });

export function hitView(hit: Highlighted<ChunkHit>) {
  return {
    id: hit.chunkId,
    contentChunk: hit.text,
    score: hit.score,
    contentId: hit.contentId,
    ...metadataFields(hit.metadata),
    ...(hit.page !== undefined ? { page: hit.page } : {}),
    ...(hit.highlights ? { highlights: hit.highlights, snippet: hit.snippet } : {}),
    ...(hit.context ? { context: { before: hit.context.before.map(contextView), after: hit.context.after.map(contextView) } } : {}),
  };
}
