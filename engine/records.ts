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
export type ContentSource = { kind: 'text' } | { kind: 'file'; fileName: string; mediaType: string; size: number; pages?: number };

/** Made from the knowledge base type: at creation, and again when the model serving the type changes (re-embedding). */
export interface KnowledgeBaseConfig {
  id: string;
  type: string;
  embedding: EmbeddingConfig;
  chunking: { size: number; overlap: number };
  bm25: { k1: number; b: number };
  hnsw: { connectivity: number; expansionAdd: number; expansionSearch: number };
  modalities: ('text' | 'image')[];
  /**
   * The analysis its chunks' terms come from (engine/analysis, ANALYZER_VERSION); absent: 1, the
   * first. A configuration is built with the analyzer of its time; a newer one means re-embedding.
   */
  analyzer?: number;
  createdAt: string;
}

/** The analyzer version a configuration's index was built with. */
export const analyzerOf = (config: Pick<KnowledgeBaseConfig, 'analyzer'>) => config.analyzer ?? 1;

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
  /**
   * Re-embedding: build `config` (a new id) beside the active configuration, from every item. A
   * configuration that indexes as the active one does (same embedding and chunking) cancels a build
   * instead; one that indexes as the build under way is the same build (a no-op).
   */
  | { t: 'kb.reconfigure'; kbId: string; config: KnowledgeBaseConfig; at: string }
  /** The configuration built is complete: searches use it from here on (activeKnowledgeBaseConfigurationId). */
  | { t: 'kb.activate'; kbId: string; configId: string; at: string }
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
      /** The configuration indexed for (absent: the active one; records written before re-embedding existed). */
      configId?: string;
      /**
       * Set when embedding kept failing after the retries: the chunks answer full-text search (no
       * vectors ride along) and the item is `failed` with this error until it is re-indexed.
       */
      embeddingError?: string;
      at: string;
    }
  | { t: 'content.failed'; kbId: string; id: string; version: number; error: string; configId?: string; at: string }
  /** A failed item's version is queued for indexing again (the re-index API). */
  | { t: 'content.retry'; kbId: string; id: string; version: number; at: string }
  /**
   * Changes nothing. Logged at graceful shutdown when nothing was written since the newest
   * snapshot but that snapshot lacks dumps of the state: the snapshot at shutdown, which must
   * cover a later log position than the one before it, can then hold them (SnapshotManager.shutdown).
   */
  | { t: 'log.mark'; at: string };

/**
 * Whether two configurations index alike: the same embedding (model, export, dimensions, vector
 * storage), chunking and analysis. Re-embedding is needed exactly when they do not.
 */
export function indexesAlike(
  a: Pick<KnowledgeBaseConfig, 'embedding' | 'chunking' | 'analyzer'>,
  b: Pick<KnowledgeBaseConfig, 'embedding' | 'chunking' | 'analyzer'>,
): boolean {
  return (
    canonical(a.embedding) === canonical(b.embedding) &&
    a.chunking.size === b.chunking.size &&
    a.chunking.overlap === b.chunking.overlap &&
    analyzerOf(a) === analyzerOf(b)
  );
}

function canonical(value: object): string {
  return JSON.stringify(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : 1)),
  );
}
