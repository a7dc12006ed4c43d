// Background HNSW graph building, off the main thread: one worker (graph-worker.ts) inserts the
// pending vectors of every knowledge base into its own copy of each graph, and from time to time
// saves it; the main thread then serves a read-only view of that file (VectorIndex.adopt), while
// vectors not in the served graph yet are searched exactly. The main thread only copies rows into
// jobs and maps the saved file: about 0.5 µs per vector in the graph per hand-off, so hand-offs are
// spaced to keep them to a few percent of its time.
// Indexes without a directory for graph files, or all of them after the worker failed, are built
// on the main thread as before: 5 ms of every 25 ms while serving, 20 while idle.
import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { KnowledgeBase } from '../kb/knowledge-base';
import { workerUrl } from '../workers/entry-points';
import type { GraphReply, GraphRequest } from './graph-worker';
import type { VectorIndex } from './vector-index';

export interface GraphBuilderOptions {
  /** Vectors per job (default 256): the main thread copies their rows at once. */
  jobVectors?: number;
  /** Jobs of one graph with the worker at a time (default 2: it never waits for the next). */
  jobsInFlight?: number;
  /** A graph still being built is handed over at most this often (default 2 s)... */
  handoffMs?: number;
  /** ...and hand-offs take at most this share of the main thread (default 1/20). */
  handoffShare?: number;
  /**
   * The worker drops its copy of a caught-up graph after this long without a job (default 0: at
   * once). The copy doubles the graph's memory; keeping it saves reloading the served file (~3.4 us
   * a vector, in the worker) when more vectors come.
   */
  lingerMs?: number;
  /** Build on the main thread only (no worker). */
  mainThread?: boolean;
  log?: (level: 'warn', message: string, data?: Record<string, unknown>) => void;
}

/** What the builder knows of one graph it builds off-thread. */
interface Build {
  id: number;
  index: VectorIndex;
  gen: number;
  inFlight: number;
  /** Last job the worker applied, and the last one the served graph holds. */
  doneSeq: number;
  adoptedSeq: number;
  saving: boolean;
  /** When the last hand-off ended, and when the next may start. */
  adoptedAt: number;
  nextAt: number;
  /** The worker holds a copy of this generation. */
  held: boolean;
  linger?: ReturnType<typeof setTimeout>;
}

export class GraphBuilder {
  private worker: Worker | undefined;
  private readonly stopFlag = new Int32Array(new SharedArrayBuffer(4));
  private failed = false;
  private stopped = false;
  private nextId = 1;
  private readonly builds = new Map<VectorIndex, Build>();
  private readonly byId = new Map<number, Build>();
  private pumpTimer: ReturnType<typeof setTimeout> | undefined;
  private pumpAt = Infinity;
  private paceTimer: ReturnType<typeof setInterval> | undefined;
  private readonly jobVectors: number;
  private readonly jobsInFlight: number;
  private readonly handoffMs: number;
  private readonly handoffShare: number;
  private readonly lingerMs: number;
  /** Hand-offs so far and the main thread's milliseconds in them (tests, benches). */
  readonly stats = { jobs: 0, handoffs: 0, handoffMs: 0, workerMs: 0 };

  constructor(
    private readonly knowledgeBases: () => Iterable<KnowledgeBase>,
    /** True while nothing is asking for the main thread (or the machine's cores). */
    private readonly idle: () => boolean = () => false,
    private readonly options: GraphBuilderOptions = {},
  ) {
    this.jobVectors = options.jobVectors ?? 256;
    this.jobsInFlight = options.jobsInFlight ?? 2;
    this.handoffMs = options.handoffMs ?? 2000;
    this.handoffShare = options.handoffShare ?? 1 / 20;
    this.lingerMs = options.lingerMs ?? 0;
    this.failed = options.mainThread === true;
  }

  /** Vectors were added (or removed): build until every graph has caught up. */
  schedule(): void {
    this.pumpIn(0);
  }

  /**
   * Stop building. The worker finishes the insert or save it is in (stopping a thread inside a
   * native call can abort the process), skips what is queued, removes a file it saved meanwhile and
   * exits; resolves then, or after `waitMs` (files left behind go at the next start with the
   * vector directory).
   */
  async stop(waitMs = 1000): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pumpTimer);
    clearInterval(this.paceTimer);
    this.paceTimer = undefined;
    for (const b of this.builds.values()) clearTimeout(b.linger);
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    Atomics.store(this.stopFlag, 0, 1);
    const exited = new Promise<void>((resolve) => worker.addEventListener('close', () => resolve()));
    worker.postMessage({ t: 'stop' } satisfies GraphRequest);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  private pumpIn(ms: number): void {
    if (this.stopped) return;
    const at = performance.now() + ms;
    if (this.pumpTimer && at >= this.pumpAt) return;
    clearTimeout(this.pumpTimer);
    this.pumpAt = at;
    this.pumpTimer = setTimeout(() => {
      this.pumpTimer = undefined;
      this.pumpAt = Infinity;
      this.pump();
    }, ms);
    this.pumpTimer.unref?.();
  }

  /** Every graph: feed the worker, or (without one) step on this thread. */
  private pump(): void {
    if (this.stopped) return;
    const seen = new Set<VectorIndex>();
    let paced = false;
    for (const kb of this.knowledgeBases()) {
      for (const index of kb.vectorIndexes()) {
        seen.add(index);
        if (!index.hasGraph) continue;
        if (this.failed || !index.canBuildOffThread) {
          paced ||= index.graphPending > 0;
          continue;
        }
        if (index.graphPending > 0 || index.removalsWaiting > 0 || this.builds.has(index)) this.feed(index);
      }
    }
    // Graphs gone (knowledge base deleted, configuration replaced): the worker forgets them.
    for (const [index, b] of this.builds) if (!seen.has(index)) this.forget(b);
    if (paced) this.pace();
  }

  private build(index: VectorIndex): Build {
    let b = this.builds.get(index);
    if (!b || b.gen !== index.buildGeneration) {
      if (b) this.forget(b);
      b = { id: this.nextId++, index, gen: -1, inFlight: 0, doneSeq: 0, adoptedSeq: 0, saving: false, adoptedAt: performance.now(), nextAt: 0, held: false };
      this.builds.set(index, b);
      this.byId.set(b.id, b);
    }
    return b;
  }

  /** Send jobs while fewer than jobsInFlight are with the worker, then see whether to hand over. */
  private feed(index: VectorIndex): void {
    let b = this.build(index);
    while (b.inFlight < this.jobsInFlight && !this.failed) {
      const job = index.takeJob(this.jobVectors);
      if (!job) break;
      if (b.gen !== job.gen) {
        // takeJob started a new generation (the first job, or after a reset).
        if (b.gen !== -1) b = this.build(index);
        b.gen = job.gen;
      }
      const shape = index.graphShape;
      const threads = this.idle() ? availableParallelism() : 1;
      this.post({ t: 'add', id: b.id, shape, threads, ...job }, [job.vectors.buffer as ArrayBuffer]);
      b.inFlight++;
      b.held = true;
      this.stats.jobs++;
      clearTimeout(b.linger);
    }
    this.maybeHandOff(b);
  }

  private maybeHandOff(b: Build): void {
    if (b.saving || b.doneSeq <= b.adoptedSeq || b.gen !== b.index.buildGeneration) return;
    const now = performance.now();
    const caughtUp = b.inFlight === 0 && b.index.unsent === 0;
    const due = Math.max(b.nextAt, caughtUp ? 0 : b.adoptedAt + this.handoffMs);
    if (now < due) {
      this.pumpIn(due - now);
      return;
    }
    b.saving = true;
    this.post({ t: 'save', id: b.id, gen: b.gen, path: b.index.nextGraphFile() });
  }

  private onReply(reply: GraphReply): void {
    const b = this.byId.get(reply.id);
    if (this.stopped || !b || b.gen !== reply.gen) {
      if (reply.t === 'saved') rmSync(reply.path, { force: true });
      return;
    }
    if (reply.t === 'error') {
      // The graph is built on this thread from now on (buildStep makes the worker's jobs void).
      this.options.log?.('warn', 'HNSW graph worker failed; building on the main thread', { error: reply.message });
      this.failed = true;
      this.pump();
      return;
    }
    this.stats.workerMs += reply.ms;
    if (reply.t === 'added') {
      b.inFlight--;
      b.doneSeq = reply.seq;
    } else {
      b.saving = false;
      const started = performance.now();
      let adopted = false;
      try {
        adopted = b.index.adopt(reply.gen, reply.seq, reply.path);
      } catch (err) {
        // An unreadable file: build on this thread (buildStep makes the generation void).
        this.options.log?.('warn', 'could not map a graph the HNSW worker saved; building on the main thread', { error: String(err) });
        this.failed = true;
        rmSync(reply.path, { force: true });
        this.pump();
        return;
      }
      if (adopted) {
        const ms = performance.now() - started;
        this.stats.handoffs++;
        this.stats.handoffMs += ms;
        b.adoptedSeq = reply.seq;
        b.adoptedAt = performance.now();
        b.nextAt = b.adoptedAt + ms / this.handoffShare;
      } else rmSync(reply.path, { force: true });
    }
    this.feed(b.index);
    if (b.inFlight === 0 && !b.saving && b.index.graphPending === 0) {
      // Caught up: the worker's copy goes after a while (the next job then starts from the file).
      clearTimeout(b.linger);
      b.linger = setTimeout(() => this.forget(b), this.lingerMs);
      b.linger.unref?.();
    }
  }

  /** The worker drops its copy; the next job of the graph starts a new build record from the served file. */
  private forget(b: Build): void {
    clearTimeout(b.linger);
    if (this.builds.get(b.index) === b) this.builds.delete(b.index);
    this.byId.delete(b.id);
    if (b.held) this.worker?.postMessage({ t: 'drop', id: b.id } satisfies GraphRequest);
  }

  private post(message: GraphRequest, transfer: ArrayBuffer[] = []): void {
    if (!this.worker) {
      const worker = new Worker(workerUrl('graph'));
      worker.onmessage = (event: MessageEvent<GraphReply>) => this.onReply(event.data);
      worker.onerror = (event) => {
        this.options.log?.('warn', 'HNSW graph worker died; building on the main thread', { error: String(event.message ?? event) });
        this.failed = true;
        this.worker = undefined;
        this.pump();
      };
      worker.unref();
      worker.postMessage({ t: 'init', stop: this.stopFlag } satisfies GraphRequest);
      this.worker = worker;
    }
    this.worker.postMessage(message, transfer);
  }

  /** Main-thread building, paced (indexes the worker cannot build, or all after it failed). */
  private pace(): void {
    if (this.paceTimer || this.stopped) return;
    this.paceTimer = setInterval(() => {
      const budget = this.idle() ? 20 : 5;
      let pending = false;
      for (const kb of this.knowledgeBases()) {
        for (const index of kb.vectorIndexes()) {
          if (!index.hasGraph || index.graphPending === 0 || (!this.failed && index.canBuildOffThread)) continue;
          // Small batches: one USearch batch add runs to its end, so the batch bounds the stall.
          pending = !index.buildStep(budget, 8) || pending;
        }
      }
      if (!pending) {
        clearInterval(this.paceTimer);
        this.paceTimer = undefined;
      }
    }, 25);
    this.paceTimer.unref?.();
  }
}
