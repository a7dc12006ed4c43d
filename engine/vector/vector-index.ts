// Vectors of one knowledge base: a flat row store (the source of truth, used for exact cosine
// scores) plus a USearch HNSW graph that accelerates large unfiltered searches. The graph is only
// a candidate generator: every hit is re-scored exactly on the stored vector, so a search answers
// the same cosine whether it ran exactly or through HNSW. Small knowledge bases and selective
// filters are searched exactly; the HNSW graph is built in the background once a knowledge base
// passes the crossover size, and searches stay exact until it has caught up.
import { Index, MetricKind, ScalarKind } from 'usearch';
import { TopK, type Scored } from '../topk';

export type Quantization = 'f32' | 'i8';

export interface VectorIndexOptions {
  dimensions: number;
  quantization: Quantization;
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
  /** Below this many vectors (or allowed vectors under a filter) search is exact. */
  exactThreshold?: number;
  /** Start an HNSW graph by itself once the threshold is passed (default true; the snapshot worker builds its own). */
  autoGraph?: boolean;
}

// Exact search of 1,000 vectors takes ~0.8 ms (512-d, bench/semantic.ts); above that HNSW is faster
// at recall@10 ≥ 0.99.
export const DEFAULT_EXACT_THRESHOLD = 1000;

type Store = Float32Array | Int8Array;

export class VectorIndex {
  readonly dimensions: number;
  readonly quantization: Quantization;
  private store: Store;
  private norms: Float32Array;
  private alive: Uint8Array;
  private live = 0;
  private hnsw: Index | undefined;
  /** Docs stored but not yet in the HNSW graph (the background build works through them). */
  private pending: number[] = [];
  private readonly exactThreshold: number;

  constructor(private readonly options: VectorIndexOptions) {
    this.dimensions = options.dimensions;
    this.quantization = options.quantization;
    this.exactThreshold = options.exactThreshold ?? DEFAULT_EXACT_THRESHOLD;
    this.store = this.quantization === 'i8' ? new Int8Array(1024 * this.dimensions) : new Float32Array(1024 * this.dimensions);
    this.norms = new Float32Array(1024);
    this.alive = new Uint8Array(1024);
  }

  get size(): number {
    return this.live;
  }

  /** True when large searches go through HNSW (the graph holds every stored vector). */
  get graphReady(): boolean {
    return this.hnsw !== undefined && this.pending.length === 0;
  }

  get graphPending(): number {
    return this.hnsw ? this.pending.length : 0;
  }

  has(doc: number): boolean {
    return doc < this.alive.length && this.alive[doc] === 1;
  }

  private ensureCapacity(doc: number): void {
    if (doc < this.alive.length) return;
    let cap = this.alive.length;
    while (cap <= doc) cap *= 2;
    const store = this.quantization === 'i8' ? new Int8Array(cap * this.dimensions) : new Float32Array(cap * this.dimensions);
    store.set(this.store as never);
    this.store = store;
    const norms = new Float32Array(cap);
    norms.set(this.norms);
    this.norms = norms;
    const alive = new Uint8Array(cap);
    alive.set(this.alive);
    this.alive = alive;
  }

  /** The stored form of a unit vector: as is (f32) or scaled to −127..127 (i8). */
  quantize(vector: Float32Array): Store {
    if (this.quantization === 'f32') return vector;
    const out = new Int8Array(vector.length);
    for (let i = 0; i < vector.length; i++) out[i] = Math.max(-127, Math.min(127, Math.round(vector[i]! * 127)));
    return out;
  }

  /** Add a stored-form vector (from `quantize`, or read back from the log). */
  add(doc: number, stored: Store): void {
    if (stored.length !== this.dimensions) throw new Error(`vector has ${stored.length} dimensions, expected ${this.dimensions}`);
    this.ensureCapacity(doc);
    if (this.alive[doc]) this.remove(doc);
    const offset = doc * this.dimensions;
    this.store.set(stored as never, offset);
    let sum = 0;
    for (let i = 0; i < this.dimensions; i++) sum += stored[i]! * stored[i]!;
    this.norms[doc] = Math.sqrt(sum);
    this.alive[doc] = 1;
    this.live++;
    if (this.hnsw) this.pending.push(doc);
    else if (this.live >= this.exactThreshold && this.options.autoGraph !== false) this.startGraph();
  }

  remove(doc: number): boolean {
    if (!this.has(doc)) return false;
    this.alive[doc] = 0;
    this.live--;
    if (this.hnsw?.contains(BigInt(doc))) this.hnsw.remove(BigInt(doc));
    return true;
  }

  /** Live document numbers, ascending. */
  aliveDocs(): number[] {
    const out: number[] = [];
    for (let d = 0; d < this.alive.length; d++) if (this.alive[d]) out.push(d);
    return out;
  }

  /** Whether the knowledge base is large enough to keep an HNSW graph. */
  get wantsGraph(): boolean {
    return this.live >= this.exactThreshold;
  }

  /** Start a graph holding nothing yet: every stored vector becomes pending. */
  startGraph(): void {
    this.hnsw = this.newGraph();
    this.pending = this.aliveDocs();
  }

  /**
   * Use a graph saved by `saveGraph` whose keys are `graphDocs`: keys no longer alive are removed,
   * stored vectors missing from it become pending.
   */
  attachGraph(path: string, graphDocs: Iterable<number>): void {
    const graph = this.newGraph();
    graph.load(path);
    const inGraph = new Set<number>();
    for (const d of graphDocs) {
      if (this.alive[d]) inGraph.add(d);
      else graph.remove(BigInt(d));
    }
    this.hnsw = graph;
    this.pending = this.aliveDocs().filter((d) => !inGraph.has(d));
  }

  /** True when there is a graph (complete or still catching up). */
  get hasGraph(): boolean {
    return this.hnsw !== undefined;
  }

  /** Document numbers in the graph: the live ones not waiting to be added. */
  graphDocs(): number[] {
    const pending = new Set(this.pending);
    return this.aliveDocs().filter((d) => !pending.has(d));
  }

  /** Write the graph to `path` (its keys are document numbers). */
  saveGraph(path: string): void {
    if (!this.hnsw) throw new Error('no graph to save');
    this.hnsw.save(path);
  }

  private newGraph(): Index {
    const { dimensions, connectivity, expansionAdd, expansionSearch } = this.options;
    return new Index({
      dimensions,
      metric: MetricKind.Cos,
      quantization: this.quantization === 'i8' ? ScalarKind.I8 : ScalarKind.F32,
      connectivity,
      expansion_add: expansionAdd,
      expansion_search: expansionSearch,
      multi: false,
    });
  }

  /**
   * Move pending vectors into the HNSW graph for about `budgetMs`, in batches (USearch adds a
   * batch on `threads` threads, 0 = every core). Returns true when nothing is left to do.
   */
  buildStep(budgetMs: number, batch = 64, threads = 0): boolean {
    if (!this.hnsw) return true;
    const started = performance.now();
    while (this.pending.length > 0 && performance.now() - started < budgetMs) {
      const docs = this.pending.splice(0, batch).filter((d) => this.alive[d]);
      if (docs.length === 0) continue;
      const matrix = new Float32Array(docs.length * this.dimensions);
      docs.forEach((d, i) => {
        const row = this.row(d);
        for (let j = 0; j < this.dimensions; j++) matrix[i * this.dimensions + j] = row[j]!;
      });
      this.hnsw.add(
        BigUint64Array.from(docs, (d) => BigInt(d)),
        matrix,
        threads,
      );
    }
    return this.pending.length === 0;
  }

  private row(doc: number): Store {
    const o = doc * this.dimensions;
    return this.store.subarray(o, o + this.dimensions);
  }

  /** Exact cosine of a unit query against a stored vector. */
  private cosine(query: Float32Array, doc: number): number {
    const o = doc * this.dimensions;
    const store = this.store;
    let dot = 0;
    for (let i = 0; i < this.dimensions; i++) dot += query[i]! * store[o + i]!;
    const n = this.norms[doc]!;
    return n === 0 ? 0 : dot / n;
  }

  scoreDocs(query: Float32Array, docs: readonly number[]): number[] {
    return docs.map((d) => (this.has(d) ? this.cosine(query, d) : 0));
  }

  /**
   * The k most similar documents by cosine. `allowed` (mask) and `allowedDocs` (the same set as a
   * sorted list) restrict the search before ranking.
   */
  search(query: Float32Array, k: number, allowed?: Uint8Array, allowedDocs?: readonly number[]): Scored[] {
    if (k <= 0 || this.live === 0) return [];
    const candidates = allowedDocs ? allowedDocs.length : this.live;
    if (!this.graphReady || candidates < this.exactThreshold) return this.exact(query, k, allowed, allowedDocs);
    return this.approximate(query, k, allowed) ?? this.exact(query, k, allowed, allowedDocs);
  }

  exact(query: Float32Array, k: number, allowed?: Uint8Array, allowedDocs?: readonly number[]): Scored[] {
    const top = new TopK(Math.min(k, this.live));
    if (allowedDocs) {
      for (const d of allowedDocs) if (this.alive[d]) top.push(d, this.cosine(query, d));
    } else {
      const n = this.alive.length;
      for (let d = 0; d < n; d++) {
        if (this.alive[d] === 1 && (allowed === undefined || allowed[d] === 1)) top.push(d, this.cosine(query, d));
      }
    }
    return top.sorted();
  }

  /** HNSW candidates, re-scored exactly; undefined when a filter leaves too few of them. */
  private approximate(query: Float32Array, k: number, allowed?: Uint8Array): Scored[] | undefined {
    let fetch = Math.min(this.live, Math.max(k * 2, 32));
    for (;;) {
      const matches = this.hnsw!.search(query, fetch, 0);
      const top = new TopK(k);
      let found = 0;
      for (const key of matches.keys) {
        const d = Number(key);
        if (!this.alive[d] || (allowed && allowed[d] !== 1)) continue;
        top.push(d, this.cosine(query, d));
        found++;
      }
      if (found >= k || fetch >= this.live) return top.sorted();
      // A filter that rejects most neighbours: scoring the allowed set exactly is cheaper.
      if (allowed && fetch >= 8 * Math.max(k, 32)) return undefined;
      fetch = Math.min(this.live, fetch * 4);
    }
  }

  /** Stored vectors of docs, concatenated (for the write-ahead log and snapshots). */
  storedBytes(vectors: Store[]): Uint8Array {
    const bytesPer = this.quantization === 'i8' ? 1 : 4;
    const out = new Uint8Array(vectors.length * this.dimensions * bytesPer);
    vectors.forEach((v, i) => out.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), i * this.dimensions * bytesPer));
    return out;
  }

  /** Split bytes written by `storedBytes` back into stored-form vectors. */
  fromBytes(bytes: Uint8Array, count: number): Store[] {
    const bytesPer = this.quantization === 'i8' ? 1 : 4;
    // An aligned copy (Uint8Array.prototype.slice: a Node Buffer's own slice() would be a view).
    const copy = Uint8Array.prototype.slice.call(bytes, 0, count * this.dimensions * bytesPer);
    const all = this.quantization === 'i8' ? new Int8Array(copy.buffer) : new Float32Array(copy.buffer);
    return Array.from({ length: count }, (_, i) => all.subarray(i * this.dimensions, (i + 1) * this.dimensions));
  }

  memoryBytes(): number {
    const { rows, graph } = this.memoryByPart();
    return rows + graph;
  }

  /** Rows: the flat store (its capacity doubles), norms and flags; graph: USearch's copy of each vector plus its links (an estimate). */
  memoryByPart(): { rows: number; graph: number } {
    return {
      rows: this.store.byteLength + this.norms.byteLength + this.alive.byteLength,
      graph: this.hnsw ? Number(this.hnsw.size()) * (this.dimensions * (this.quantization === 'i8' ? 1 : 4) + this.options.connectivity * 2 * 8) : 0,
    };
  }
}
