// The CPU-heavy part of ingestion as one pure function: split a content item into chunks and
// analyze each chunk for the full-text index. Runs inside an ingestion worker.
import { chunkText, type ChunkingOptions, type ChunkSpan } from '../chunking/chunker';
import { termVector } from '../analysis/analyzer';

export interface ProcessJob {
  text: string;
  chunking: ChunkingOptions;
  /** Start offsets of pages 1..n in `text`, for paged sources. */
  pages?: number[];
  /** The chunks to make, when already found (a large item split across workers); else chunked here. */
  spans?: ChunkSpan[];
}

export interface ProcessedChunk {
  start: number;
  end: number;
  /** Page of the source file the chunk starts on, when known. */
  page?: number;
  terms: string[];
  tfs: number[];
  length: number;
}

function pageAt(pages: number[], offset: number): number {
  let lo = 0;
  let hi = pages.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (pages[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

export function processContent(job: ProcessJob): ProcessedChunk[] {
  return (job.spans ?? chunkText(job.text, job.chunking)).map(({ start, end }) => {
    const tv = termVector(job.text.slice(start, end));
    const chunk: ProcessedChunk = { start, end, terms: tv.terms, tfs: tv.tfs, length: tv.length };
    if (job.pages && job.pages.length > 0) chunk.page = pageAt(job.pages, start);
    return chunk;
  });
}
