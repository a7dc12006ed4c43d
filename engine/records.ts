// Every state change is one of these records, appended to the write-ahead log before it is
// acknowledged and replayed in order at start-up. Applying a record is deterministic: the same log
// always rebuilds the same state.
import type { EmbeddingSpec } from './embedding/provider';
import type { Metadata } from './filter/metadata';
import type { ProcessedChunk } from './ingest/process';

/** The embedding part of a configuration: the provider spec plus how vectors are stored. */
export type EmbeddingConfig = (EmbeddingSpec | { provider: 'none'; model: 'none'; dimensions: 0 }) & {
  metric: 'cosine';
  quantization: 'f32' | 'i8';
};

export type ContentStatus = 'pending' | 'processing' | 'ready' | 'failed';

/** Where a content item came from: typed text, or an uploaded file. */
export type ContentSource =
  | { kind: 'text' }
  | { kind: 'file'; fileName: string; mediaType: string; size: number; pages?: number };

/** Fixed at creation from the knowledge base type; never changed afterwards. */
export interface KnowledgeBaseConfig {
  id: string;
  type: string;
  embedding: EmbeddingConfig;
  chunking: { size: number; overlap: number };
  bm25: { k1: number; b: number };
  hnsw: { connectivity: number; expansionAdd: number; expansionSearch: number };
  modalities: ('text' | 'image')[];
  createdAt: string;
}

export interface KnowledgeBaseRecord {
  id: string;
  orgId: string;
  name: string;
  description: string;
  type: string;
  config: KnowledgeBaseConfig;
  createdAt: string;
  updatedAt: string;
}

/** A processed chunk (offsets, page, term vector) with the id it got at commit. */
export interface IndexedChunk extends ProcessedChunk {
  id: string;
}

export type LogRecord =
  | { t: 'kb.create'; kb: KnowledgeBaseRecord }
  /**
   * Only in snapshots of a node not holding the knowledge base's shard (cluster mode): the ids of
   * its items, whose records that snapshot leaves out (the organization's content quota counts them).
   */
  | { t: 'kb.census'; kbId: string; ids: string[] }
  | { t: 'kb.update'; id: string; name: string; description: string; at: string }
  | { t: 'kb.delete'; id: string }
  | {
      t: 'content.put';
      kbId: string;
      id: string;
      version: number;
      text: string;
      metadata: Metadata;
      source: ContentSource;
      /** Page start offsets in `text` for paged sources (PDF). */
      pages?: number[];
      /** Set on updates: the item's creation time (a snapshot may drop the first version's record). */
      createdAt?: string;
      at: string;
    }
  | { t: 'content.delete'; kbId: string; id: string }
  | {
      t: 'content.indexed';
      kbId: string;
      id: string;
      version: number;
      analyzer: number;
      chunks: IndexedChunk[];
      /** Document number of the first chunk (the rest follow); vectors ride in the attachment. */
      firstDoc: number;
      /**
       * Set when embedding kept failing after the retries: the chunks answer full-text search (no
       * vectors ride along) and the item is `failed` with this error until it is re-indexed.
       */
      embeddingError?: string;
      at: string;
    }
  | { t: 'content.failed'; kbId: string; id: string; version: number; error: string; at: string }
  /** A failed item's version is queued for indexing again (the re-index API). */
  | { t: 'content.retry'; kbId: string; id: string; version: number; at: string };
