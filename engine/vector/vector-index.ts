// Vectors of one knowledge base. The stored vectors (f32, or i8 for an i8 configuration) are the
// source of truth for scores: they live in a RowStore (engine/vector/row-store.ts), a file of the
// engine's data directory read back with positioned reads (in memory only for an index without a
// directory). In RAM there is one quantized copy of each vector, USearch's i8 copy inside its HNSW
// graph, which is only a candidate generator: every candidate is re-scored exactly on the stored
// vector, so a search answers the same cosine whether it ran exactly or through HNSW. Small
// knowledge bases and selective filters are searched exactly (rows read in blocks); the graph is
// built in the background once a knowledge base passes the crossover size, and vectors not in it
// yet are searched exactly beside it.
//
// In the engine the graph is built off the main thread (engine/vector/graph-builder.ts): pending
// vectors go to a worker in jobs (`takeJob`), the worker inserts them into its own copy of the graph
// and saves it to a file, and the index then serves a read-only view of that file (`adopt`). Until
// a job is adopted its vectors stay pending, so they are searched exactly meanwhile; removals while
// the worker holds the graph are forwarded to it with the next job (a view cannot remove, and
// searches skip documents that are not alive anyway).
import { copyFileSync, linkSync, openSync, readSync, closeSync, rmSync } from 'node:fs';
import { createPrivateFile, linkOrCopy, removeInBackground } from '../fsync';
import type { Index } from 'usearch';
import { TopK, type Scored } from '../topk';
import { DocSet } from '../filter/doc-set';
import { DuplicateGroups, i8Of, quantizedHash, type DuplicateGroupsDump } from './duplicate-groups';
import { insertIntoGraph, newGraph, releaseGraph, type GraphShape } from './graph-insert';
import type { GraphQuery, GraphSearcher } from './graph-searcher';
import { FileRows, MemoryRows, type RowStore } from './row-store';

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
  /** The file holding the stored vectors (created empty, 0600); absent: they are kept in memory. */
  file?: string;
}

// Exact search of 1,000 vectors takes ~0.8 ms (512-d, bench/semantic.ts); above that HNSW is faster
// at recall@10 ≥ 0.99.
export const DEFAULT_EXACT_THRESHOLD = 1000;

/**
 * How graph searches pick candidates (a bench may sweep these). USearch searches with a beam of
 * max(expansionSearch, wanted), so asking for more results widens the search: `beamGrowth` per
 * doubling of the vector count above 1,000 is added to the configured expansion. Of the results
 * (ordered by the graph's i8 distance) the first max(rescorePerK × k, rescoreMin) are re-scored
 * exactly on the stored vectors.
 *
 * Measured on vectors like bench/scale.ts's (SciFact abstracts replicated, hashing stub with
 * noise; 100 queries), recall@10 against exact search:
 *   100k vectors (~20 copies of each abstract): beam 256 0.914; growth 32 0.975, 64 0.986, 96
 *   0.992, 128 0.997 — the same whether 40 or all of the results are re-scored;
 *   300k (~58 copies): beam 256 0.784; growth 64 (beam 781) 0.946, 128 (beam 1,306) 0.989, 256
 *   (beam 2,356) 0.996.
 * The misses are whole: a narrow beam ends in the wrong cluster of near-duplicates and returns
 * none of the true top 10, so it is the beam that matters, not how many candidates are re-scored;
 * the beam such data needs grows with the copies per cluster. At 1M (~170 copies; the graph alone,
 * every beam result re-scored) connectivity decides as much as the beam: 16 gave 0.792 / 0.878 /
 * 0.941 at beams 1,024 / 1,532 / 2,048, 32 gave 0.905 / 0.948 / 0.966 (HNSW_CONNECTIVITY's default).
 * For k = 100 (hybrid's semantic leg),
 * 2k re-scored kept recall@100 (0.9890 against 0.9891 at 4k, 0.9105 at 1k; 30k vectors).
 */
export const graphSearch = { beamGrowth: 128, rescorePerK: 2, rescoreMin: 40 };

/** The beam asked of the graph and how many of its results are re-scored, for k results among `live` vectors. */
export function candidatesFor(k: number, live: number, expansionSearch: number): { beam: number; rescore: number } {
  const grow = live > 1000 ? Math.round(Math.log2(live / 1000) * graphSearch.beamGrowth) : 0;
  const beam = Math.min(live, Math.max(k, expansionSearch + grow));
  return { beam, rescore: Math.min(beam, Math.max(k, graphSearch.rescorePerK * k, graphSearch.rescoreMin)) };
}

/**
 * A filtered search scores its allowed documents exactly when they are fewer than this many times
 * the graph's beam. bench/engine-modes.ts (384-d f32, 2 cores): an exact cosine of a scattered row
 * cost ~0.35 µs, the graph ~1.7–1.9 µs per beam entry (100k: beam 1,106, ~2.1 ms a search; 300k:
 * beam 1,309, ~2.3 ms): exact is cheaper up to ~5 × the beam, and exact.
 */
const EXACT_PER_BEAM = 4;

/** Rows read at once by exact scans (≤ 1 MiB). */
const BLOCK_BYTES = 1 << 20;
/** Sorted documents closer than this many rows are read in one block with the rows between. */
const GAP_ROWS = 16;

type Store = Float32Array | Int8Array;

/** Vectors handed to the off-thread builder: insert `docs` (rows of `vectors`) after removing `removes`. */
export interface GraphJob {
  /** Build generation: a reset of the graph (or a build on this thread) makes older jobs void. */
  gen: number;
  seq: number;
  /** The graph file to start from when the builder holds no copy of this generation (none: empty). */
  base: string | undefined;
  removes: Uint32Array;
  docs: Uint32Array;
  /** Row i is the vector of docs[i] (f32; USearch quantizes to i8 itself). */
  vectors: Float32Array;
}

/**
 * Members of one duplicate group re-scored when its key is a candidate: all of them in practice (a
 * group of 1,000 costs ~0.3 ms at 384-d), so ties resolve as in an exact search.
 */
const GROUP_VISIT = 1024;

/** Removals are sent on their own (without vectors to add) once this many, or 1/64 of the graph, are waiting. */
const REMOVALS_ALONE = 1024;

/** The block exact scans read rows into: one per thread (reads never nest), made on first use. */
let scratch: { bytes: Uint8Array; f32: Float32Array; i8: Int8Array } | undefined;
function readBlock() {
  if (!scratch) {
    const buffer = new ArrayBuffer(BLOCK_BYTES);
    scratch = { bytes: new Uint8Array(buffer), f32: new Float32Array(buffer), i8: new Int8Array(buffer) };
  }
  return scratch;
}

/** Bytes of one vector inside a saved USearch index: the file starts with its vector matrix (rows u32, bytes per row u32). */
function savedRowBytes(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const head = new Uint8Array(8);
    if (readSync(fd, head, 0, 8, 0) < 8) return -1;
    return new DataView(head.buffer).getUint32(4, true);
  } finally {
    closeSync(fd);
  }
}

/** Numbers the graph searcher's thread knows each index's view by. */
let nextSearchKey = 1;

export class VectorIndex {
  readonly dimensions: number;
  private readonly searchKey = nextSearchKey++;
  readonly quantization: Quantization;
  private rows: RowStore;
  /** Bytes of a stored vector. */
  readonly rowBytes: number;
  private alive: Uint8Array;
  private live = 0;
  /** One past the highest document ever stored. */
  private end = 0;
  private hnsw: Index | undefined;
  /** Docs stored but not yet in the HNSW graph (the background build works through them): keys only. */
  private pending: number[] = [];
  /** Documents whose vectors the graph sees as one: a single key each (engine/vector/duplicate-groups.ts). */
  private readonly groups = new DuplicateGroups();
  /** A row read back to confirm a duplicate, and the same bytes as stored values. */
  private readonly probe: Uint8Array;
  private readonly probeValues: Store;
  private readonly exactThreshold: number;
  /** Rows per read block. */
  private readonly blockRows: number;
  /** The stored vectors' file (graph files of off-thread builds are named after it). */
  private rowsPath: string | undefined;
  // Off-thread building: the first `sent` pending docs are with the builder, in `jobs` (sizes in
  // pending entries, oldest first); `viewPath` is the file the served graph is a view of, `basePath`
  // the file the builder starts from when it holds no copy.
  private offThread = false;
  private gen = 0;
  private jobSeq = 0;
  private sent = 0;
  private jobs: { seq: number; entries: number }[] = [];
  private removals: number[] = [];
  private viewPath: string | undefined;
  private basePath: string | undefined;
  /** Graph files this process named (one count for every index: a file removed in the background never shares a later index's name). */
  private static fileSeq = 0;
  /** Rows the vector file held when it was taken over (-1: none, or adopting is over; see useFile). */
  private adoptable = -1;

  constructor(private readonly options: VectorIndexOptions) {
    this.dimensions = options.dimensions;
    this.quantization = options.quantization;
    this.exactThreshold = options.exactThreshold ?? DEFAULT_EXACT_THRESHOLD;
    this.rowBytes = this.dimensions * (this.quantization === 'i8' ? 1 : 4);
    this.rows = options.file ? new FileRows(options.file, this.rowBytes) : new MemoryRows(this.rowBytes);
    this.rowsPath = options.file;
    this.alive = new Uint8Array(1024);
    this.probe = new Uint8Array(this.rowBytes);
    this.probeValues = this.quantization === 'i8' ? new Int8Array(this.probe.buffer) : new Float32Array(this.probe.buffer);
    this.blockRows = Math.max(1, Math.floor(BLOCK_BYTES / this.rowBytes));
    if (this.rowBytes > BLOCK_BYTES) throw new Error(`${this.dimensions} dimensions: a row does not fit a read block`);
  }

  /**
   * Keep the stored vectors in `path` from now on (only before any vector was added).
   * `existingRows`: the file already holds that many rows (a snapshot's vector file linked there):
   * the documents replayed from then on are taken as stored (`adoptStored`) until `finishAdopting`.
   */
  useFile(path: string, existingRows?: number): void {
    if (this.end > 0) throw new Error('the vector store can only move to a file while empty');
    this.rows.close();
    this.rows = new FileRows(path, this.rowBytes, existingRows);
    this.rowsPath = path;
    this.adoptable = existingRows ?? -1;
  }

  /**
   * The stored vectors' file with every row written, and its length: what a snapshot links (rows
   * below the length are never written again). Undefined for vectors kept in memory.
   */
  writtenFile(): { path: string; bytes: number } | undefined {
    if (!(this.rows instanceof FileRows) || this.rowsPath === undefined) return undefined;
    return { path: this.rowsPath, bytes: this.rows.written() };
  }

  /** The duplicate groups as flat arrays (copies). */
  groupsDump(): DuplicateGroupsDump {
    return this.groups.dump();
  }

  /** Whether documents are being taken from a file that already holds their rows. */
  get adopting(): boolean {
    return this.adoptable >= 0;
  }

  /**
   * Documents [first, first + count) have their rows in the file already: alive, without reading
   * them. Their duplicate groups (and any graph) come at `finishAdopting`.
   */
  adoptStored(first: number, count: number): void {
    if (first + count > this.adoptable) throw new Error(`documents up to ${first + count} lie past the ${this.adoptable} rows of the vector file`);
    this.ensureCapacity(first + count - 1);
    for (let doc = first; doc < first + count; doc++) {
      if (this.alive[doc]) throw new Error(`document ${doc} is stored twice`);
      this.alive[doc] = 1;
    }
    this.live += count;
    this.end = Math.max(this.end, first + count);
  }

  /**
   * The adopted documents still alive join their duplicate groups: those dumped with the state they
   * were adopted to (`dumped`, the groups of exactly these documents), or else joined again in
   * order, reading their rows in blocks. A large index starts its graph.
   */
  finishAdopting(dumped?: DuplicateGroupsDump): void {
    if (!this.adopting) return;
    this.adoptable = -1;
    if (dumped && dumped.next.length >= this.end) this.groups.load(dumped);
    else
      this.visitAll(undefined, (doc, values, o) => {
        const stored = values.subarray(o, o + this.dimensions) as Store;
        this.groups.join(doc, this.hashOf(stored), (other) => this.alive[other] === 1 && this.sameInGraph(stored, other));
      });
    if (!this.hnsw && this.live >= this.exactThreshold && this.options.autoGraph !== false) this.startGraph();
  }

  /** Drop everything: the graph, and the stored vectors (their file is removed). */
  close(): void {
    this.resetBuild();
    this.rows.close();
    this.hnsw = undefined;
    this.pending = [];
    this.alive = new Uint8Array(0);
    this.live = 0;
    this.groups.clear();
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

  /** Keys the graph holds, or 0 without one (a vector exactly like one there joins its group, never the graph). */
  get graphKeys(): number {
    return this.hnsw ? Number(this.hnsw.size()) : 0;
  }

  has(doc: number): boolean {
    return doc < this.alive.length && this.alive[doc] === 1;
  }

  private ensureCapacity(doc: number): void {
    if (doc < this.alive.length) return;
    let cap = Math.max(1024, this.alive.length);
    while (cap <= doc) cap *= 2;
    const alive = new Uint8Array(cap);
    alive.set(this.alive);
    this.alive = alive;
  }

  /** The stored form of a unit vector: as is (f32) or scaled to −127..127 (i8). */
  quantize(vector: Float32Array): Store {
    if (this.quantization === 'f32') return vector;
    const out = new Int8Array(vector.length);
    for (let i = 0; i < vector.length; i++) out[i] = i8Of(vector[i]!, 127);
    return out;
  }

  /** Add a stored-form vector (from `quantize`, or read back from the log); the index keeps a reference until it is written. */
  add(doc: number, stored: Store): void {
    if (this.adopting) throw new Error('vectors are being taken from a file: they are adopted, not added');
    if (stored.length !== this.dimensions) throw new Error(`vector has ${stored.length} dimensions, expected ${this.dimensions}`);
    if ((this.quantization === 'i8') !== stored instanceof Int8Array) throw new Error(`expected a ${this.quantization} vector`);
    this.ensureCapacity(doc);
    if (this.alive[doc]) this.remove(doc);
    this.rows.write(doc, new Uint8Array(stored.buffer, stored.byteOffset, stored.byteLength));
    this.end = Math.max(this.end, doc + 1);
    this.alive[doc] = 1;
    this.live++;
    const key = this.groups.join(doc, this.hashOf(stored), (other) => this.alive[other] === 1 && this.sameInGraph(stored, other));
    if (this.hnsw) {
      if (key) this.pending.push(doc);
    } else if (this.live >= this.exactThreshold && this.options.autoGraph !== false) this.startGraph();
  }

  remove(doc: number): boolean {
    if (!this.has(doc)) return false;
    this.alive[doc] = 0;
    this.live--;
    // Not in a group yet (finishAdopting joins those still alive).
    if (this.adopting) return true;
    // A member of its group takes its place as the graph's key.
    const promoted = this.groups.leave(doc);
    if (promoted !== undefined && this.hnsw) this.pending.push(promoted);
    // A view cannot remove: the key stays until the builder's next graph (searches skip it).
    if (!this.viewPath && this.hnsw?.contains(BigInt(doc))) this.hnsw.remove(BigInt(doc));
    if (this.offThread) this.removals.push(doc);
    return true;
  }

  /** Live document numbers, ascending. */
  aliveDocs(): number[] {
    const out: number[] = [];
    for (let d = 0; d < this.end; d++) if (this.alive[d]) out.push(d);
    return out;
  }

  /** The group hash of a stored vector: its i8 form as the graph holds it. */
  private hashOf(stored: Store): number {
    return quantizedHash(stored, this.quantization === 'i8' ? 1 : 127);
  }

  /** Whether `other`'s stored vector has the same i8 form as `stored` (the graph could not tell them apart). */
  private sameInGraph(stored: Store, other: number): boolean {
    this.rows.read(other, 1, this.probe);
    const scale = this.quantization === 'i8' ? 1 : 127;
    for (let i = 0; i < this.dimensions; i++) if (i8Of(stored[i]!, scale) !== i8Of(this.probeValues[i]!, scale)) return false;
    return true;
  }

  /** Live documents that are graph keys (one of each duplicate group, or more after a reload), ascending. */
  private keyDocs(): number[] {
    const out: number[] = [];
    for (let d = 0; d < this.end; d++) if (this.alive[d] && this.groups.isKey(d)) out.push(d);
    return out;
  }

  /** Whether the knowledge base is large enough to keep an HNSW graph. */
  get wantsGraph(): boolean {
    return this.live >= this.exactThreshold;
  }

  /** Start a graph holding nothing yet: every stored vector becomes pending. */
  startGraph(): void {
    this.resetBuild();
    this.hnsw = this.newGraph();
    this.pending = this.keyDocs();
  }

  /**
   * Use a graph saved by `saveGraph` whose keys are `graphDocs`: keys no longer alive are removed,
   * stored vectors missing from it become pending. A graph of another scalar kind (f32 graphs were
   * saved before vectors were quantized in memory) is not used: a new one is built.
   * `view` (an index with a vector file, as the engine keeps them): the file is hard-linked beside
   * the vectors and served as a view, as a graph the builder saved is (`adopt`), instead of read
   * into memory (0.9 s at 1M vectors); dead keys go to the builder with its first job.
   */
  attachGraph(path: string, graphDocs: Iterable<number>, options: { view?: boolean } = {}): void {
    if (savedRowBytes(path) !== this.dimensions) {
      this.startGraph();
      return;
    }
    this.resetBuild();
    const graph = this.newGraph();
    const view = options.view === true && this.rowsPath !== undefined ? this.graphFile() : undefined;
    if (view) {
      linkOrCopy(path, view);
      graph.view(view);
      this.offThread = true;
      this.viewPath = view;
      this.basePath = view;
    } else graph.load(path);
    // Plain loops and a flag per document: at a million keys, iterators and a Set cost seconds.
    const inGraph = new Uint8Array(this.end);
    const listed = Array.isArray(graphDocs) ? (graphDocs as number[]) : [...graphDocs];
    const keys = new BigUint64Array(listed.length);
    for (let i = 0; i < listed.length; i++) keys[i] = BigInt(listed[i]!);
    // The list may name documents the file lacks (a snapshot's graph built without its list:
    // every live document, but members of duplicate groups are not keys): asked of the graph.
    const present = listed.length > 0 ? (graph.contains(keys) as boolean[]) : [];
    for (let i = 0; i < listed.length; i++) {
      const d = listed[i]!;
      if (!present[i]) continue;
      if (this.alive[d]) {
        inGraph[d] = 1;
        // Groups formed again as vectors were reloaded may name another key: both serve.
        this.groups.markKey(d);
      } else if (view) this.removals.push(d);
      else graph.remove(BigInt(d));
    }
    this.hnsw = graph;
    this.pending = this.keyDocs().filter((d) => inGraph[d] !== 1);
  }

  /** True when there is a graph (complete or still catching up). */
  get hasGraph(): boolean {
    return this.hnsw !== undefined;
  }

  /** Whether the graph served is a view of a file the builder wrote (saving it is a link). */
  get servesView(): boolean {
    return this.viewPath !== undefined;
  }

  /** Document numbers in the graph: the live keys not waiting to be added. */
  graphDocs(): number[] {
    const pending = new Set(this.pending);
    return this.keyDocs().filter((d) => !pending.has(d));
  }

  /** Write the graph to `path` (its keys are document numbers). */
  saveGraph(path: string): void {
    if (!this.hnsw) throw new Error('no graph to save');
    if (this.viewPath) {
      // A served view is a file nobody writes again: a link to it is the saved graph, at no cost
      // to this thread (saving it again took ~0.75 us a vector); a copy on another filesystem.
      rmSync(path, { force: true });
      try {
        linkSync(this.viewPath, path);
      } catch {
        copyFileSync(this.viewPath, path);
      }
      return;
    }
    createPrivateFile(path);
    this.hnsw.save(path);
  }

  /** The graph keeps i8 copies: a quarter of f32. */
  private newGraph(): Index {
    return newGraph(this.graphShape);
  }

  /**
   * Move pending vectors into the HNSW graph for about `budgetMs`, in batches (USearch adds a
   * batch on `threads` threads, 0 = every core). Returns true when nothing is left to do.
   */
  buildStep(budgetMs: number, batch = 64, threads = 0): boolean {
    if (!this.hnsw || this.pending.length === 0) return true;
    // Built here from now on: the builder's jobs are void and the graph must be writable.
    this.detach();
    const started = performance.now();
    while (this.pending.length > 0 && performance.now() - started < budgetMs) {
      const docs = this.pending
        .splice(0, batch)
        .filter((d) => this.alive[d])
        .sort((a, b) => a - b);
      if (docs.length === 0) continue;
      // A document stored again (or in a graph the builder made) may still have its old key.
      insertIntoGraph(
        this.hnsw,
        BigUint64Array.from(docs, (d) => BigInt(d)),
        this.rowsOf(docs),
        threads,
      );
    }
    return this.pending.length === 0;
  }

  /** The stored rows of `docs` (ascending, stored) as one f32 matrix. */
  private rowsOf(docs: readonly number[]): Float32Array {
    const matrix = new Float32Array(docs.length * this.dimensions);
    let i = 0;
    this.visitDocs(docs, (_d, values, o) => {
      for (let j = 0; j < this.dimensions; j++) matrix[i * this.dimensions + j] = values[o + j]!;
      i++;
    });
    return matrix;
  }

  // --- off-thread building (engine/vector/graph-builder.ts) ------------------------------------------

  /** Whether a worker can build this graph: there is one, and a directory for its files. */
  get canBuildOffThread(): boolean {
    return this.hnsw !== undefined && this.rowsPath !== undefined;
  }

  /** Pending vectors not yet handed to the builder. */
  get unsent(): number {
    return this.pending.length - this.sent;
  }

  /** Removals waiting for the next job. */
  get removalsWaiting(): number {
    return this.removals.length;
  }

  /** The graph's parameters (for the builder's copy). */
  get graphShape(): GraphShape {
    const { dimensions, connectivity, expansionAdd, expansionSearch } = this.options;
    return { dimensions, connectivity, expansionAdd, expansionSearch };
  }

  /** A graph file of this index, beside its stored vectors. */
  private graphFile(): string {
    return `${this.rowsPath}.graph-${this.gen}-${++VectorIndex.fileSeq}`;
  }

  /** A new graph file name for the builder to save into. */
  nextGraphFile(): string {
    return this.graphFile();
  }

  /** The current build generation (jobs and saved graphs of another one are void). */
  get buildGeneration(): number {
    return this.gen;
  }

  /**
   * Hand up to `max` pending vectors (and the removals since the last job) to the builder; undefined
   * when there is nothing worth sending. The vectors stay pending until a graph holding them is adopted.
   */
  takeJob(max: number): GraphJob | undefined {
    if (!this.canBuildOffThread) return undefined;
    if (!this.offThread) {
      this.offThread = true;
      this.gen++;
      // A graph built here (or loaded from a snapshot) is where the builder starts.
      if (Number(this.hnsw!.size()) > 0) {
        this.basePath = this.graphFile();
        createPrivateFile(this.basePath);
        this.hnsw!.save(this.basePath);
      }
    }
    const entries = Math.min(max, this.unsent);
    const removalsAlone = this.removals.length >= Math.max(REMOVALS_ALONE, Number(this.hnsw!.size()) / 64);
    if (entries === 0 && !removalsAlone) return undefined;
    // The latest row of each document still alive (a document stored twice is sent once).
    const docs = [...new Set(this.pending.slice(this.sent, this.sent + entries))].filter((d) => this.alive[d]).sort((a, b) => a - b);
    this.sent += entries;
    const seq = ++this.jobSeq;
    this.jobs.push({ seq, entries });
    const removes = Uint32Array.from(this.removals);
    this.removals = [];
    return { gen: this.gen, seq, base: this.basePath, removes, docs: Uint32Array.from(docs), vectors: this.rowsOf(docs) };
  }

  /**
   * Serve the graph the builder saved at `path`, holding every job of generation `gen` up to
   * `throughSeq`: their vectors stop being pending. False (the file is not used) when the
   * generation is over; the caller removes the file.
   */
  adopt(gen: number, throughSeq: number, path: string): boolean {
    if (gen !== this.gen || !this.offThread || !this.hnsw) return false;
    const graph = this.newGraph();
    graph.view(path);
    let entries = 0;
    while (this.jobs.length > 0 && this.jobs[0]!.seq <= throughSeq) entries += this.jobs.shift()!.entries;
    this.pending.splice(0, entries);
    this.sent -= entries;
    // The builder hands over a graph every few seconds while vectors arrive: the old files go off
    // the request thread (their unlinks were 3.6 s of its profile samples in a 100k-chunk load).
    this.releaseGraph(this.hnsw, removeInBackground);
    this.hnsw = graph;
    this.viewPath = path;
    this.basePath = path;
    return true;
  }

  /** Stop building off-thread (generation over); a view is loaded into a writable graph. */
  private detach(): void {
    if (!this.offThread) return;
    const view = this.viewPath;
    const graph = view ? this.newGraph() : undefined;
    if (graph) graph.load(view!);
    this.resetBuild();
    if (graph) this.hnsw = graph;
  }

  /** End any off-thread build: its jobs are void, its files removed; a served view is dropped. */
  private resetBuild(): void {
    if (this.viewPath) {
      this.releaseGraph(this.hnsw);
      this.hnsw = undefined;
    }
    if (this.basePath) rmSync(this.basePath, { force: true });
    this.offThread = false;
    this.gen++;
    this.sent = 0;
    this.jobs = [];
    this.removals = [];
    this.viewPath = undefined;
    this.basePath = undefined;
  }

  /** Free a graph no longer served now (graph-insert.ts releaseGraph); its file and the builder's base go too. */
  private releaseGraph(old: Index | undefined, remove = (path: string) => rmSync(path, { force: true })): void {
    if (old) releaseGraph(old, this.graphShape, `${this.rowsPath}.graph-empty`);
    if (this.viewPath) remove(this.viewPath);
    if (this.basePath && this.basePath !== this.viewPath) remove(this.basePath);
    this.basePath = undefined;
  }

  // --- reading stored rows -------------------------------------------------------------------------

  /**
   * Call `visit(doc, values, offset)` for each of `docs` (ascending, stored) with its stored row at
   * `values[offset…offset + dimensions)`; nearby rows are read together in blocks.
   */
  private visitDocs(docs: ArrayLike<number>, visit: (doc: number, values: Store, offset: number) => void): void {
    const n = docs.length;
    let i = 0;
    while (i < n) {
      const first = docs[i]!;
      let j = i;
      while (j + 1 < n && docs[j + 1]! - first < this.blockRows && docs[j + 1]! - docs[j]! <= GAP_ROWS) j++;
      const block = readBlock();
      const values = this.quantization === 'i8' ? block.i8 : block.f32;
      this.rows.read(first, docs[j]! - first + 1, block.bytes);
      for (; i <= j; i++) visit(docs[i]!, values, (docs[i]! - first) * this.dimensions);
    }
  }

  /** Every live (and allowed: a bitset) document's row, in blocks. */
  private visitAll(allowed: Uint32Array | undefined, visit: (doc: number, values: Store, offset: number) => void): void {
    const ok = (d: number) => this.alive[d] === 1 && (allowed === undefined || (((allowed[d >>> 5] ?? 0) >>> (d & 31)) & 1) === 1);
    for (let first = 0; first < this.end; first += this.blockRows) {
      const count = Math.min(this.blockRows, this.end - first);
      let any = false;
      for (let d = first; d < first + count && !any; d++) any = ok(d);
      if (!any) continue;
      const block = readBlock();
      const values = this.quantization === 'i8' ? block.i8 : block.f32;
      this.rows.read(first, count, block.bytes);
      for (let d = first; d < first + count; d++) if (ok(d)) visit(d, values, (d - first) * this.dimensions);
    }
  }

  /** Exact cosine of a unit query against a stored vector at `values[o…]`. */
  private cosine(query: Float32Array, values: Store, o: number): number {
    let dot = 0;
    let norm = 0;
    for (let i = 0; i < this.dimensions; i++) {
      const v = values[o + i]!;
      dot += query[i]! * v;
      norm += v * v;
    }
    return norm === 0 ? 0 : dot / Math.sqrt(norm);
  }

  /** Exact cosines of `docs` (any order; 0 for a document without a vector). */
  scoreDocs(query: Float32Array, docs: readonly number[]): number[] {
    const out = new Array<number>(docs.length).fill(0);
    const order = docs
      .map((d, i) => i)
      .filter((i) => this.has(docs[i]!))
      .sort((a, b) => docs[a]! - docs[b]!);
    const sorted = order.map((i) => docs[i]!);
    let at = 0;
    this.visitDocs(sorted, (_d, values, o) => {
      out[order[at++]!] = this.cosine(query, values, o);
    });
    return out;
  }

  /**
   * The k most similar documents by cosine. `allowed` (the documents a filter allows) restricts the
   * search before ranking: a filter allowing few is scored exactly up front (filteredExactly), one
   * allowing many searches the graph with it as a predicate (and is scored exactly should the graph
   * yield too few). A mask (1 = allowed) says nothing of its size here: the graph is tried first.
   */
  search(query: Float32Array, k: number, allowed?: DocSet | Uint8Array, started?: GraphQuery): Scored[] {
    if (k <= 0 || this.live === 0) return [];
    const filter = allowed instanceof Uint8Array ? DocSet.ofMask(allowed) : allowed;
    if (!this.searchesGraph(k, allowed)) return this.exact(query, k, filter);
    return this.approximate(query, k, filter, started) ?? this.exact(query, k, filter);
  }

  /** Whether search(…, k, allowed) tries the graph (not: exact search). */
  private searchesGraph(k: number, allowed?: DocSet | Uint8Array): boolean {
    if (!this.hnsw || this.live < this.exactThreshold) return false;
    return !(allowed instanceof DocSet && this.filteredExactly(k, allowed.size));
  }

  /**
   * Post the graph search that search(query, k, allowed) will begin with to `searcher`'s thread,
   * so that the caller can do other work meanwhile; pass what this returns to that search, with
   * nothing in between that changes the index. Undefined when that search will not read a graph
   * file (exact, or a graph built on this thread), the graph is too small to gain, or the searcher
   * cannot take it.
   */
  startGraphSearch(searcher: GraphSearcher, query: Float32Array, k: number, allowed?: DocSet | Uint8Array): GraphQuery | undefined {
    if (k <= 0 || this.viewPath === undefined || this.live < searcher.minVectors || !this.searchesGraph(k, allowed)) return undefined;
    const beam = this.firstBeam(k);
    return beam > 0 ? searcher.start(this.searchKey, this.viewPath, this.graphShape, query, beam) : undefined;
  }

  /** The beam of a graph search's first try for k results. */
  private firstBeam(k: number): number {
    return Math.min(Number(this.hnsw!.size()), candidatesFor(k, this.live, this.options.expansionSearch).beam);
  }

  /**
   * Whether a search for k among `allowed` documents scores them exactly rather than trying the
   * graph: they are fewer than the exact threshold, or fewer than k of the graph's first beam are
   * expected among them (the graph would give up and score them exactly anyway), or scoring them
   * costs less than the beam (EXACT_PER_BEAM).
   */
  filteredExactly(k: number, allowed: number): boolean {
    if (allowed < this.exactThreshold) return true;
    const { beam } = candidatesFor(k, this.live, this.options.expansionSearch);
    return allowed * beam < k * this.live || allowed < EXACT_PER_BEAM * beam;
  }

  /** Exact search: every live (allowed) stored vector scored. */
  exact(query: Float32Array, k: number, allowed?: DocSet | Uint8Array): Scored[] {
    const filter = allowed instanceof Uint8Array ? DocSet.ofMask(allowed) : allowed;
    const top = new TopK(Math.min(k, this.live));
    const push = (d: number, values: Store, o: number) => top.push(d, this.cosine(query, values, o));
    // A few documents are read where they lie; many, block by block past the others.
    if (filter && (filter.isList || filter.size * 4 < this.live))
      this.visitDocs(
        filter.list().filter((d) => this.has(d)),
        push,
      );
    else this.visitAll(filter?.bits(), push);
    return top.sorted();
  }

  /**
   * Graph candidates with the members of their duplicate groups (and the vectors not in the graph
   * yet, all of them), re-scored exactly; undefined when a filter leaves too few of them.
   */
  private approximate(query: Float32Array, k: number, allowed?: DocSet, started?: GraphQuery): Scored[] | undefined {
    const inGraph = Number(this.hnsw!.size());
    const { rescore } = candidatesFor(k, this.live, this.options.expansionSearch);
    let beam = this.firstBeam(k);
    // The first try's keys, when the searcher's thread found them already.
    let early = started?.beam === beam && started.path === this.viewPath ? started.keys() : undefined;
    // Tested as a bitset (a list's made once, kept with it): groups visit many members.
    const bits = allowed?.bits();
    for (;;) {
      const picked: number[] = [];
      const take = (d: number) => {
        if (bits === undefined || (((bits[d >>> 5] ?? 0) >>> (d & 31)) & 1) === 1) picked.push(d);
      };
      const group = Math.max(k, GROUP_VISIT);
      if (beam > 0) {
        let keys = 0;
        const results = early ?? (this.hnsw!.search(query, beam, 0).keys as BigUint64Array);
        early = undefined;
        for (const key of results) {
          const d = Number(key);
          if (!this.alive[d]) continue;
          // Every member of a group (up to GROUP_VISIT): they score alike, and ties go to the lowest
          // documents, as in an exact search, whichever member is the key.
          const before = picked.length;
          this.groups.visit(d, group, take);
          if (picked.length > before && (++keys === rescore || picked.length >= Math.max(rescore, GROUP_VISIT))) break;
        }
      }
      const found = picked.length;
      for (const d of this.pending) if (this.alive[d]) this.groups.visit(d, group, take);
      if (found >= k || beam >= inGraph) {
        const unique = [...new Set(picked)].sort((a, b) => a - b);
        const top = new TopK(k);
        this.visitDocs(unique, (d, values, o) => top.push(d, this.cosine(query, values, o)));
        return top.sorted();
      }
      // A filter that rejects most neighbours: scoring the allowed set exactly is cheaper.
      if (allowed && beam >= 8 * Math.max(k, 32)) return undefined;
      beam = Math.min(inGraph, beam * 4);
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

  /**
   * Bytes in RAM by part. rows: what the row store holds in memory (all stored vectors without a
   * file; with one, only rows not yet written), the alive flags, the read block and the pending
   * list (the 1 MiB read block is shared by every index); graph: USearch's i8 copy of each vector plus its links (an estimate: level-0 links of
   * 2 × connectivity 4-byte slots, a node header and key, upper levels and the key lookup: 565 B
   * at 384-d and connectivity 16, where the RSS of a whole index measured 764–820 B per vector at
   * 100k–300k vectors, allocator slack included).
   * disk: the stored vectors' file (page cache, not RSS).
   */
  memoryByPart(): { rows: number; graph: number; disk: number } {
    const m = this.options.connectivity;
    const perNode = this.dimensions + 2 * m * 4 + 16 + Math.ceil((m * 4 + 8) / Math.max(1, m - 1)) + 32;
    return {
      rows: this.rows.memoryBytes() + this.alive.byteLength + this.pending.length * 8 + this.groups.memoryBytes(),
      graph: this.hnsw ? Number(this.hnsw.size()) * perNode : 0,
      disk: this.rows.diskBytes(),
    };
  }
}
