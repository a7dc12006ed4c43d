// One knowledge base in memory: its content items and the indexes its searches read (the active
// IndexSet). While it is re-embedded for another configuration, a second set is built beside the
// active one from the same items; activation swaps it in at once (engine/kb/index-set.ts).
import { DocSet } from '../filter/doc-set';
import type { Metadata, MetadataFilter } from '../filter/metadata';
import type { ContentSource, ContentStatus, IndexedChunk, KnowledgeBaseConfig, KnowledgeBaseRecord } from '../records';
import type { Scored } from '../topk';
import type { EncodedText } from '../text/encoded-text';
import type { TextStore } from '../text/text-store';
import type { GraphQuery, GraphSearcher } from '../vector/graph-searcher';
import type { VectorIndex } from '../vector/vector-index';
import { dumpItems, ITEM_DELTA_MAX_SHARE, loadItems, type ItemDump, type ItemMark } from './item-dump';
import { IndexSet, type AllowedDocs, type BuildOutcome, type LiveChunks, type StoredVector } from './index-set';
import { estimatedChunks, StatusTally, textLengthOf } from './status-tally';
import { ItemVersion } from './version';

export type { AllowedDocs, StoredVector } from './index-set';

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
  /** The version whose chunks answer searches, with their document numbers (in the active set). */
  live?: LiveChunks;
  /** Of the newest version, in the active set; changed only through KnowledgeBase.setStatus (it is counted). */
  readonly status: ContentStatus;
  error?: string;
  /** The knowledge base's change clock when the item last changed (a snapshot's item delta holds those changed since its base). */
  touched: number;
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

function compareOrder(a: ContentItem, b: ContentItem): number {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export class KnowledgeBase {
  readonly contents = new Map<string, ContentItem>();
  /** Cluster mode, on a node not holding this knowledge base's shard: ids of its items (kept by other nodes). */
  readonly itemsElsewhere = new Set<string>();
  /** The items counted by status, kept as they change (progress reads walk no items). */
  readonly tally: StatusTally;
  /** Content items by (createdAt, id), for stable pagination. */
  private readonly order: ContentItem[] = [];
  /** The indexes searches read: those of `record.config`. */
  private active: IndexSet;
  /** The indexes of the configuration being built (re-embedding), if any. */
  private next: IndexSet | undefined;
  /**
   * Items whose newest version has an outcome in `next`, kept as outcomes and versions change:
   * every build result asks whether the build is complete, and walking the items for it made a
   * re-embedding quadratic in the items.
   */
  private builtCount = 0;
  /** The estimated chunks of the other items (not built in `next` yet), for the time a build has left. */
  private buildChunksLeft = 0;
  /**
   * Item deltas (engine/kb/item-dump.ts): items are stamped with `epoch` as they change; a full dump
   * taken (or loaded) at `baseEpoch` in this `lineage` is the base a later dump may be a delta of,
   * holding the items stamped after it and the ids `removed` since. -1: no base.
   */
  private lineage: object = {};
  private epoch = 1;
  private baseEpoch = -1;
  private removed: string[] = [];

  /**
   * `exactThreshold`: below this many vectors searches are exact and no HNSW graph is kept.
   * `texts`: where item texts go once their chunks answer searches (without one they stay on the heap).
   */
  constructor(
    public record: KnowledgeBaseRecord,
    private readonly exactThreshold?: number,
    private readonly texts?: TextStore,
  ) {
    this.active = new IndexSet(record.config, exactThreshold);
    this.tally = new StatusTally(record.config.chunking);
  }

  /** The one way an item's status changes, so that the tally follows. */
  setStatus(item: ContentItem, status: ContentStatus, error?: string): void {
    this.tally.leave(item);
    (item as { status: ContentStatus }).status = status;
    item.error = error;
    item.touched = this.epoch;
    this.tally.enter(item);
  }

  /** Every item counts as changed: no later dump is a delta of an earlier one (a configuration activated, texts rewritten). */
  breakLineage(): void {
    this.baseEpoch = -1;
    this.removed = [];
  }

  get id(): string {
    return this.record.id;
  }

  get chunkCount(): number {
    return this.active.chunkCount;
  }

  /** Document numbers handed out so far in the active set (upper bound for masks). */
  get docSpace(): number {
    return this.active.docSpace;
  }

  get bm25() {
    return this.active.bm25;
  }

  get metadataIndex() {
    return this.active.metadataIndex;
  }

  /** Undefined for a configuration without embeddings. */
  get vectors() {
    return this.active.vectors;
  }

  // --- configurations (re-embedding) -----------------------------------------------------------

  /** The set of a configuration: the active one, the one being built, else undefined. */
  indexSet(configId: string | undefined): IndexSet | undefined {
    if (configId === undefined || configId === this.active.config.id) return this.active;
    return this.next?.config.id === configId ? this.next : undefined;
  }

  /** The configuration being built, if any. */
  get building(): KnowledgeBaseConfig | undefined {
    return this.next?.config;
  }

  /** Start building `config` beside the active one (a build of another configuration is dropped). */
  startBuilding(config: KnowledgeBaseConfig): void {
    const dropped = this.next;
    this.next = new IndexSet(config, this.exactThreshold);
    if (dropped) this.releaseUnused(dropped);
    this.builtCount = 0;
    this.buildChunksLeft = 0;
    for (const item of this.contents.values()) this.countInBuild(item, 1);
  }

  cancelBuilding(): void {
    const dropped = this.next;
    this.next = undefined;
    if (dropped) this.releaseUnused(dropped);
    this.builtCount = 0;
    this.buildChunksLeft = 0;
  }

  /**
   * Count the item in (1) or out of (-1) the build's tallies: built when its newest version has an
   * outcome in the set being built (statusIn's rule), else its estimated chunks are still to come.
   * Called around every change of an item's version or outcome.
   */
  private countInBuild(item: ContentItem, sign: 1 | -1): void {
    const next = this.next;
    if (!next) return;
    if (this.statusIn(next, item) !== 'pending') this.builtCount += sign;
    else this.buildChunksLeft += sign * estimatedChunks(textLengthOf(item.current), next.config.chunking);
  }

  /** The item's indexing state in a set: its newest version and where indexing it ended there. */
  statusIn(set: IndexSet, item: ContentItem): ContentStatus {
    if (set === this.active) return item.status;
    const outcome = set.outcomes.get(item.id);
    return outcome && outcome.version === item.current.version ? outcome.status : 'pending';
  }

  /**
   * Items whose newest version has an outcome in the set being built, all items, and the estimated
   * chunks of those still to be built.
   */
  buildProgress(): { done: number; total: number; chunksLeft: number } | undefined {
    const next = this.next;
    if (!next) return undefined;
    return { done: this.builtCount, total: this.contents.size, chunksLeft: this.buildChunksLeft };
  }

  /** The built configuration answers from now on: items take their state in it, the old set is dropped. */
  activateBuilding(at: string): void {
    const next = this.next!;
    for (const item of this.contents.values()) {
      const was = item.live?.version;
      item.live = next.live.get(item.id);
      this.releaseIfUnused(item, was);
      const outcome = next.outcomes.get(item.id);
      const settled = outcome && outcome.version === item.current.version;
      (item as { status: ContentStatus }).status = settled ? outcome.status : 'pending';
      item.error = settled ? outcome.error : undefined;
    }
    next.outcomes.clear();
    this.active = next;
    this.next = undefined;
    this.builtCount = 0;
    this.buildChunksLeft = 0;
    this.record = { ...this.record, config: next.config, updatedAt: at };
    this.tally.recount(this.contents.values(), next.config.chunking);
    this.breakLineage();
  }

  // --- contents -------------------------------------------------------------------------------

  /**
   * `createdAt` is given for updates (so a compacted log keeps an item's creation time); `encoded`:
   * the text as a snapshot stored it (`given.text` is then empty), placed in the store at once.
   */
  putContent(id: string, given: ContentVersion, at: string, createdAt = at, encoded?: EncodedText): ContentItem {
    // Into the store at once: a bulk load's items wait for indexing by the hundred thousand, and
    // held on the heap their texts were most of its memory and of its snapshots' item dumps.
    // Ingestion reads a text back once (a few microseconds from the page cache).
    const version = given instanceof ItemVersion ? given : new ItemVersion(given);
    if (encoded) version.takeEncoded(encoded, this.texts);
    else if (this.texts) version.moveTo(this.texts);
    const existing = this.contents.get(id);
    if (existing) {
      const was = existing.current;
      // Its text may change while it waits: counted again with the new one. A new version's
      // outcome in a build is still to come.
      this.tally.leave(existing);
      this.countInBuild(existing, -1);
      existing.current = version;
      this.countInBuild(existing, 1);
      this.tally.enter(existing);
      existing.updatedAt = at;
      existing.touched = this.epoch;
      this.releaseIfUnused(existing, was);
      return existing;
    }
    // One string for both times when equal (a decoded record carries two copies).
    const item: ContentItem = {
      id,
      kbId: this.id,
      createdAt,
      updatedAt: at === createdAt ? createdAt : at,
      current: version,
      status: 'pending',
      touched: this.epoch,
    };
    this.contents.set(id, item);
    this.tally.enter(item);
    this.countInBuild(item, 1);
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
    const versions = new Set([item.current, item.live?.version, this.next?.live.get(id)?.version]);
    for (const v of versions) if (v instanceof ItemVersion) v.release();
    this.active.drop(id);
    item.live = undefined;
    this.countInBuild(item, -1);
    this.next?.drop(id);
    this.next?.outcomes.delete(id);
    this.tally.leave(item);
    this.contents.delete(id);
    const at = this.orderIndex(item);
    if (this.order[at] === item) this.order.splice(at, 1);
    if (this.baseEpoch >= 0) {
      this.removed.push(id);
      // Past this, a delta would not be taken anyway: kept no longer.
      if (this.removed.length > this.order.length) this.breakLineage();
    }
    return true;
  }

  listContents(offset: number, limit: number): ContentItem[] {
    return this.order.slice(offset, offset + limit);
  }

  get contentCount(): number {
    return this.order.length;
  }

  /**
   * Swap in the chunks of an indexed version in a set: the old chunks answer until this call, the
   * new ones from it on, with nothing in between (one synchronous step).
   */
  applyIndexed(
    item: ContentItem,
    chunks: readonly IndexedChunk[],
    vectors: readonly StoredVector[] | undefined,
    firstDoc: number,
    set: IndexSet = this.active,
  ): number[] {
    const was = set === this.active ? item.live?.version : set.live.get(item.id)?.version;
    const live = set.applyIndexed(item, chunks, vectors, firstDoc);
    if (set === this.active) {
      item.live = live;
      item.touched = this.epoch;
    }
    this.releaseIfUnused(item, was);
    if (this.texts && live.version instanceof ItemVersion) live.version.moveTo(this.texts);
    return live.docs;
  }

  /**
   * A version nothing refers to any more (neither the item's newest, nor live in the active set or
   * the one being built) has a dead text: counted as such in the store (a start from item dumps
   * writes the file anew once dead bytes outweigh live ones).
   */
  private releaseIfUnused(item: ContentItem, version: ContentVersion | undefined): void {
    if (!(version instanceof ItemVersion) || version === item.current || version === item.live?.version) return;
    if (version === this.next?.live.get(item.id)?.version) return;
    version.release();
  }

  /** The versions live in a dropped set that nothing else refers to. */
  private releaseUnused(dropped: IndexSet): void {
    for (const [id, live] of dropped.live) {
      const item = this.contents.get(id);
      if (item) this.releaseIfUnused(item, live.version);
    }
  }

  /** Where indexing ended in the set being built. */
  recordOutcome(set: IndexSet, itemId: string, outcome: BuildOutcome): void {
    const item = set === this.next ? this.contents.get(itemId) : undefined;
    if (item) this.countInBuild(item, -1);
    set.outcomes.set(itemId, outcome);
    if (item) this.countInBuild(item, 1);
  }

  /** Drop every chunk (knowledge base deletion). */
  clear(): void {
    for (const item of this.contents.values()) {
      for (const v of new Set([item.current, item.live?.version])) if (v instanceof ItemVersion) v.release();
      this.active.drop(item.id);
      item.live = undefined;
    }
    this.next = undefined;
    this.builtCount = 0;
    this.buildChunksLeft = 0;
    this.contents.clear();
    this.tally.clear();
    this.itemsElsewhere.clear();
    this.order.length = 0;
    this.breakLineage();
  }

  // --- item dumps (a restart without replaying records) ----------------------------------------

  /**
   * The items as an item dump (a snapshot of the engine's own state); undefined while another
   * configuration is built or items are kept elsewhere (a restart then replays the records).
   * Given the mark of the last full dump (`base`, which the caller's previous snapshot holds), a
   * delta of it while few items changed since (ITEM_DELTA_MAX_SHARE); otherwise a full dump, the
   * base of later deltas (its `mark`). A bulk load's snapshots then write the items added since
   * the base, not every item (110 MB at a million chunks, half a second of this thread).
   */
  dumpItems(clock: ItemDump['clock'], base?: ItemMark): ItemDump | undefined {
    if (this.next || this.itemsElsewhere.size > 0) return undefined;
    const set = this.active;
    const hasVector = (doc: number) => set.hasVector(doc);
    if (base && base.of === this.lineage && base.epoch === this.baseEpoch) {
      const changed: ContentItem[] = [];
      const limit = ITEM_DELTA_MAX_SHARE * this.order.length - this.removed.length;
      for (const item of this.order) if (item.touched > base.epoch && changed.push(item) > limit) break;
      if (changed.length <= limit) return { ...dumpItems(this.record, changed, hasVector, clock), delta: { removed: [...this.removed] }, mark: base };
    }
    const mark: ItemMark = { of: this.lineage, epoch: this.epoch };
    // Items changed from now on are stamped after the mark.
    this.baseEpoch = this.epoch++;
    this.removed = [];
    return { ...dumpItems(this.record, this.order, hasVector, clock), mark };
  }

  /**
   * Take over an item dump into this new, empty knowledge base: its items as they were, their live
   * chunks placed in the active set, which waits for its index dump (IndexSet.beginRestore). Returns
   * the bytes of texts the items hold in the text store, and where the last of them ends.
   */
  loadItems(dump: ItemDump): { textBytes: number; textEnd: number } {
    if (this.contents.size > 0 || this.next) throw new Error('an item dump loads into an empty knowledge base');
    const set = this.active;
    if (!set.restoring) throw new Error('an item dump loads with the index dump of its active configuration');
    const { items, textBytes, textEnd } = loadItems(dump, this.id, this.texts, set.restoreSpace, (item, version, first, count, vectors) => {
      item.live = set.restoreLive(item, version, first, count, vectors);
    });
    // The dump read is the base of later deltas (`mark`, epoch 0); rows of a delta merged into it changed since.
    const changed = dump.merged?.changed;
    const at = dump.mark?.epoch ?? 0;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      item.touched = changed?.[i] ? at + 1 : at;
      this.contents.set(item.id, item);
      this.tally.enter(item);
      this.order.push(item);
    }
    if (dump.mark) {
      this.lineage = dump.mark.of;
      this.baseEpoch = dump.mark.epoch;
      this.epoch = at + 2;
      this.removed = [...(dump.merged?.removed ?? [])];
    }
    if (this.contents.size !== items.length) throw new Error('item dump: an item id twice');
    return { textBytes, textEnd };
  }

  // --- vectors --------------------------------------------------------------------------------

  get hasVectors(): boolean {
    return this.active.vectors !== undefined;
  }

  /** Vectors stored so far (0 without embeddings). */
  get vectorCount(): number {
    return this.active.vectorCount;
  }

  /** Model vectors in the form this knowledge base stores (f32 or i8). */
  storedVectors(vectors: readonly Float32Array[]): StoredVector[] | undefined {
    return this.active.storedVectors(vectors);
  }

  /** Stored vectors as the bytes a log record carries, and back. */
  vectorBytes(vectors: StoredVector[]): Uint8Array {
    return this.active.vectorBytes(vectors);
  }

  vectorsFromBytes(bytes: Uint8Array, count: number): StoredVector[] | undefined {
    return this.active.vectorsFromBytes(bytes, count);
  }

  // --- the HNSW graph ----------------------------------------------------------------------------

  /** Vectors waiting to be inserted into a graph (of the set being built too: it is ready when it takes over). */
  get graphPending(): number {
    return this.active.graphPending + (this.next?.graphPending ?? 0);
  }

  /** The vector indexes whose graphs are built in the background: the active set's and the one being built. */
  vectorIndexes(): VectorIndex[] {
    return [this.active.vectors, this.next?.vectors].filter((v): v is VectorIndex => v !== undefined);
  }

  /**
   * Save the active graph to `path` when there is one (`viewsOnly`: only a view of a file the
   * builder wrote, which is saved as a link); its configuration and the documents it holds.
   */
  saveGraph(path: string, viewsOnly = false): { configId: string; docs: number[] } | undefined {
    const saved = this.active.saveGraph(path, viewsOnly);
    return saved && { configId: this.active.config.id, ...saved };
  }

  /** Use a saved graph holding exactly the vectors stored now, or the documents `docs`. */
  attachGraph(path: string, docs?: readonly number[]): void {
    this.active.attachGraph(path, docs);
  }

  // --- what searches read (engine/search/ plans them) ----------------------------------------------

  /**
   * Allowed documents of a filter (a sorted list when few, a bitset when many), undefined without
   * one; given the allowed documents already (one search request's, for each deeper pass), those.
   */
  allowedSet(filter: MetadataFilter | AllowedDocs | undefined): AllowedDocs | undefined {
    return filter instanceof DocSet ? filter : this.active.allowedSet(filter);
  }

  /** The `k` best documents by BM25 among the allowed ones. */
  fullTextTop(terms: readonly string[], k: number, allowed?: AllowedDocs): Scored[] {
    return this.active.fullTextTop(terms, k, allowed);
  }

  /**
   * The `k` nearest documents by cosine among the allowed ones (none without embeddings).
   * `started`: what startSemanticTop gave for the same arguments, nothing changed since.
   */
  semanticTop(query: Float32Array, k: number, allowed?: AllowedDocs, started?: GraphQuery): Scored[] {
    return this.active.semanticTop(query, k, allowed, started);
  }

  /** Begin semanticTop's graph search on `searcher`'s thread (VectorIndex.startGraphSearch). */
  startSemanticTop(searcher: GraphSearcher, query: Float32Array, k: number, allowed?: AllowedDocs): GraphQuery | undefined {
    return this.active.startSemanticTop(searcher, query, k, allowed);
  }

  /** Exact BM25 scores of given documents, equal to what fullTextTop gives them. */
  fullTextScores(terms: readonly string[], docs: readonly number[]): number[] {
    return this.active.fullTextScores(terms, docs);
  }

  /** Exact cosine similarities of given documents (0 without embeddings). */
  semanticScores(query: Float32Array, docs: readonly number[]): number[] {
    return this.active.semanticScores(query, docs);
  }

  hits(scored: readonly Scored[]): ChunkHit[] {
    return this.active.hits(scored);
  }

  chunkIdOf(doc: number): string | undefined {
    return this.active.chunkIdOf(doc);
  }
}
