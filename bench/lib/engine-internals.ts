// The engine modules the benchmarks need that engine/index.ts does not export: they time or
// measure the engine's parts one by one (chunking, analysis, the BM25 index, a knowledge base
// without the Engine façade). Everything else comes from '../../engine'.
export { chunkText } from '../../engine/chunking/chunker';
export { processContent, type ProcessedChunk } from '../../engine/ingest/process';
export { InvertedIndex } from '../../engine/bm25/inverted-index';
export { DEFAULT_BM25 } from '../../engine/bm25/scorer';
export { KnowledgeBase } from '../../engine/kb/knowledge-base';
export { MetadataIndex } from '../../engine/filter/metadata';
export { Compute } from '../../engine/ingest/compute';
export { DEFAULT_EXACT_THRESHOLD } from '../../engine/vector/vector-index';
export { extractFile } from '../../engine/extract';
export { createTransformersProvider, type TransformersSpec } from '../../engine/embedding/providers/transformers';
