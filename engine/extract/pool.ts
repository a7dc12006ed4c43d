// A small fixed pool of extraction worker threads, one request at a time each, with a time limit
// per request. A request that runs past the limit has its worker terminated (whatever the worker is
// doing, a busy loop included) and replaced, and fails with EXTRACTION_FAILED; so does a request
// whose worker crashes (no retry: the same file would crash it again). The pattern follows
// engine/ingest/pool.ts: workers are unref'd while idle so they never keep the process alive.
import { ExtractionError } from './errors';
import type { ExtractReply, ExtractRequest } from './protocol';
import type { ExtractOptions, ExtractResult } from './types';

export interface ExtractionPoolOptions {
  /** Worker threads (default 2). */
  size?: number;
  /** Time limit of one request once a worker runs it, in ms (default 120 s: room for 20 OCR pages). */
  timeoutMs?: number;
  /** The worker script (default ./worker.ts); tests substitute their own. */
  workerUrl?: URL;
}

interface Job {
  id: number;
  bytes: ArrayBuffer;
  fileName: string;
  options: ExtractOptions;
  resolve: (value: ExtractResult) => void;
  reject: (err: ExtractionError) => void;
  timer?: ReturnType<typeof setTimeout>;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

export const DEFAULT_EXTRACTION_TIMEOUT_MS = 120_000;

function seconds(ms: number): string {
  return String(Math.round(ms / 10) / 100);
}

export class ExtractionPool {
  readonly size: number;
  readonly timeoutMs: number;
  private readonly workerUrl: URL;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Requests stopped for running past the time limit. */
  timeouts = 0;
  /** Workers that died on a request. */
  crashes = 0;

  constructor(options: ExtractionPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(options.size ?? 2));
    this.timeoutMs = Math.max(1, options.timeoutMs ?? DEFAULT_EXTRACTION_TIMEOUT_MS);
    this.workerUrl = options.workerUrl ?? new URL('./worker.ts', import.meta.url);
    for (let i = 0; i < this.size; i++) this.slots.push({ worker: this.spawn(i) });
  }

  get busy(): number {
    return this.slots.filter((s) => s.job).length;
  }

  get queued(): number {
    return this.queue.length;
  }

  /**
   * Extracts a file in a worker. The bytes' memory is moved to the worker: afterwards `bytes` is
   * detached (length 0) when it spanned its whole ArrayBuffer; a view of part of a larger buffer
   * is copied instead. Rejects with ExtractionError only.
   */
  extract(bytes: Uint8Array, fileName: string, options: ExtractOptions): Promise<ExtractResult> {
    if (this.closed) return Promise.reject(new ExtractionError('EXTRACTION_FAILED', 'The extraction service is shutting down.'));
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const owned = whole ? (bytes.buffer as ArrayBuffer).transfer() : bytes.slice().buffer;
    return new Promise<ExtractResult>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, bytes: owned, fileName, options, resolve, reject });
      this.dispatch();
    });
  }

  private spawn(index: number): Worker {
    const worker = new Worker(this.workerUrl);
    worker.onmessage = (event: MessageEvent<ExtractReply>) => this.finish(index, worker, event.data);
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.crashed(index, worker);
    };
    worker.addEventListener('close', () => this.crashed(index, worker));
    worker.unref();
    return worker;
  }

  private dispatch(): void {
    for (let i = 0; i < this.slots.length && this.queue.length > 0; i++) {
      const slot = this.slots[i]!;
      if (slot.job) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      job.timer = setTimeout(() => this.timedOut(i, job), this.timeoutMs);
      const request: ExtractRequest = { jobId: job.id, bytes: job.bytes, fileName: job.fileName, options: job.options };
      slot.worker.postMessage(request, [job.bytes]);
    }
  }

  /** Ends the slot's current job (if it is `job`) and gives the slot a fresh worker when asked. */
  private release(index: number, replace: boolean): Job | undefined {
    const slot = this.slots[index]!;
    const job = slot.job;
    slot.job = undefined;
    if (job?.timer) clearTimeout(job.timer);
    if (replace) {
      const old = slot.worker;
      slot.worker = this.spawn(index); // replace first: the old worker's 'close' must see it is stale
      old.terminate();
    } else {
      slot.worker.unref();
    }
    return job;
  }

  private finish(index: number, worker: Worker, reply: ExtractReply): void {
    const slot = this.slots[index]!;
    if (slot.worker !== worker || !slot.job || slot.job.id !== reply.jobId) return;
    const job = this.release(index, false)!;
    if (reply.ok) job.resolve(reply.value);
    else job.reject(new ExtractionError(reply.error.code, reply.error.message, reply.error.detail));
    this.dispatch();
  }

  private timedOut(index: number, job: Job): void {
    const slot = this.slots[index]!;
    if (this.closed || slot.job !== job) return;
    this.timeouts++;
    this.release(index, true);
    job.reject(
      new ExtractionError('EXTRACTION_FAILED', `Extracting the text took longer than ${seconds(this.timeoutMs)} s and was stopped.`),
    );
    this.dispatch();
  }

  private crashed(index: number, worker: Worker): void {
    const slot = this.slots[index]!;
    if (this.closed || slot.worker !== worker) return; // already replaced
    this.crashes++;
    const job = this.release(index, true);
    job?.reject(new ExtractionError('EXTRACTION_FAILED', 'The file could not be read: the extractor stopped unexpectedly.'));
    this.dispatch();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = () => new ExtractionError('EXTRACTION_FAILED', 'The extraction service is shutting down.');
    for (const job of this.queue.splice(0)) job.reject(error());
    for (const slot of this.slots) {
      if (slot.job?.timer) clearTimeout(slot.job.timer);
      slot.job?.reject(error());
      slot.job = undefined;
      slot.worker.terminate();
    }
  }
}
