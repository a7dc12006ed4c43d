// A fixed pool of worker threads running one request at a time each. Shared by the ingestion
// lanes and the extraction workers; they differ only in policy:
// - a worker that dies is replaced; its request is retried `retries` times on a fresh worker,
//   then fails with WorkerFailure('crash');
// - with `timeoutMs`, a request running longer has its worker terminated (whatever it is doing)
//   and replaced, and fails with WorkerFailure('timeout'); the clock starts when a worker picks the
//   request up, not while it waits in the queue. A request may carry its own limit (`run`'s
//   `timeoutMs`), e.g. a shorter budget for one kind of input.
// - with `memoryLimitBytes`, the process's resident memory is sampled while requests run; the
//   oldest request during which it grew by more than the limit has its worker terminated and
//   fails with WorkerFailure('memory'). Worker threads share the process heap and Bun ignores
//   Node's `resourceLimits`, so this is how a hostile input kills its worker instead of the server.
// Idle workers are unref'd so they never keep the process alive.

export type WorkerReply = { jobId: number; ok: true; value: unknown } | { jobId: number; ok: false; error: unknown };

/** Why a request failed: the worker answered with an error, died, ran out of time, or the pool closed. */
export class WorkerFailure extends Error {
  constructor(
    readonly kind: 'remote' | 'crash' | 'timeout' | 'memory' | 'closed',
    message: string,
    /** The worker's error payload, for `remote`. */
    readonly payload?: unknown,
  ) {
    super(message);
    this.name = 'WorkerFailure';
  }
}

export interface WorkerPoolOptions {
  size: number;
  workerUrl: URL;
  /** Sent to every new worker before its first request (settings it needs to start). */
  init?: unknown;
  /** Extra attempts after a crash (default 1). */
  retries?: number;
  timeoutMs?: number;
  /** Most the process's resident memory may grow while one request runs. */
  memoryLimitBytes?: number;
  /** How often memory is sampled while requests run (default 25 ms). */
  memorySampleMs?: number;
  /**
   * On close, a busy worker may finish its request (the answer is dropped) for up to this long
   * before it is stopped: stopping a thread inside a native call (ONNX Runtime) aborts the whole
   * process. Default 0: stopped at once.
   */
  closeGraceMs?: number;
}

interface Job {
  id: number;
  message: object;
  transfer: ArrayBuffer[];
  attempts: number;
  resolve: (value: unknown) => void;
  reject: (err: WorkerFailure) => void;
  timer?: ReturnType<typeof setTimeout>;
  /** Process resident memory when a worker picked the request up. */
  startRss?: number;
  /** This request's time limit (else the pool's). */
  timeoutMs?: number;
}

export interface RunOptions {
  /** Time limit of this request once a worker runs it, in place of the pool's `timeoutMs`. */
  timeoutMs?: number;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

export class WorkerPool {
  readonly size: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  /** Workers replaced after dying on a request. */
  crashes = 0;
  /** Requests stopped for running past the time limit. */
  timeouts = 0;
  /** Requests stopped for growing the process's memory past the limit. */
  memoryStops = 0;
  private memoryTimer?: ReturnType<typeof setInterval>;

  constructor(private readonly options: WorkerPoolOptions) {
    this.size = Math.max(1, Math.floor(options.size));
    for (let i = 0; i < this.size; i++) this.slots.push({ worker: this.spawn(i) });
  }

  private spawn(index: number): Worker {
    const worker = new Worker(this.options.workerUrl);
    worker.onmessage = (event: MessageEvent<WorkerReply>) => this.finish(index, worker, event.data);
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.crashed(index, worker, event.message || 'worker error');
    };
    worker.addEventListener('close', () => this.crashed(index, worker, 'worker exited'));
    if (this.options.init !== undefined) worker.postMessage({ type: 'init', settings: this.options.init });
    worker.unref();
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

  /** Run a request; `transfer` buffers move to the worker (the caller's views become empty). */
  run<T>(message: object, transfer: ArrayBuffer[] = [], options: RunOptions = {}): Promise<T> {
    if (this.closed) return Promise.reject(new WorkerFailure('closed', 'worker pool closed'));
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? this.options.timeoutMs;
      this.queue.push({ id: this.nextId++, message, transfer, attempts: 0, resolve: resolve as (v: unknown) => void, reject, timeoutMs });
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
      if (job.timeoutMs !== undefined) job.timer = setTimeout(() => this.timedOut(i, job), job.timeoutMs);
      if (this.options.memoryLimitBytes !== undefined) this.watchMemory(job);
      slot.worker.postMessage({ jobId: job.id, ...job.message }, job.transfer);
    }
  }

  private watchMemory(job: Job): void {
    job.startRss = process.memoryUsage.rss();
    if (!this.memoryTimer) {
      this.memoryTimer = setInterval(() => this.checkMemory(), this.options.memorySampleMs ?? 25);
      this.memoryTimer.unref();
    }
  }

  private checkMemory(): void {
    const running = this.slots.map((s, index) => ({ index, job: s.job })).filter((r) => r.job?.startRss !== undefined);
    if (running.length === 0) {
      clearInterval(this.memoryTimer);
      this.memoryTimer = undefined;
      return;
    }
    const rss = process.memoryUsage.rss();
    const limit = this.options.memoryLimitBytes!;
    // Oldest first: the request running longest is the likeliest to have grown the heap.
    running.sort((a, b) => a.job!.id - b.job!.id);
    const over = running.find((r) => rss - r.job!.startRss! > limit);
    if (!over) return;
    this.memoryStops++;
    this.release(over.index, true);
    over.job!.reject(new WorkerFailure('memory', `needed more than ${Math.round(limit / 2 ** 20)} MiB of memory and was stopped`));
    // The stopped worker's memory is returned over the next moments, not at once: the other
    // requests' growth counts from now, or they would pay for it.
    for (const r of running) if (r !== over) r.job!.startRss = rss;
    this.dispatch();
  }

  /** End the slot's job; with `replace`, the slot gets a fresh worker and the old one is stopped. */
  private release(index: number, replace: boolean): Job | undefined {
    const slot = this.slots[index]!;
    const job = slot.job;
    slot.job = undefined;
    if (job?.timer) clearTimeout(job.timer);
    if (replace) {
      const old = slot.worker;
      slot.worker = this.spawn(index); // first, so the old worker's 'close' sees it is stale
      try {
        old.terminate();
      } catch {}
    } else {
      slot.worker.unref();
    }
    return job;
  }

  private finish(index: number, worker: Worker, reply: WorkerReply): void {
    const slot = this.slots[index]!;
    if (slot.worker !== worker || !slot.job || slot.job.id !== reply.jobId) return;
    const job = this.release(index, false)!;
    if (reply.ok) job.resolve(reply.value);
    else job.reject(new WorkerFailure('remote', typeof reply.error === 'string' ? reply.error : 'worker reported an error', reply.error));
    this.dispatch();
  }

  private timedOut(index: number, job: Job): void {
    if (this.closed || this.slots[index]!.job !== job) return;
    this.timeouts++;
    this.release(index, true);
    job.reject(new WorkerFailure('timeout', `took longer than ${job.timeoutMs} ms and was stopped`));
    this.dispatch();
  }

  private crashed(index: number, worker: Worker, reason: string): void {
    if (this.closed || this.slots[index]!.worker !== worker) return; // already replaced
    this.crashes++;
    const job = this.release(index, true);
    if (job) {
      // A transferred buffer is gone with the worker: such a request cannot be sent again.
      if (job.attempts <= (this.options.retries ?? 1) && job.transfer.every((b) => b.byteLength > 0)) this.queue.unshift(job);
      else
        job.reject(
          new WorkerFailure('crash', `the worker crashed ${job.attempts === 1 ? 'on this request' : `${job.attempts} times on this request`} (${reason})`),
        );
    }
    this.dispatch();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.memoryTimer);
    for (const job of this.queue.splice(0)) job.reject(new WorkerFailure('closed', 'worker pool closed'));
    const stopped: Promise<void>[] = [];
    for (const slot of this.slots) {
      if (slot.job?.timer) clearTimeout(slot.job.timer);
      slot.job?.reject(new WorkerFailure('closed', 'worker pool closed'));
      stopped.push(stopWorker(slot.worker, slot.job ? (this.options.closeGraceMs ?? 0) : 0));
      slot.job = undefined;
    }
    await Promise.all(stopped);
  }
}

/** Stop a worker once it answers its request in flight, or after `graceMs` (at once when 0). */
async function stopWorker(worker: Worker, graceMs: number): Promise<void> {
  if (graceMs > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs);
      const done = () => (clearTimeout(timer), resolve());
      worker.addEventListener('message', done, { once: true });
      worker.addEventListener('close', done, { once: true });
    });
  }
  worker.terminate();
}
