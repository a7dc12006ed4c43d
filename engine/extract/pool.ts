// Extraction in worker threads with a time limit per file: the shared WorkerPool with no retry
// (the same file would crash or hang a worker again), and its failures turned into
// ExtractionError (EXTRACTION_FAILED) with messages fit for the uploader.
// An image is all OCR, which on a noisy image runs for minutes: it gets its own, shorter time
// limit (the OCR budget), and running out of it is the image's doing (too large or too noisy to
// read in the budget; the uploader can send a smaller or cleaner one), so it fails as TOO_LARGE
// rather than as a parser failure. Either way the worker is terminated and replaced.
import { WorkerPool, WorkerFailure } from '../workers/pool';
import { workerUrl } from '../workers/entry-points';
import { ExtractionError } from './errors';
import type { SerializedError } from './protocol';
import { isImageHead } from './triage';
import type { ExtractOptions, ExtractResult } from './types';

export interface ExtractionPoolOptions {
  /** Worker threads (default 2). */
  size?: number;
  /** Time limit of one request once a worker runs it, in ms (default 120 s: room for 20 OCR pages). */
  timeoutMs?: number;
  /** Time limit of an image (PNG, JPEG, WebP, TIFF: read by OCR), in ms (default 30 s; at most `timeoutMs`). */
  ocrTimeoutMs?: number;
  /**
   * Most the process's memory may grow while one file is read (default 1 GiB); past it the worker
   * is stopped and the file refused as too large (TOO_LARGE).
   */
  memoryLimitBytes?: number;
  /** The worker script (default ./worker.ts); tests substitute their own. */
  workerUrl?: URL;
}

export const DEFAULT_EXTRACTION_TIMEOUT_MS = 120_000;
export const DEFAULT_EXTRACTION_MEMORY_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_OCR_TIMEOUT_MS = 30_000;

const seconds = (ms: number) => Math.round(ms / 10) / 100;

export class ExtractionPool {
  readonly size: number;
  readonly timeoutMs: number;
  readonly ocrTimeoutMs: number;
  private readonly pool: WorkerPool;

  constructor(options: ExtractionPoolOptions = {}) {
    this.timeoutMs = Math.max(1, options.timeoutMs ?? DEFAULT_EXTRACTION_TIMEOUT_MS);
    this.ocrTimeoutMs = Math.min(this.timeoutMs, Math.max(1, options.ocrTimeoutMs ?? DEFAULT_OCR_TIMEOUT_MS));
    this.pool = new WorkerPool({
      size: options.size ?? 2,
      workerUrl: options.workerUrl ?? workerUrl('extract'),
      retries: 0,
      timeoutMs: this.timeoutMs,
      memoryLimitBytes: options.memoryLimitBytes ?? DEFAULT_EXTRACTION_MEMORY_BYTES,
    });
    this.size = this.pool.size;
  }

  get busy(): number {
    return this.pool.busy;
  }

  get queued(): number {
    return this.pool.queued;
  }

  /** Requests stopped for running past the time limit. */
  get timeouts(): number {
    return this.pool.timeouts;
  }

  /** Requests stopped for needing too much memory. */
  get memoryStops(): number {
    return this.pool.memoryStops;
  }

  /** Workers that died on a request. */
  get crashes(): number {
    return this.pool.crashes;
  }

  /**
   * Extracts a file in a worker. The bytes' memory is moved to the worker: afterwards `bytes` is
   * detached (length 0) when it spanned its whole ArrayBuffer; a view of part of a larger buffer
   * is copied instead. Rejects with ExtractionError only.
   */
  async extract(bytes: Uint8Array, fileName: string, options: ExtractOptions): Promise<ExtractResult> {
    const ocr = options.allowImages && isImageHead(bytes); // before the bytes move to the worker
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const owned = whole ? (bytes.buffer as ArrayBuffer).transfer() : bytes.slice().buffer;
    try {
      return await this.pool.run<ExtractResult>({ bytes: owned, fileName, options }, [owned], ocr ? { timeoutMs: this.ocrTimeoutMs } : {});
    } catch (err) {
      if (!(err instanceof WorkerFailure)) throw err;
      switch (err.kind) {
        case 'remote': {
          const e = err.payload as SerializedError;
          throw new ExtractionError(e.code, e.message, e.detail);
        }
        case 'timeout':
          if (ocr) {
            throw new ExtractionError(
              'TOO_LARGE',
              `Reading the text of the image took longer than the ${seconds(this.ocrTimeoutMs)} s OCR budget and was stopped. Upload a smaller or cleaner image: cropped to the text, with sharp dark text on a plain background.`,
            );
          }
          throw new ExtractionError('EXTRACTION_FAILED', `Extracting the text took longer than ${seconds(this.timeoutMs)} s and was stopped.`);
        case 'memory':
          throw new ExtractionError('TOO_LARGE', `Reading the file ${err.message}; it is too large or too complex to extract.`);
        case 'crash':
          throw new ExtractionError('EXTRACTION_FAILED', 'The file could not be read: the extractor stopped unexpectedly.');
        case 'closed':
          throw new ExtractionError('EXTRACTION_FAILED', 'The extraction service is shutting down.');
      }
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
