// Graph searches on a thread of their own, so that the request thread can do other work of the same
// search meanwhile: hybrid search runs its full-text leg while the graph is searched for its
// semantic leg, instead of one after the other (the graph search is most of a semantic search at
// scale). The searcher's worker (graph-search-worker.ts) opens its own read-only view of the file
// the request thread serves (VectorIndex: the graph the builder saved), so the two threads search
// the same bytes of the page cache.
//
// The hand-off is a few words of shared memory and a futex, not messages: the request thread posts
// the query, does its other work, and then blocks until the keys are there (a search stays a
// synchronous call that nothing can interleave with). Whenever the worker cannot answer at once
// (starting, opening a view of a newer graph, or gone) the caller searches on its own thread: the
// worker only ever saves time.
import { workerUrl } from '../workers/entry-points';
import type { GraphShape } from './graph-insert';

/** Slots of the control words. */
export const Ctl = {
  State: 0,
  Beam: 1,
  Count: 2,
  Key: 3,
  Dimensions: 4,
  Connectivity: 5,
  ExpansionAdd: 6,
  ExpansionSearch: 7,
  PathBytes: 8,
  Words: 9,
} as const;

/**
 * The state word says who holds the shared memory: the worker while a query is posted or a view
 * is being opened, the request thread otherwise.
 */
export const State = {
  /** The worker is starting: nothing may be posted. */
  Starting: 0,
  Idle: 1,
  Request: 2,
  Done: 3,
  /** The worker does not view the asked file yet; it opens it once handed `Viewing`. */
  Stale: 4,
  Viewing: 5,
  /** The worker cannot view the asked file. */
  Unavailable: 6,
  Stop: 7,
} as const;

/** The most the shared memory holds: a query's dimensions, the keys found, the bytes of the view's path. */
export const MAX_DIMENSIONS = 8192;
export const MAX_KEYS = 8192;
export const MAX_PATH_BYTES = 4096;
/** The control words, padded to 8 bytes: the 64-bit keys follow them. */
const CTL_BYTES = Math.ceil(Ctl.Words / 2) * 8;

export interface SearcherMemory {
  ctl: Int32Array;
  query: Float32Array;
  keys: BigUint64Array;
  path: Uint8Array;
}

export function searcherMemory(buffer: SharedArrayBuffer): SearcherMemory {
  let at = 0;
  const take = (bytes: number) => {
    const from = at;
    at += bytes;
    return from;
  };
  return {
    ctl: new Int32Array(buffer, take(CTL_BYTES), Ctl.Words),
    keys: new BigUint64Array(buffer, take(MAX_KEYS * 8), MAX_KEYS),
    query: new Float32Array(buffer, take(MAX_DIMENSIONS * 4), MAX_DIMENSIONS),
    path: new Uint8Array(buffer, take(MAX_PATH_BYTES), MAX_PATH_BYTES),
  };
}

const memoryBytes = CTL_BYTES + MAX_KEYS * 8 + MAX_DIMENSIONS * 4 + MAX_PATH_BYTES;

const encoder = new TextEncoder();

/** The longest the request thread waits for keys before it gives up on the worker for good. */
const ANSWER_TIMEOUT_MS = 5000;

/**
 * Below this many vectors the hand-off does not pay. It costs about 0.36 ms here (the two vCPUs
 * slow each other) and hides about 0.93 of the request thread's time meanwhile: with 1.0 ms of
 * other work against a 100k-vector graph it saved 0.57 ms (a scratch probe, 300 queries four
 * times), but hybrid's full-text leg there takes 0.6–0.9 ms, and bench/scale.ts at 100k measured
 * hybrid 0.3 ms slower with it (p50 16.6 against 16.3 ms): about even. The leg grows with the
 * postings (3.7–4.4 ms at 1M, where it saved 2.1–3.6 ms).
 */
export const DEFAULT_SEARCHER_MIN_VECTORS = 200_000;

export interface GraphSearcherOptions {
  /** Graphs of fewer vectors are searched on the request thread (default DEFAULT_SEARCHER_MIN_VECTORS). */
  minVectors?: number;
  /** How often the worker looks for views whose files are gone, to let them go (default 5 s). */
  sweepMs?: number;
  log?: (level: 'warn', message: string, data?: Record<string, unknown>) => void;
}

/** A graph search posted to the worker: `keys()` waits for its answer (once). */
export interface GraphQuery {
  readonly beam: number;
  /** The graph file searched. */
  readonly path: string;
  /** The keys the graph found, best first, or undefined: search on this thread instead. */
  keys(): BigUint64Array | undefined;
}

export class GraphSearcher {
  private worker: Worker | undefined;
  private readonly mem = searcherMemory(new SharedArrayBuffer(memoryBytes));
  private failed = false;
  private stopped = false;
  /** A query posted and not yet answered (settled before the next is posted). */
  private open: Pending | undefined;
  /** Searches the worker answered, and those handed back to the caller (tests, benches). */
  readonly stats = { answered: 0, declined: 0 };
  readonly minVectors: number;

  constructor(private readonly options: GraphSearcherOptions = {}) {
    this.minVectors = options.minVectors ?? DEFAULT_SEARCHER_MIN_VECTORS;
  }

  /**
   * Post a search of the graph viewed from `path` (of the index numbered `key`) for the `beam` best
   * keys; undefined when the worker cannot take it now (the caller searches itself).
   */
  start(key: number, path: string, shape: GraphShape, query: Float32Array, beam: number): GraphQuery | undefined {
    this.open?.keys();
    if (this.failed || this.stopped || beam > MAX_KEYS || query.length > MAX_DIMENSIONS) return this.decline();
    const { ctl } = this.mem;
    if (!this.worker) this.boot();
    if (Atomics.load(ctl, Ctl.State) !== State.Idle) return this.decline();
    const encoded = encoder.encode(path);
    if (encoded.length > MAX_PATH_BYTES) return this.decline();
    this.mem.path.set(encoded);
    this.mem.query.set(query);
    ctl[Ctl.PathBytes] = encoded.length;
    ctl[Ctl.Key] = key;
    ctl[Ctl.Beam] = beam;
    ctl[Ctl.Dimensions] = query.length;
    ctl[Ctl.Connectivity] = shape.connectivity;
    ctl[Ctl.ExpansionAdd] = shape.expansionAdd;
    ctl[Ctl.ExpansionSearch] = shape.expansionSearch;
    Atomics.store(ctl, Ctl.State, State.Request);
    Atomics.notify(ctl, Ctl.State);
    this.open = new Pending(this, beam, path);
    return this.open;
  }

  /** Wait for the open query's answer: its keys (a copy), or undefined. */
  answer(pending: Pending): BigUint64Array | undefined {
    if (this.open !== pending) return undefined;
    this.open = undefined;
    const { ctl } = this.mem;
    if (Atomics.wait(ctl, Ctl.State, State.Request, ANSWER_TIMEOUT_MS) === 'timed-out') {
      this.fail('the graph searcher did not answer in time');
      return undefined;
    }
    const state = Atomics.load(ctl, Ctl.State);
    if (state === State.Done) {
      const keys = this.mem.keys.slice(0, ctl[Ctl.Count]!);
      Atomics.store(ctl, Ctl.State, State.Idle);
      this.stats.answered++;
      return keys;
    }
    if (state === State.Stale) {
      // Hand the memory back: the worker opens the newer view while this thread searches.
      Atomics.store(ctl, Ctl.State, State.Viewing);
      Atomics.notify(ctl, Ctl.State);
    } else if (state === State.Unavailable) Atomics.store(ctl, Ctl.State, State.Idle);
    this.stats.declined++;
    return undefined;
  }

  /** Stop the worker (a search in it ends first; it is terminated if it does not exit in `waitMs`). */
  async stop(waitMs = 1000): Promise<void> {
    this.stopped = true;
    this.open?.keys();
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.addEventListener('close', () => resolve()));
    Atomics.store(this.mem.ctl, Ctl.State, State.Stop);
    Atomics.notify(this.mem.ctl, Ctl.State);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([exited.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs)))]);
    clearTimeout(timer);
    if (timedOut) worker.terminate();
  }

  private decline(): undefined {
    this.stats.declined++;
    return undefined;
  }

  private boot(): void {
    try {
      const worker = new Worker(workerUrl('graphSearch').href);
      worker.addEventListener('error', (event) => this.fail(`the graph searcher failed: ${(event as ErrorEvent).message}`));
      worker.addEventListener('close', () => {
        if (!this.stopped) this.fail('the graph searcher exited');
      });
      worker.postMessage({ buffer: this.mem.ctl.buffer, sweepMs: this.options.sweepMs ?? 5000 });
      // Searches go on while it runs; it must not hold the process open.
      worker.unref();
      this.worker = worker;
    } catch (err) {
      this.fail(`the graph searcher could not start: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private fail(message: string): void {
    if (this.failed || this.stopped) return;
    this.failed = true;
    this.options.log?.('warn', `${message}; graph searches stay on the request thread`);
    const worker = this.worker;
    this.worker = undefined;
    worker?.terminate();
  }
}

class Pending implements GraphQuery {
  private settled = false;
  private found: BigUint64Array | undefined;

  constructor(
    private readonly searcher: GraphSearcher,
    readonly beam: number,
    readonly path: string,
  ) {}

  keys(): BigUint64Array | undefined {
    if (!this.settled) {
      this.settled = true;
      this.found = this.searcher.answer(this);
    }
    return this.found;
  }
}
