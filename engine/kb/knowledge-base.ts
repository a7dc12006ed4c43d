// One knowledge base in memory: its content items, the chunks that answer searches, and the
// indexes over those chunks. Chunks are addressed by dense document numbers shared by every index.
import { InvertedIndex } from "../bm25/inverted-index";
import { candidatePool, reciprocalRankFusion, weightedFusion } from "../hybrid/fusion";
import { VectorIndex } from "../vector/vector-index";
import { MetadataIndex, type Metadata, type MetadataFilter } from '../filter/metadata';
import type { ContentSource, ContentStatus, IndexedChunk, KnowledgeBaseRecord } from '../records';
import type { Scored } from "../topk";

export type StoredVector = Float32Array | Int8Array;

export interface HybridOptions {
  semanticWeight: number;
  fusion: "weighted" | "rrf";
}

export interface HybridHit extends ChunkHit {
  fullTextScore: number;
  /** Absent when no query vector was computed (semanticWeight 0). */
  semanticScore?: number;
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
      existing.status = 'pending';
      existing.error = undefined;
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
    item.status = 'ready';
    item.error = undefined;
    return docs;
  }

  /** Drop every chunk (knowledge base deletion). */
  clear(): void {
    for (const item of this.contents.values()) this.dropLiveChunks(item);
    this.contents.clear();
    this.order.length = 0;
  }

  // --- search ---------------------------------------------------------------------------------

  searchFullText(terms: readonly string[], limit: number, filter?: MetadataFilter): ChunkHit[] {
    return this.hits(this.bm25.search(terms, limit, this.allowedSet(filter)?.mask));
  }

  /** Allowed documents of a filter: as a mask for scoring loops and as a list for exact vector search. */
  private allowedSet(filter: MetadataFilter | undefined): { mask: Uint8Array; docs: number[] } | undefined {
    if (!filter || Object.keys(filter).length === 0) return undefined;
    const docs = this.metadataIndex.matching(filter);
    const mask = new Uint8Array(this.chunks.length);
    for (const d of docs) mask[d] = 1;
    return { mask, docs };
  }

  searchSemantic(query: Float32Array, limit: number, filter?: MetadataFilter): ChunkHit[] {
    if (!this.vectors) return [];
    const allowed = this.allowedSet(filter);
    return this.hits(this.vectors.search(query, limit, allowed?.mask, allowed?.docs));
  }

  /**
   * Both legs over-fetch candidates (filtered inside each leg), every candidate is scored by both
   * legs exactly, then the pure fusion functions rank them. Normalization runs over the whole
   * candidate pool, so a candidate no query term matches counts as the full-text minimum (0).
   * `query` is undefined when no vector was computed (a pure full-text blend): the semantic leg
   * then neither runs nor reports scores.
   */
  searchHybrid(terms: readonly string[], query: Float32Array | undefined, limit: number, options: HybridOptions, filter?: MetadataFilter): HybridHit[] {
    const allowed = this.allowedSet(filter);
    const depth = Math.min(1000, Math.max(4 * limit, 100));
    const w = options.semanticWeight;
    const vectors = query ? this.vectors : undefined;
    const semScores = (docs: number[]) => (vectors && query ? vectors.scoreDocs(query, docs) : docs.map(() => 0));
    const ft = w < 1 || options.fusion === 'rrf' ? this.bm25.search(terms, depth, allowed?.mask) : [];
    const sem = vectors && query && (w > 0 || options.fusion === 'rrf') ? vectors.search(query, depth, allowed?.mask, allowed?.docs) : [];
    let ranked: { doc: number; score: number }[];
    if (options.fusion === 'rrf') {
      ranked = reciprocalRankFusion(ft.map((h) => h.doc), sem.map((h) => h.doc), w, limit);
    } else {
      const pool = candidatePool(ft.map((h) => h.doc), sem.map((h) => h.doc), w);
      const ftScores = this.bm25.scoreDocs(terms, pool);
      const semantic = semScores(pool);
      ranked = weightedFusion(pool.map((doc, i) => ({ doc, fullText: ftScores[i]!, semantic: semantic[i]! })), w, limit);
    }
    const hits = this.hits(ranked);
    const docs = hits.map((h) => h.doc);
    const ftExact = this.bm25.scoreDocs(terms, docs);
    const semExact = semScores(docs);
    return hits.map((hit, i) => ({ ...hit, fullTextScore: ftExact[i]!, ...(vectors ? { semanticScore: semExact[i]! } : {}) }));
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
