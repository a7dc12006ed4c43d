// Messages between ExtractionPool (pool.ts) and its worker threads (worker.ts).
import type { ExtractionErrorCode } from './errors';
import type { ExtractOptions, ExtractResult } from './types';

export interface ExtractRequest {
  jobId: number;
  /** The file's bytes, transferred (not copied) to the worker. */
  bytes: ArrayBuffer;
  fileName: string;
  options: ExtractOptions;
}

export interface SerializedError {
  code: ExtractionErrorCode;
  message: string;
  detail?: string;
}

export type ExtractReply = { jobId: number; ok: true; value: ExtractResult } | { jobId: number; ok: false; error: SerializedError };
