// A fixed pool of ingestion workers. Each worker runs one job at a time; a worker that dies is
// replaced and its job retried once before the job fails with a readable error.
import type { ProcessJob, ProcessedChunk } from './process';
import type { WorkerRequest, WorkerResponse } from './worker';

interface Job {
  id: number;
  job: ProcessJob;
  attempts: number;
  resolve: (chunks: ProcessedChunk[]) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    readonly size: number,
    private readonly workerUrl: URL = new URL('./worker.ts', import.meta.url),
  ) {
    for (let i = 0; i < size; i++) this.slots.push({ worker: this.spawn(i) });
  }

  private spawn(index: number): Worker {
    const worker = new Worker(this.workerUrl);
    worker.onmessage = (event: MessageEvent<WorkerResponse>) => this.finish(index, event.data);
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.crashed(index, event.message || 'worker error');
    };
    worker.addEventListener('close', () => {
      if (!this.closed && this.slots[index]?.worker === worker) this.crashed(index, 'worker exited');
    });
    // Idle workers must not keep the process alive.
    worker.unref();
    return worker;
  }

  get pending(): number {
    return this.queue.length + this.slots.filter((s) => s.job).length;
  }

  run(job: ProcessJob): Promise<ProcessedChunk[]> {
    if (this.closed) return Promise.reject(new Error('worker pool closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, job, attempts: 0, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (let i = 0; i < this.slots.length && this.queue.length > 0; i++) {
      const slot = this.slots[i]!;
      if (slot.job) continue;
      const job = this.queue.shift()!;
      job.attempts++;
      slot.job = job;
      slot.worker.ref();
      slot.worker.postMessage({ jobId: job.id, job: job.job } satisfies WorkerRequest);
    }
  }

  private finish(index: number, res: WorkerResponse): void {
    const slot = this.slots[index]!;
    const job = slot.job;
    if (!job || job.id !== res.jobId) return;
    slot.job = undefined;
    slot.worker.unref();
    if (res.ok) job.resolve(res.chunks);
    else job.reject(new Error(res.error));
    this.dispatch();
  }

  private crashed(index: number, reason: string): void {
    const slot = this.slots[index]!;
    const job = slot.job;
    slot.job = undefined;
    try {
      slot.worker.terminate();
    } catch {}
    if (this.closed) return;
    slot.worker = this.spawn(index);
    if (job) {
      if (job.attempts < 2) this.queue.unshift(job);
      else job.reject(new Error(`ingestion worker crashed twice on this item (${reason})`));
    }
    this.dispatch();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('worker pool closed'));
    for (const slot of this.slots) {
      slot.job?.reject(new Error('worker pool closed'));
      slot.worker.terminate();
    }
  }
}
