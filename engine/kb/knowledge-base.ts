// One knowledge base in memory: its content items, the chunks that answer searches, and the
// indexes over those chunks. Chunks are addressed by dense document numbers shared by every index.
import { InvertedIndex } from "../bm25/inverted-index";
import { VectorIndex } from "../vector/vector-index";
import { MetadataIndex, type Metadata, type MetadataFilter } from '../filter/metadata';
import type { ContentSource, ContentStatus, IndexedChunk, KnowledgeBaseRecord } from '../records';
import type { Scored } from "../topk";

export type StoredVector = Float32Array | Int8Array;

export interface AllowedDocs {
  mask: Uint8Array;
  docs: number[];
}

export interface ContentVersion {
  version: number;
  text: string;
  metadata: Metadata;
  source: ContentSource;
  pages?: number[];
}

export interface ContentItem {
  id: string;
  kbId: string;
  createdAt: string;
  updatedAt: string;
  /** The newest text and metadata (what reads return). */
  current: ContentVersion;
  /** The version whose chunks answer searches, with their document numbers. */
  live?: { version: ContentVersion; docs: number[] };
  status: ContentStatus;
  error?: string;
}

export interface ChunkHit {
  chunkId: string;
  contentId: string;
  text: string;
  score: number;
  metadata: Metadata;
  page?: number;
  doc: number;
}

interface ChunkSlot {
  id: string;
  content: ContentItem;
  version: ContentVersion;
  start: number;
  end: number;
  page?: number;
}

function compareOrder(a: ContentItem, b: ContentItem): number {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export class KnowledgeBase {
  readonly contents = new Map<string, ContentItem>();
  /** Cluster mode, on a node not holding this knowledge base's shard: ids of its items (kept by other nodes). */
  readonly itemsElsewhere = new Set<string>();
  /** Content items by (createdAt, id), for stable pagination. */
  private readonly order: ContentItem[] = [];
  private readonly chunks: (ChunkSlot | undefined)[] = [];
  readonly bm25: InvertedIndex;
  readonly metadataIndex = new MetadataIndex();
  /** Undefined for a configuration without embeddings. */
  readonly vectors: VectorIndex | undefined;
  private liveChunks = 0;

  /** `exactThreshold`: below this many vectors searches are exact and no HNSW graph is kept. */
  constructor(
    public record: KnowledgeBaseRecord,
    exactThreshold?: number,
  ) {
    this.bm25 = new InvertedIndex(record.config.bm25);
    const { embedding, hnsw } = record.config;
    if (embedding.dimensions > 0) {
      this.vectors = new VectorIndex({
        dimensions: embedding.dimensions,
        quantization: embedding.quantization === "i8" ? "i8" : "f32",
        connectivity: hnsw.connectivity,
        expansionAdd: hnsw.expansionAdd,
        expansionSearch: hnsw.expansionSearch,
        exactThreshold,
      });
    }
  }

  get id(): string {
    return this.record.id;
  }

  get chunkCount(): number {
    return this.liveChunks;
  }

  /** Document numbers handed out so far (upper bound for masks). */
  get docSpace(): number {
    return this.chunks.length;
  }

  // --- contents -------------------------------------------------------------------------------

  /** `createdAt` is given for updates (so a compacted log keeps an item's creation time). */
  putContent(id: string, version: ContentVersion, at: string, createdAt = at): ContentItem {
    const existing = this.contents.get(id);
    if (existing) {
      existing.current = version;
      existing.updatedAt = at;
      return existing;
    }
    const item: ContentItem = { id, kbId: this.id, createdAt, updatedAt: at, current: version, status: 'pending' };
    this.contents.set(id, item);
    const last = this.order[this.order.length - 1];
    if (!last || compareOrder(last, item) < 0) {
      this.order.push(item);
    } else {
      this.order.splice(this.orderIndex(item), 0, item);
    }
    return item;
  }

  private orderIndex(item: ContentItem): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareOrder(this.order[mid]!, item) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  deleteContent(id: string): boolean {
    const item = this.contents.get(id);
    if (!item) return false;
    this.dropLiveChunks(item);
    this.contents.delete(id);
    const at = this.orderIndex(item);
    if (this.order[at] === item) this.order.splice(at, 1);
    return true;
  }

  listContents(offset: number, limit: number): ContentItem[] {
    return this.order.slice(offset, offset + limit);
  }

  get contentCount(): number {
    return this.order.length;
  }

  private dropLiveChunks(item: ContentItem): void {
    if (!item.live) return;
    for (const doc of item.live.docs) {
      const slot = this.chunks[doc];
      if (!slot) continue;
      this.bm25.remove(doc);
      this.vectors?.remove(doc);
      this.metadataIndex.remove(doc, slot.version.metadata);
      this.chunks[doc] = undefined;
      this.liveChunks--;
    }
    item.live = undefined;
  }

  /**
   * Swap in the chunks of an indexed version: the old chunks answer until this call, the new
   * ones from it on, with nothing in between (one synchronous step).
   */
  applyIndexed(item: ContentItem, chunks: readonly IndexedChunk[], vectors: readonly StoredVector[] | undefined, firstDoc: number): number[] {
    // No vectors at all is allowed: chunks whose embedding failed answer full-text search only.
    if (this.vectors && vectors !== undefined && vectors.length !== chunks.length) {
      throw new Error(`indexed record of ${item.id} carries ${vectors.length} vectors for ${chunks.length} chunks`);
    }
    // Document numbers come from the record, so a compacted log (a snapshot) rebuilds exactly the
    // numbering, and with it the keys of a saved HNSW graph; gaps are left empty.
    if (firstDoc < this.chunks.length) throw new Error(`document ${firstDoc} of ${item.id} is already taken`);
    this.chunks.length = firstDoc;
    this.dropLiveChunks(item);
    const version = item.current;
    const docs: number[] = [];
    for (const c of chunks) {
      const doc = this.chunks.length;
      this.chunks.push({ id: c.id, content: item, version, start: c.start, end: c.end, page: c.page });
      this.bm25.add(doc, c);
      if (this.vectors && vectors) this.vectors.add(doc, vectors[docs.length]!);
      this.metadataIndex.add(doc, version.metadata);
      docs.push(doc);
      this.liveChunks++;
    }
    item.live = { version, docs };
    return docs;
  }

  /** Drop every chunk (knowledge base deletion). */
  clear(): void {
    for (const item of this.contents.values()) this.dropLiveChunks(item);
    this.contents.clear();
    this.itemsElsewhere.clear();
    this.order.length = 0;
  }

  // --- vectors --------------------------------------------------------------------------------

  get hasVectors(): boolean {
    return this.vectors !== undefined;
  }

  /** Vectors stored so far (0 without embeddings). */
  get vectorCount(): number {
    return this.vectors?.size ?? 0;
  }

  /** Model vectors in the form this knowledge base stores (f32 or i8). */
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

  // --- the HNSW graph ----------------------------------------------------------------------------

  /** Vectors waiting to be inserted into the graph. */
  get graphPending(): number {
    return this.vectors?.graphPending ?? 0;
  }

  /** Insert pending vectors for up to `budgetMs` in batches of `batch`; true once none are left. */
  buildGraphStep(budgetMs: number, batch: number): boolean {
    return !this.vectors || this.vectors.graphPending === 0 || this.vectors.buildStep(budgetMs, batch);
  }

  /** Save the graph to `path` when there is one; the documents it holds, else undefined. */
  saveGraph(path: string): number[] | undefined {
    if (!this.vectors?.hasGraph) return undefined;
    this.vectors.saveGraph(path);
    return this.vectors.graphDocs();
  }

  /** Use a saved graph holding exactly the vectors stored now. */
  attachGraph(path: string): void {
    this.vectors?.attachGraph(path, this.vectors.aliveDocs());
  }

  // --- what searches read (engine/search/ plans them) ----------------------------------------------

  /** Allowed documents of a filter: as a mask for scoring loops and as a list for exact vector search. */
  allowedSet(filter: MetadataFilter | undefined): AllowedDocs | undefined {
    if (!filter || Object.keys(filter).length === 0) return undefined;
    const docs = this.metadataIndex.matching(filter);
    const mask = new Uint8Array(this.chunks.length);
    for (const d of docs) mask[d] = 1;
    return { mask, docs };
  }

  /** The `k` best documents by BM25 among the allowed ones. */
  fullTextTop(terms: readonly string[], k: number, allowed?: AllowedDocs): Scored[] {
    return this.bm25.search(terms, k, allowed?.mask);
  }

  /** The `k` nearest documents by cosine among the allowed ones (none without embeddings). */
  semanticTop(query: Float32Array, k: number, allowed?: AllowedDocs): Scored[] {
    return this.vectors ? this.vectors.search(query, k, allowed?.mask, allowed?.docs) : [];
  }

  /** Exact BM25 scores of given documents, equal to what fullTextTop gives them. */
  fullTextScores(terms: readonly string[], docs: readonly number[]): number[] {
    return this.bm25.scoreDocs(terms, docs);
  }

  /** Exact cosine similarities of given documents (0 without embeddings). */
  semanticScores(query: Float32Array, docs: readonly number[]): number[] {
    return this.vectors ? this.vectors.scoreDocs(query, docs) : docs.map(() => 0);
  }

  hits(scored: readonly Scored[]): ChunkHit[] {
    const out: ChunkHit[] = [];
    for (const { doc, score } of scored) {
      const slot = this.chunks[doc];
      if (!slot) continue;
      out.push({
        chunkId: slot.id,
        contentId: slot.content.id,
        text: slot.version.text.slice(slot.start, slot.end),
        score,
        metadata: slot.version.metadata,
        page: slot.page,
        doc,
      });
    }
    return out;
  }

  chunkIdOf(doc: number): string | undefined {
    return this.chunks[doc]?.id;
  }
}
