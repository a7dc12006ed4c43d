// A fixed pool of worker threads running one request at a time each. A worker that dies is
// replaced and its request retried once before the request fails with a readable error.

interface Job {
  id: number;
  message: unknown;
  transfer: ArrayBuffer[];
  attempts: number;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

export type WorkerReply = { jobId: number; ok: true; value: unknown } | { jobId: number; ok: false; error: string };

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Workers replaced after a crash (for metrics and tests). */
  crashes = 0;

  constructor(
    readonly size: number,
    private readonly workerUrl: URL,
    /** Sent to every new worker before its first job (settings it needs to start). */
    private readonly init?: unknown,
  ) {
    for (let i = 0; i < size; i++) this.slots.push({ worker: this.spawn(i) });
  }

  private spawn(index: number): Worker {
    const worker = new Worker(this.workerUrl);
    worker.onmessage = (event: MessageEvent<WorkerReply>) => this.finish(index, event.data);
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.crashed(index, worker, event.message || 'worker error');
    };
    worker.addEventListener('close', () => this.crashed(index, worker, 'worker exited'));
    if (this.init !== undefined) worker.postMessage({ type: 'init', settings: this.init });
    worker.unref(); // idle workers must not keep the process alive
    return worker;
  }

  get busy(): number {
    return this.slots.filter((s) => s.job).length;
  }

  get queued(): number {
    return this.queue.length;
  }

  get idle(): number {
    return this.size - this.busy;
  }

  run<T>(message: unknown, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.closed) return Promise.reject(new Error('worker pool closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, message, transfer, attempts: 0, resolve: resolve as (v: unknown) => void, reject });
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
      slot.worker.postMessage({ jobId: job.id, ...(job.message as object) });
    }
  }

  private finish(index: number, reply: WorkerReply): void {
    const slot = this.slots[index]!;
    const job = slot.job;
    if (!job || job.id !== reply.jobId) return;
    slot.job = undefined;
    slot.worker.unref();
    if (reply.ok) job.resolve(reply.value);
    else job.reject(new Error(reply.error));
    this.dispatch();
  }

  private crashed(index: number, worker: Worker, reason: string): void {
    const slot = this.slots[index]!;
    if (this.closed || slot.worker !== worker) return; // already replaced
    this.crashes++;
    const job = slot.job;
    slot.job = undefined;
    try {
      worker.terminate();
    } catch {}
    slot.worker = this.spawn(index);
    if (job) {
      if (job.attempts < 2) this.queue.unshift(job);
      else job.reject(new Error(`the worker crashed twice on this request (${reason})`));
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
