// The engine's one public face: what the server (src/), snapshots (snapshots/) and benchmarks
// use. Nothing outside engine/ imports an engine module directly (test/engine/public-face.test.ts).

// The engine and what it is opened with and reports.
export { Engine } from './engine';
export type {
  EngineLog,
  EngineOptions,
  NewContent,
  RecoveryReport,
  ReplicationStatus,
  RestoredIndex,
  SearchRequest,
  StartingItems,
  StartingPoint,
} from './options';
export { EngineError, isEngineError, type EngineErrorCode, type EngineErrorDetails } from './errors';
export { QuotaExceededError, type Quotas } from './state/quotas';
export type { EngineMetrics } from './state/metrics';
export type { SavedGraph } from './state/live-state';
export { DEFAULT_EMBEDDING_RETRY } from './ingest/queue';
export { backoffDelay, type Backoff } from './retry';
export { ShardSet, shardOf } from './shards';
export type { NodeEntry } from './cluster/live-nodes';

// The data it holds and answers with.
export type { ChunkHit, ContentItem, KnowledgeBase } from './kb/knowledge-base';
export type { HybridHit, HybridOptions } from './search/hybrid';
export {
  analyzerOf,
  indexesAlike,
  type ContentSource,
  type ContentStatus,
  type EmbeddingConfig,
  type IndexedChunk,
  type KnowledgeBaseConfig,
  type KnowledgeBaseRecord,
  type LogRecord,
} from './records';
export type { ReembedProgress, ReembedStart } from './methods/reembed';
export type { Metadata, MetadataFilter, MetadataValue } from './filter/metadata';
export { compileFilter, FilterError } from './filter/expression';
export { newId, isIdOf } from './ids';

// Embedding models and file extraction.
export { EmbeddingError, specKey, toSpec, type EmbeddingSpec } from './embedding/provider';
export { ExtractionError, ExtractionLanes, ExtractionPool, shutdownOcr, type ExtractionLanesOptions, type ExtractionPoolOptions } from './extract';

// What snapshots are made of: the state machine, the log (its records, frames and implementations:
// on disk, in a JetStream stream, in memory), graphs, workers.
export { applyRecord, statusAfterIndexed, type RecordOf, type StateTarget } from './state/machine';
export type { LogEntry, LogRange, RecordLog } from './log/log';
export { SegmentLog, type WalOptions } from './log/segment-log';
export { MemoryLog, type MemoryLogOptions } from './log/memory-log';
export { readLogRange } from './log/range';
export { JetStreamLog, LogGapError, RecordTooLargeError } from './log/jetstream-log';
export type { NatsAuth } from './log/nats';
export { decodePayload, encodePayload, encodeTextRecord, isBinaryPayload, PayloadDecoder, TermDictionary, withRecordFields } from './log/codec';
export { encodeFrame, readFramesSync, scanFrames, FRAME_HEADER } from './log/frame';
export { VectorIndex } from './vector/vector-index';
export { GraphSearcher } from './vector/graph-searcher';
export type { IndexSetDump } from './kb/index-set';
export { applyIndexDelta, dumpBytes, indexDelta, indexMark, type DeltaBase, type IndexMark, type IndexSetDelta } from './kb/index-delta';
export type { ItemDump, ItemMark } from './kb/item-dump';
export { applyItemDelta } from './kb/item-dump';
export type { InvertedIndexDump } from './bm25/inverted-index';
export type { DocTermsDump } from './bm25/doc-terms';
export type { ChunkTableDump } from './kb/chunk-table';
export { WorkerPool } from './workers/pool';
export { workerUrl, WORKER_ENTRY_POINTS, type WorkerKind } from './workers/entry-points';
export { copyFilePaced, fsyncPath, fsyncPathAsync, linkOrCopy, PacedFileWriter, PRIVATE_DIR, PRIVATE_FILE } from './fsync';
export { sha256File } from './files/hash';

// Search planning, for benchmarks that time one knowledge base's search without the façade.
export { searchFullText } from './search/full-text';
export { fullTextQuery } from './search/expansion';
export { searchSemantic } from './search/semantic';
export { searchHybrid, needsQueryVector } from './search/hybrid';
export { refine, rankRefined, type Highlighted, type Refinements } from './search/refine';
export { highlightsOf, snippetOf, type Highlight, type Snippet } from './search/highlight';
export { analyze, ANALYZER_VERSION } from './analysis/analyzer';

// Models on demand (the `models` command).
export {
  DEFAULT_HUB_URL,
  listModels,
  locateModel,
  missingModelFiles,
  ModelPullError,
  modelPath,
  pullModel,
  type InstalledModel,
  type ModelDtype,
  type PullProgress,
} from './embedding/hub';
