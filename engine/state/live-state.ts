// The state in memory that searches read: knowledge bases with their content items and indexes.
// It changes only through the state machine (applyRecord), which decides whether a record applies;
// this target carries it out, with the side effects memory needs (stored originals removed,
// vectors handed to the background graph builder).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { OriginalsStore } from '../files/originals';
import { linkOrCopy, PRIVATE_DIR } from '../fsync';
import { idClock, observeId, observeIdClock } from '../ids';
import type { IndexSet } from '../kb/index-set';
import type { ItemMark } from '../kb/item-dump';
import type { RestoredIndex, StartingItems } from '../options';
import { KnowledgeBase } from '../kb/knowledge-base';
import { ItemVersion } from '../kb/version';
import type { LogRecord } from '../records';
import type { EncodedText } from '../text/encoded-text';
import type { TextStore } from '../text/text-store';
import { DEFAULT_EXACT_THRESHOLD } from '../vector/vector-index';
import { markFailed, markPending, markReady } from './content-status';
import { applyRecord, statusAfterIndexed, type RecordOf, type StateTarget } from './machine';

/** A knowledge base's active graph saved to a file, with its configuration and the documents it holds. */
export interface SavedGraph {
  kbId: string;
  configId: string;
  path: string;
  docs: number[];
}

export interface LiveStateOptions {
  originals: OriginalsStore;
  /** Knowledge bases with fewer vectors are searched exactly and keep no HNSW graph. */
  graphThreshold?: number;
  /** Background clean-up (file removal): failures are reported, never fatal. */
  discard: (task: Promise<void>) => void;
  /** Vectors were added: the background graph builder has work. */
  onVectorsAdded: () => void;
  /** Chunks joined the knowledge base's active index (or a built one became active): items to group. */
  onIndexed?: (kbId: string) => void;
  /** Cluster mode with shards: the knowledge bases whose content this node keeps (default all). */
  holds?: (kbId: string) => boolean;
  /**
   * Where each index set keeps its stored vectors, one file per knowledge base and configuration
   * (derived data: emptied here at start, rewritten as the log replays). Absent: in memory.
   */
  vectorDir?: string;
  /** Where indexed item texts live out of the JavaScript heap (without one they stay on it). */
  texts?: TextStore;
}

const SAFE_NAME = /^[A-Za-z0-9_-]+$/;

export class LiveState implements StateTarget {
  readonly kbs = new Map<string, KnowledgeBase>();
  readonly graphThreshold: number;
  /** Index dumps to load after the starting point's records, by `kbId configId` (restoreIndexes). */
  private readonly dumps = new Map<string, RestoredIndex>();

  constructor(private readonly options: LiveStateOptions) {
    this.graphThreshold = options.graphThreshold ?? DEFAULT_EXACT_THRESHOLD;
    if (options.vectorDir) {
      rmSync(options.vectorDir, { recursive: true, force: true });
      mkdirSync(options.vectorDir, { recursive: true, mode: PRIVATE_DIR });
    }
  }

  /**
   * Index sets with a dump here skip their index work while records replay; finishRestore loads
   * the dumps into them. Before any record is applied.
   */
  restoreIndexes(dumps: readonly RestoredIndex[]): void {
    for (const d of dumps) this.dumps.set(`${d.kbId} ${d.configId}`, d);
  }

  /** Load every dump given to restoreIndexes into its set; throws when one has no set waiting for it or disagrees with it. */
  finishRestore(): void {
    for (const { kbId, configId, dump } of this.dumps.values()) {
      const set = this.kbs.get(kbId)?.indexSet(configId);
      if (!set?.restoring || set.config.id !== configId) throw new Error(`index dump of ${kbId} (configuration ${configId}) has no index set to load into`);
      try {
        set.loadDump(dump);
        set.finishAdoptingVectors(dump);
      } catch (err) {
        throw new Error(`index dump of ${kbId} (configuration ${configId}): ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.dumps.clear();
  }

  /**
   * Every index set as flat arrays that later changes leave as they are (InvertedIndex.dump), with its
   * knowledge base and configuration, and its vector file with every row written (rows below its
   * length never change).
   */
  dumpIndexes(): RestoredIndex[] {
    const out: RestoredIndex[] = [];
    for (const [kbId, kb] of this.kbs)
      for (const set of new Set([kb.indexSet(undefined), kb.building && kb.indexSet(kb.building.id)])) {
        if (!set) continue;
        const vectors = set.writtenVectorFile();
        out.push({ kbId, configId: set.config.id, dump: set.dump(), ...(vectors && vectors.bytes > 0 ? { vectors } : {}) });
      }
    return out;
  }

  /**
   * Every knowledge base's item dump, with the text store's file they point into (every text
   * written, dead ones too: a start from them writes the file anew once they outweigh the live
   * ones); undefined when one cannot give one (engine/kb/item-dump.ts). `bases`: by knowledge base,
   * the mark of a full dump the caller holds, which its dump may be a delta of (KnowledgeBase.dumpItems).
   */
  dumpItems(bases?: ReadonlyMap<string, ItemMark>): StartingItems | undefined {
    const texts = this.options.texts;
    if (!texts) return undefined;
    const clock = idClock();
    const kbs = [];
    for (const kb of this.kbs.values()) {
      const dump = kb.dumpItems(clock, bases?.get(kb.id));
      if (!dump) return undefined;
      kbs.push(dump);
    }
    return { kbs, texts: texts.writtenFile() };
  }

  /**
   * Start from item dumps instead of the records (a restart from a snapshot with them): each
   * knowledge base made from its dump's record, its items and their live chunks placed, and the
   * text store taking over the snapshot's file. Before any record; the index dumps given to
   * restoreIndexes are loaded by finishRestore, as after a replay.
   */
  loadItems(start: StartingItems): void {
    const texts = this.options.texts;
    if (!texts) throw new Error('item dumps need a text store');
    let textBytes = 0;
    for (const dump of start.kbs) {
      observeIdClock(dump.clock);
      if (this.kbs.has(dump.kb.id)) throw new Error(`item dump of ${dump.kb.id} twice`);
      this.createKnowledgeBase({ t: 'kb.create', kb: dump.kb });
      const loaded = this.kbs.get(dump.kb.id)!.loadItems(dump);
      if (loaded.textEnd > start.texts.bytes) throw new Error(`item dump of ${dump.kb.id}: texts lie past the ${start.texts.bytes} bytes of the text file`);
      textBytes += loaded.textBytes;
    }
    // Nothing reads a text before the engine is open: the file is taken over last.
    texts.adopt(start.texts.path, start.texts.bytes, textBytes);
    if (texts.bytes.dead > texts.bytes.live) this.rewriteTexts(texts);
  }

  /**
   * The text file holds more dead texts (of versions replaced or deleted) than live ones: the live
   * ones are copied into a new file (818 MiB of them in 1.0 s in a probe), so a start leaves it
   * holding no more dead bytes than live ones.
   */
  private rewriteTexts(texts: TextStore): void {
    const versions = new Set<ItemVersion>();
    for (const kb of this.kbs.values())
      for (const item of kb.contents.values()) for (const v of [item.current, item.live?.version]) if (v instanceof ItemVersion && v.stored) versions.add(v);
    const stored = [...versions];
    const moved = texts.rewrite(stored.map((v) => v.storedRef!));
    stored.forEach((v, i) => v.relocate(moved[i]!));
    // The dumps loaded point into the old file: none is a base any more.
    for (const kb of this.kbs.values()) kb.breakLineage();
  }

  /** A new index set: it waits for its dump when there is one (restoreIndexes), and keeps its vectors in the vector directory. */
  private placeVectors(kbId: string, set: IndexSet | undefined): void {
    const restored = set && this.dumps.get(`${kbId} ${set.config.id}`);
    if (restored) set.beginRestore(restored.dump.chunks.length);
    const dir = this.options.vectorDir;
    if (!dir || !set?.vectors) return;
    const configId = set.config.id;
    if (!SAFE_NAME.test(kbId) || !SAFE_NAME.test(configId)) throw new Error(`unsafe vector file name: ${kbId}.${configId}`);
    const path = join(dir, `${kbId}.${configId}.vectors`);
    const given = restored?.vectors;
    if (given && given.bytes % set.vectors.rowBytes === 0) {
      // The snapshot's file, linked (a copy on another file system): its rows are the set's.
      linkOrCopy(given.path, path);
      set.useVectorFile(path, given.bytes / set.vectors.rowBytes);
    } else set.useVectorFile(path);
  }

  /** Close every index set (their vector files are removed): the engine is closing. */
  close(): void {
    for (const kb of this.kbs.values()) {
      kb.indexSet(kb.building?.id)?.close();
      kb.indexSet(undefined)?.close();
    }
  }

  /** Apply a record (see machine.ts); whether it applied. */
  apply(record: LogRecord, attachment?: Uint8Array, text?: EncodedText): boolean {
    return applyRecord(this, record, attachment, text);
  }

  hasKnowledgeBase(kbId: string): boolean {
    return this.kbs.has(kbId);
  }

  holdsContent(kbId: string): boolean {
    return this.options.holds?.(kbId) ?? true;
  }

  itemElsewhere(kbId: string, id: string, exists: boolean): void {
    const ids = this.kbs.get(kbId)!.itemsElsewhere;
    if (exists) ids.add(id);
    else ids.delete(id);
  }

  setItemsElsewhere(kbId: string, ids: readonly string[]): void {
    const held = this.kbs.get(kbId)!.itemsElsewhere;
    held.clear();
    for (const id of ids) held.add(id);
  }

  contentState(kbId: string, id: string, configId?: string) {
    const kb = this.kbs.get(kbId);
    const item = kb?.contents.get(id);
    const set = kb?.indexSet(configId);
    return item && set && { version: item.current.version, status: kb!.statusIn(set, item) };
  }

  docSpace(kbId: string, configId?: string): number {
    return this.kbs.get(kbId)?.indexSet(configId)?.docSpace ?? 0;
  }

  configs(kbId: string) {
    const kb = this.kbs.get(kbId);
    return kb && { active: kb.record.config, building: kb.building };
  }

  startBuilding(record: RecordOf<'kb.reconfigure'>): void {
    observeId(record.config.id);
    const kb = this.kbs.get(record.kbId)!;
    const replaced = kb.building && kb.indexSet(kb.building.id);
    kb.startBuilding(record.config);
    replaced?.close();
    this.placeVectors(kb.id, kb.indexSet(record.config.id));
  }

  cancelBuilding(record: RecordOf<'kb.reconfigure'>): void {
    const kb = this.kbs.get(record.kbId)!;
    const building = kb.building && kb.indexSet(kb.building.id);
    kb.cancelBuilding();
    building?.close();
  }

  activateBuilding(record: RecordOf<'kb.activate'>): void {
    const kb = this.kbs.get(record.kbId)!;
    const old = kb.indexSet(undefined);
    kb.activateBuilding(record.at);
    if (old !== kb.indexSet(undefined)) old?.close();
    this.options.onVectorsAdded();
    this.options.onIndexed?.(record.kbId);
  }

  createKnowledgeBase(record: RecordOf<'kb.create'>): void {
    observeId(record.kb.id);
    const kb = new KnowledgeBase(record.kb, this.graphThreshold, this.options.texts);
    this.placeVectors(kb.id, kb.indexSet(undefined));
    this.kbs.set(record.kb.id, kb);
  }

  updateKnowledgeBase(record: RecordOf<'kb.update'>): void {
    const kb = this.kbs.get(record.id)!;
    kb.record = { ...kb.record, name: record.name, description: record.description, updatedAt: record.at };
  }

  deleteKnowledgeBase(record: RecordOf<'kb.delete'>): void {
    const kb = this.kbs.get(record.id)!;
    const sets = [kb.indexSet(undefined), kb.building && kb.indexSet(kb.building.id)];
    kb.clear();
    for (const set of sets) set?.close();
    this.kbs.delete(record.id);
    this.options.discard(this.options.originals.removeKnowledgeBase(record.id));
  }

  putContent(record: RecordOf<'content.put'>, text?: EncodedText): void {
    const kb = this.kbs.get(record.kbId)!;
    observeId(record.id);
    // Text replacing an uploaded file: the original no longer describes the item.
    if (kb.contents.get(record.id)?.current.source.kind === 'file' && record.source.kind !== 'file') {
      this.options.discard(this.options.originals.remove(record.kbId, record.id));
    }
    const item = kb.putContent(
      record.id,
      { version: record.version, text: record.text, metadata: record.metadata, source: record.source, pages: record.pages },
      record.at,
      record.createdAt,
      text,
    );
    markPending(kb, item);
  }

  deleteContent(record: RecordOf<'content.delete'>): void {
    const kb = this.kbs.get(record.kbId)!;
    const item = kb.contents.get(record.id)!;
    kb.deleteContent(record.id);
    if (item.current.source.kind === 'file') this.options.discard(this.options.originals.remove(record.kbId, record.id));
  }

  indexContent(record: RecordOf<'content.indexed'>, attachment: Uint8Array | undefined): void {
    const kb = this.kbs.get(record.kbId)!;
    const item = kb.contents.get(record.id)!;
    const set = kb.indexSet(record.configId)!;
    for (const c of record.chunks) observeId(c.id);
    const carried = attachment !== undefined && attachment.length > 0;
    // A set restored with its vector file has these rows stored already: not decoded, not written.
    const inFile = carried && set.adoptingVectors;
    const vectors = carried && !inFile ? set.vectorsFromBytes(attachment, record.chunks.length) : undefined;
    kb.applyIndexed(item, record.chunks, vectors, record.firstDoc, set);
    if (inFile) set.adoptVectors(record.firstDoc, record.chunks.length, attachment.length);
    const status = statusAfterIndexed(record);
    if (set !== kb.indexSet(undefined))
      kb.recordOutcome(set, item.id, { version: record.version, status, ...(record.embeddingError ? { error: record.embeddingError } : {}) });
    else if (status === 'ready') markReady(kb, item);
    else markFailed(kb, item, record.embeddingError!);
    if (vectors) this.options.onVectorsAdded();
    if (set === kb.indexSet(undefined)) this.options.onIndexed?.(record.kbId);
  }

  failContent(record: RecordOf<'content.failed'>): void {
    const kb = this.kbs.get(record.kbId)!;
    const item = kb.contents.get(record.id)!;
    const set = kb.indexSet(record.configId)!;
    if (set !== kb.indexSet(undefined)) kb.recordOutcome(set, item.id, { version: record.version, status: 'failed', error: record.error });
    else markFailed(kb, item, record.error);
  }

  /**
   * Vectors a graph's worker would still put into HNSW graphs holding `inGraphs` keys per knowledge
   * base (a start from a snapshot's graphs), or, without it, into the graphs as they are now
   * (meanwhile they are searched exactly): what the graphs hold or wait for beyond that, and all the
   * vectors of a knowledge base past the graph threshold with no graph yet.
   */
  vectorsOutsideGraphs(inGraphs?: ReadonlyMap<string, number>): number {
    let outside = 0;
    for (const [kbId, kb] of this.kbs) {
      const vectors = kb.vectors;
      if (!vectors || vectors.size < this.graphThreshold) continue;
      const now = vectors.graphKeys > 0 ? vectors.graphKeys + vectors.graphPending : vectors.size;
      outside += Math.max(0, now - (inGraphs ? (inGraphs.get(kbId) ?? 0) : vectors.graphKeys));
    }
    return outside;
  }

  /**
   * Knowledge bases past the graph threshold whose graph is not a file the builder wrote (none yet,
   * or one held in memory): a snapshot that links the engine's graphs has none for them, where a
   * snapshot built whole builds one.
   */
  graphsOutsideFiles(): number {
    let n = 0;
    for (const kb of this.kbs.values()) {
      const vectors = kb.vectors;
      if (vectors && vectors.size >= this.graphThreshold && !(vectors.hasGraph && vectors.servesView)) n++;
    }
    return n;
  }

  /** Save every HNSW graph (to `pathOf(kbId)`), with the documents each holds. */
  saveGraphs(pathOf: (kbId: string) => string, viewsOnly = false): SavedGraph[] {
    const out: SavedGraph[] = [];
    for (const [kbId, kb] of this.kbs) {
      const path = pathOf(kbId);
      const saved = kb.saveGraph(path, viewsOnly);
      if (saved) out.push({ kbId, path, ...saved });
    }
    return out;
  }

  retryContent(record: RecordOf<'content.retry'>): void {
    // Re-queued by the caller, or at start-up after a crash.
    const kb = this.kbs.get(record.kbId)!;
    markPending(kb, kb.contents.get(record.id)!);
  }
}
