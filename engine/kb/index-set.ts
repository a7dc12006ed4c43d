// The indexes of one configuration of a knowledge base: its chunks under dense document numbers,
// BM25 postings, vectors and the metadata index over them. A knowledge base searches with its
// active set; while it is re-embedded for another configuration (a new model), a second set is
// built beside it from the same content items and takes over in one step once complete.
import { InvertedIndex, type InvertedIndexDump } from '../bm25/inverted-index';
import { DocSet } from '../filter/doc-set';
import type { EvaluateOptions } from '../filter/expression';
import { MetadataIndex, type MetadataFilter } from '../filter/metadata';
import type { ContentStatus, IndexedChunk, KnowledgeBaseConfig } from '../records';
import type { Scored } from '../topk';
import type { GraphQuery, GraphSearcher } from '../vector/graph-searcher';
import { VectorIndex } from '../vector/vector-index';
import type { DuplicateGroupsDump } from '../vector/duplicate-groups';
import { ChunkTable, type ChunkTableDump } from './chunk-table';
import type { ChunkHit, ContentItem, ContentVersion } from './knowledge-base';
import { ItemVersion } from './version';

export type StoredVector = Float32Array | Int8Array;

/** The documents a filter allows: a sorted list when few, a bitset when many (engine/filter/doc-set.ts). */
export type AllowedDocs = DocSet;

/** The version of an item whose chunks answer in a set, with their document numbers. */
export interface LiveChunks {
  version: ContentVersion;
  docs: number[];
  /** The first document; the others follow it. */
  readonly first: number;
  readonly count: number;
}

/**
 * LiveChunks as the chunk table keeps them: one per item, shared by its documents, which are
 * consecutive (`docs` is made on demand from the first and the count, not held).
 */
class ItemChunks implements LiveChunks {
  constructor(
    readonly content: ContentItem,
    readonly version: ContentVersion,
    readonly first: number,
    public count: number,
  ) {}

  get docs(): number[] {
    const out = new Array<number>(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.first + i;
    return out;
  }
}

/** What a snapshot keeps of a set's indexes, loaded instead of re-adding every chunk (IndexSet.loadDump). */
export interface IndexSetDump {
  bm25: InvertedIndexDump;
  chunks: ChunkTableDump;
  /** The vectors' duplicate groups (absent in dumps written before them, and without embeddings). */
  groups?: DuplicateGroupsDump;
}

/** Where indexing an item's version ended in a set being built (its status lives on the item in the active set). */
export interface BuildOutcome {
  version: number;
  status: Extract<ContentStatus, 'ready' | 'failed'>;
  error?: string;
}

export class IndexSet {
  private readonly chunks = new ChunkTable<ItemChunks>();
  readonly bm25: InvertedIndex;
  readonly metadataIndex = new MetadataIndex();
  /** Undefined for a configuration without embeddings. */
  readonly vectors: VectorIndex | undefined;
  /** Per item: the version whose chunks answer here. */
  readonly live = new Map<string, LiveChunks>();
  /** A set being built: where each item's indexing ended (the active set keeps this on the items). */
  readonly outcomes = new Map<string, BuildOutcome>();
  private liveChunks = 0;
  /** A bit per document answering now (a chunk of an item's live version): what filters keep within. */
  private liveWords = new Uint32Array(32);
  /**
   * While records replay before a dump of this set is loaded (beginRestore): the document space so
   * far; chunks then only mark their items live (and store their vectors and metadata), the chunk
   * table and BM25 come from the dump. -1 otherwise.
   */
  private restoringDocs = -1;
  /** While restoring: the documents the dump to come hands out (Infinity when not told). */
  private restoreDocs = Number.POSITIVE_INFINITY;

  /** `exactThreshold`: below this many vectors searches are exact and no HNSW graph is kept. */
  constructor(
    readonly config: KnowledgeBaseConfig,
    exactThreshold?: number,
  ) {
    this.bm25 = new InvertedIndex(config.bm25);
    const { embedding, hnsw } = config;
    if (embedding.dimensions > 0) {
      this.vectors = new VectorIndex({
        dimensions: embedding.dimensions,
        quantization: embedding.quantization === 'i8' ? 'i8' : 'f32',
        connectivity: hnsw.connectivity,
        expansionAdd: hnsw.expansionAdd,
        expansionSearch: hnsw.expansionSearch,
        exactThreshold,
      });
    }
  }

  get chunkCount(): number {
    return this.liveChunks;
  }

  /** Document numbers handed out so far (upper bound for masks). */
  get docSpace(): number {
    return this.restoringDocs >= 0 ? this.restoringDocs : this.chunks.length;
  }

  /**
   * Replay from here on only marks items live: loadDump supplies the chunk table and BM25, whose
   * dump hands out `docs` documents.
   */
  beginRestore(docs = Number.POSITIVE_INFINITY): void {
    if (this.chunks.length > 0 || this.liveChunks > 0) throw new Error('only an empty index set can wait for a dump');
    this.restoringDocs = 0;
    this.restoreDocs = docs;
  }

  /** While restoring: the documents the dump to come hands out; live chunks lie below. */
  get restoreSpace(): number {
    return this.restoreDocs;
  }

  get restoring(): boolean {
    return this.restoringDocs >= 0;
  }

  /**
   * Load the dump taken at the end of the records replayed since beginRestore; throws when the
   * two disagree (the dump is not of this state).
   */
  loadDump(dump: IndexSetDump): void {
    if (!this.restoring) throw new Error('loadDump without beginRestore');
    const n = dump.chunks.length;
    const owners = new Array<ItemChunks | undefined>(n).fill(undefined);
    for (const live of this.live.values()) {
      const { first, count } = live as ItemChunks;
      if (first + count > n) throw new Error(`index dump holds ${n} documents, the records ${first + count} or more`);
      for (let d = first; d < first + count; d++) owners[d] = live as ItemChunks;
    }
    // The dump may hand out more documents than the records (a compacted log drops an item deleted
    // after the last one indexed); never fewer.
    if (n < this.restoringDocs || dump.bm25.counters[0] !== this.liveChunks)
      throw new Error(
        `index dump does not match the records: ${n} documents and ${dump.bm25.counters[0]} live in the dump, ${this.restoringDocs} and ${this.liveChunks} replayed`,
      );
    this.chunks.load(dump.chunks, owners);
    for (const live of this.live.values()) {
      const { first, count } = live as ItemChunks;
      for (let d = first; d < first + count; d++) this.setLive(d, true);
    }
    this.bm25.load(dump.bm25);
    for (const live of this.live.values()) {
      const { first, count } = live as ItemChunks;
      if (count > 0 && (!this.bm25.has(first) || !this.bm25.has(first + count - 1))) throw new Error(`index dump lacks live documents from ${first}`);
    }
    this.restoringDocs = -1;
  }

  /** The chunk table and BM25 as flat arrays that later changes leave as they are (views where only later documents are written or arrays are replaced, copies where changes are made in place). */
  dump(): IndexSetDump {
    if (this.restoring) throw new Error('an index set still waiting for its dump has none to give');
    return { bm25: this.bm25.dump(), chunks: this.chunks.dump(), ...(this.vectors ? { groups: this.vectors.groupsDump() } : {}) };
  }

  /** Drop the item's chunks from every index (an update's old chunks, a deleted item). */
  drop(itemId: string): void {
    const live = this.live.get(itemId);
    if (!live) return;
    if (this.restoring) {
      for (const doc of live.docs) {
        this.vectors?.remove(doc);
        this.metadataIndex.remove(doc, live.version.metadata);
        this.liveChunks--;
      }
      this.live.delete(itemId);
      return;
    }
    for (const doc of live.docs) {
      this.setLive(doc, false);
      const owner = this.chunks.owner(doc);
      if (!owner) continue;
      this.bm25.remove(doc);
      this.vectors?.remove(doc);
      this.metadataIndex.remove(doc, owner.version.metadata);
      this.chunks.clear(doc);
      this.liveChunks--;
    }
    this.live.delete(itemId);
  }

  /**
   * Swap in the chunks of the item's current version: the old chunks answer until this call, the
   * new ones from it on, with nothing in between (one synchronous step).
   */
  applyIndexed(item: ContentItem, chunks: readonly IndexedChunk[], vectors: readonly StoredVector[] | undefined, firstDoc: number): LiveChunks {
    // No vectors at all is allowed: chunks whose embedding failed answer full-text search only.
    if (this.vectors && vectors !== undefined && vectors.length !== chunks.length) {
      throw new Error(`indexed record of ${item.id} carries ${vectors.length} vectors for ${chunks.length} chunks`);
    }
    // Document numbers come from the record, so a compacted log (a snapshot) rebuilds exactly the
    // numbering, and with it the keys of a saved HNSW graph; gaps are left empty.
    if (firstDoc < this.docSpace) throw new Error(`document ${firstDoc} of ${item.id} is already taken`);
    if (this.restoring) return this.restoreIndexed(item, chunks.length, vectors, firstDoc);
    this.chunks.skipTo(firstDoc);
    this.drop(item.id);
    const version = item.current;
    const live = new ItemChunks(item, version, firstDoc, 0);
    for (const c of chunks) {
      const doc = this.chunks.push(live, c.id, c.start, c.end, c.page);
      this.bm25.add(doc, c);
      if (this.vectors && vectors) this.vectors.add(doc, vectors[live.count]!);
      this.metadataIndex.add(doc, version.metadata);
      this.setLive(doc, true);
      live.count++;
      this.liveChunks++;
    }
    this.live.set(item.id, live);
    return live;
  }

  /** applyIndexed while restoring: the item's chunks are live; the dump has their terms and columns. */
  private restoreIndexed(item: ContentItem, count: number, vectors: readonly StoredVector[] | undefined, firstDoc: number): LiveChunks {
    this.drop(item.id);
    const version = item.current;
    const live = new ItemChunks(item, version, firstDoc, count);
    for (let i = 0; i < count; i++) {
      if (this.vectors && vectors) this.vectors.add(firstDoc + i, vectors[i]!);
      this.metadataIndex.add(firstDoc + i, version.metadata);
    }
    this.liveChunks += count;
    this.restoringDocs = firstDoc + count;
    this.live.set(item.id, live);
    return live;
  }

  /**
   * An item's live chunks as an item dump keeps them (a restart), in any order, before loadDump:
   * as restoreIndexed, with `vectors` telling whether their rows are in the set's vector file.
   */
  restoreLive(item: ContentItem, version: ContentVersion, first: number, count: number, vectors: boolean): LiveChunks {
    if (!this.restoring) throw new Error('restoreLive without beginRestore');
    if (first + count > this.restoreDocs) throw new Error(`documents from ${first} lie past the ${this.restoreDocs} of the dump`);
    const live = new ItemChunks(item, version, first, count);
    for (let i = 0; i < count; i++) this.metadataIndex.add(first + i, version.metadata);
    if (vectors && count > 0) {
      if (!this.adoptingVectors) throw new Error('an item dump with vectors needs the vector file');
      this.adoptVectors(first, count, count * this.vectors!.rowBytes);
    }
    this.liveChunks += count;
    this.restoringDocs = Math.max(this.restoringDocs, first + count);
    this.live.set(item.id, live);
    return live;
  }

  /** Whether a live document has its vector stored (an item dump tells which items' chunks do). */
  hasVector(doc: number): boolean {
    return this.vectors?.has(doc) === true;
  }

  // --- vectors --------------------------------------------------------------------------------

  get vectorCount(): number {
    return this.vectors?.size ?? 0;
  }

  /**
   * Keep this set's stored vectors in a file at `path` (before any is added; see
   * engine/vector/row-store.ts); `existingRows`: it holds them already (VectorIndex.useFile).
   */
  useVectorFile(path: string, existingRows?: number): void {
    this.vectors?.useFile(path, existingRows);
  }

  /** Whether replayed vectors are taken from the set's file rather than from their records. */
  get adoptingVectors(): boolean {
    return this.vectors?.adopting === true;
  }

  /** The vectors of documents [first, first + count), `bytes` long in their record, are in the file. */
  adoptVectors(first: number, count: number, bytes: number): void {
    if (bytes !== count * this.vectors!.rowBytes) throw new Error(`indexed record at document ${first} carries ${bytes} bytes of vectors for ${count} chunks`);
    this.vectors!.adoptStored(first, count);
  }

  /** Replay is over: adopted vectors join their duplicate groups, the dump's when it has them (see VectorIndex.finishAdopting). */
  finishAdoptingVectors(dump?: IndexSetDump): void {
    this.vectors?.finishAdopting(dump?.groups);
  }

  /** The set's vector file, every row written: what a snapshot links (VectorIndex.writtenFile). */
  writtenVectorFile(): { path: string; bytes: number } | undefined {
    return this.vectors?.writtenFile();
  }

  /** The set is dropped (knowledge base deleted, build cancelled or replaced): its vector file goes. */
  close(): void {
    this.vectors?.close();
  }

  /** Model vectors in the form this set stores (f32 or i8). */
  storedVectors(vectors: readonly Float32Array[]): StoredVector[] | undefined {
    return this.vectors && vectors.map((v) => this.vectors!.quantize(v));
  }

  /** Stored vectors as the bytes a log record carries, and back. */
  vectorBytes(vectors: StoredVector[]): Uint8Array {
    return this.vectors!.storedBytes(vectors as never);
  }

  vectorsFromBytes(bytes: Uint8Array, count: number): StoredVector[] | undefined {
    return this.vectors?.fromBytes(bytes, count);
  }

  get graphPending(): number {
    return this.vectors?.graphPending ?? 0;
  }

  /** Save the graph (see KnowledgeBase.saveGraph); the documents it holds. */
  saveGraph(path: string, viewsOnly = false): { docs: number[] } | undefined {
    if (!this.vectors?.hasGraph || (viewsOnly && !this.vectors.servesView)) return undefined;
    this.vectors.saveGraph(path);
    return { docs: this.vectors.graphDocs() };
  }

  /** Serve a saved graph (a snapshot's): as a view of it when the vectors are in a file (VectorIndex.attachGraph). */
  attachGraph(path: string, docs?: readonly number[]): void {
    this.vectors?.attachGraph(path, docs ?? this.vectors.aliveDocs(), { view: true });
  }

  // --- what searches read ----------------------------------------------------------------------

  /**
   * The live documents the filter allows (undefined without a filter), in time of about what it
   * matches: postings, never a pass over every chunk (engine/filter/expression.ts evaluate).
   */
  allowedSet(filter: MetadataFilter | undefined, options?: EvaluateOptions): AllowedDocs | undefined {
    if (!filter || Object.keys(filter).length === 0) return undefined;
    const space = this.chunks.length;
    const live = DocSet.ofBits(this.liveWords.subarray(0, (space + 31) >>> 5), space, this.restoring ? -1 : this.liveChunks);
    return this.metadataIndex.matching(filter, { space, live, metadataOf: (doc) => this.chunks.owner(doc)?.version.metadata }, options);
  }

  private setLive(doc: number, on: boolean): void {
    const w = doc >>> 5;
    if (w >= this.liveWords.length) {
      if (!on) return;
      const grown = new Uint32Array(Math.max(w + 1, this.liveWords.length * 2));
      grown.set(this.liveWords);
      this.liveWords = grown;
    }
    if (on) this.liveWords[w]! |= 1 << (doc & 31);
    else this.liveWords[w]! &= ~(1 << (doc & 31));
  }

  fullTextTop(terms: readonly string[], k: number, allowed?: AllowedDocs): Scored[] {
    return this.bm25.search(terms, k, allowed);
  }

  semanticTop(query: Float32Array, k: number, allowed?: AllowedDocs, started?: GraphQuery): Scored[] {
    return this.vectors ? this.vectors.search(query, k, allowed, started) : [];
  }

  startSemanticTop(searcher: GraphSearcher, query: Float32Array, k: number, allowed?: AllowedDocs): GraphQuery | undefined {
    return this.vectors?.startGraphSearch(searcher, query, k, allowed);
  }

  fullTextScores(terms: readonly string[], docs: readonly number[]): number[] {
    return this.bm25.scoreDocs(terms, docs);
  }

  semanticScores(query: Float32Array, docs: readonly number[]): number[] {
    return this.vectors ? this.vectors.scoreDocs(query, docs) : docs.map(() => 0);
  }

  hits(scored: readonly Scored[]): ChunkHit[] {
    const out: ChunkHit[] = [];
    for (const { doc, score } of scored) {
      const owner = this.chunks.owner(doc);
      if (!owner) continue;
      const { version } = owner;
      const start = this.chunks.startOf(doc);
      const end = this.chunks.endOf(doc);
      out.push({
        chunkId: this.chunks.id(doc)!,
        contentId: owner.content.id,
        // A stored text reads only the chunk's characters.
        text: version instanceof ItemVersion ? version.slice(start, end) : version.text.slice(start, end),
        score,
        metadata: version.metadata,
        page: this.chunks.pageOf(doc),
        doc,
      });
    }
    return out;
  }

  chunkIdOf(doc: number): string | undefined {
    return this.chunks.id(doc);
  }
}
