// The state machine: the one place that decides what a log record means. Replay at start-up, live
// writes, and snapshot compaction all feed records through applyRecord, each with its own target:
// the live state (indexes in memory, engine/state/live-state.ts) or the compactor (which keeps the
// records that still matter, snapshots/compactor.ts). A record that no longer applies (its
// knowledge base deleted, its version superseded, its analyzer outdated, its configuration no longer
// built) is a no-op for every target alike, so every replica of the log rebuilds the same state.
import type { EncodedText } from '../text/encoded-text';
import { analyzerOf, indexesAlike, type ContentStatus, type KnowledgeBaseConfig, type LogRecord } from '../records';

/** The log record of one type. */
export type RecordOf<T extends LogRecord['t']> = Extract<LogRecord, { t: T }>;

/** What a target holds and what it does with each record the machine lets through. */
export interface StateTarget {
  hasKnowledgeBase(kbId: string): boolean;
  /**
   * Whether content of the knowledge base is kept here (cluster mode with shards: only on nodes
   * holding its shard; see engine/shards.ts). Knowledge-base records apply everywhere.
   */
  holdsContent(kbId: string): boolean;
  /** A knowledge base whose content is kept elsewhere: item `id` exists (a put) or no longer does (a delete). */
  itemElsewhere(kbId: string, id: string, exists: boolean): void;
  /** A knowledge base whose content is kept elsewhere: its items, as a snapshot counted them (kb.census). */
  setItemsElsewhere(kbId: string, ids: readonly string[]): void;
  /**
   * The item's newest version and its status in a configuration (absent: the active one); undefined
   * when there is no such item, or the knowledge base has no such configuration (active or being built).
   */
  contentState(kbId: string, id: string, configId?: string): { version: number; status: ContentStatus } | undefined;
  /** Document numbers a configuration of the knowledge base has handed out (the next indexed chunk gets this one or later). */
  docSpace(kbId: string, configId?: string): number;
  /** The knowledge base's active configuration and the one being built, if any. */
  configs(kbId: string): { active: KnowledgeBaseConfig; building?: KnowledgeBaseConfig } | undefined;

  createKnowledgeBase(record: RecordOf<'kb.create'>): void;
  updateKnowledgeBase(record: RecordOf<'kb.update'>): void;
  deleteKnowledgeBase(record: RecordOf<'kb.delete'>): void;
  /** Start building the record's configuration (dropping a build of another one). */
  startBuilding(record: RecordOf<'kb.reconfigure'>): void;
  /** Drop the build under way (the record's configuration indexes as the active one). */
  cancelBuilding(record: RecordOf<'kb.reconfigure'>): void;
  /** The configuration built answers from now on. */
  activateBuilding(record: RecordOf<'kb.activate'>): void;
  /** A new item, or a new version of one (status pending); `text`: its text as a snapshot stored it (the record's is then empty). */
  putContent(record: RecordOf<'content.put'>, text?: EncodedText): void;
  deleteContent(record: RecordOf<'content.delete'>): void;
  /** Chunks (and vectors, in `attachment`) of the item's newest version: ready, or failed with `embeddingError`. */
  indexContent(record: RecordOf<'content.indexed'>, attachment: Uint8Array | undefined): void;
  /** The newest version could not be indexed. */
  failContent(record: RecordOf<'content.failed'>): void;
  /** A failed newest version goes back to pending, to be indexed again. */
  retryContent(record: RecordOf<'content.retry'>): void;
}

/** Apply one record to `target`. Returns whether it applied (false: a no-op, see above). */
export function applyRecord(target: StateTarget, record: LogRecord, attachment?: Uint8Array, text?: EncodedText): boolean {
  if (record.t.startsWith('content.')) {
    const { kbId } = record as { kbId: string };
    if (!target.holdsContent(kbId)) {
      // Kept elsewhere: only which items exist is followed here (the content quota counts them).
      // The same rule as below: a put on a live knowledge base makes the item exist, a delete ends it.
      if (target.hasKnowledgeBase(kbId) && (record.t === 'content.put' || record.t === 'content.delete'))
        target.itemElsewhere(kbId, record.id, record.t === 'content.put');
      return false;
    }
  }
  switch (record.t) {
    case 'kb.create':
      target.createKnowledgeBase(record);
      return true;
    case 'kb.update':
      if (!target.hasKnowledgeBase(record.id)) return false;
      target.updateKnowledgeBase(record);
      return true;
    case 'kb.delete':
      if (!target.hasKnowledgeBase(record.id)) return false;
      target.deleteKnowledgeBase(record);
      return true;
    case 'kb.reconfigure': {
      const configs = target.configs(record.kbId);
      if (!configs) return false;
      // Back to what the active configuration does: the build under way is no longer wanted.
      if (indexesAlike(record.config, configs.active)) {
        if (!configs.building) return false;
        target.cancelBuilding(record);
        return true;
      }
      // Every node of a cluster may ask for the same build at start-up: the first one counts.
      if (configs.building && indexesAlike(record.config, configs.building)) return false;
      target.startBuilding(record);
      return true;
    }
    case 'kb.activate': {
      const building = target.configs(record.kbId)?.building;
      if (building?.id !== record.configId) return false;
      target.activateBuilding(record);
      return true;
    }
    case 'kb.census':
      if (!target.hasKnowledgeBase(record.kbId) || target.holdsContent(record.kbId)) return false;
      target.setItemsElsewhere(record.kbId, record.ids);
      return true;
    case 'content.put': {
      if (!target.hasKnowledgeBase(record.kbId)) return false;
      // Two nodes of a cluster may update one item at once, each from the same state: a version
      // is always newer than the newest applied, whatever number its writer expected.
      const item = target.contentState(record.kbId, record.id);
      const version = item && record.version <= item.version ? item.version + 1 : record.version;
      target.putContent(version === record.version ? record : { ...record, version }, text);
      return true;
    }
    case 'content.delete':
      if (!target.contentState(record.kbId, record.id)) return false;
      target.deleteContent(record);
      return true;
    case 'content.indexed': {
      // A result for a version since replaced is stale (the newer one follows); so is one made by an
      // analyzer older than the configuration's (the item stays pending, to be analyzed again).
      const item = target.contentState(record.kbId, record.id, record.configId);
      if (!item || item.version !== record.version || record.analyzer < analyzerOf(configOf(target, record.kbId, record.configId))) return false;
      // A second result for the same version (a job redelivered to another node) changes nothing.
      if (item.status === 'ready' || item.status === 'failed') return false;
      // Document numbers: the writer proposes the next free one; when another result took it
      // meanwhile (cluster mode), the next free one at this point of the log is used instead.
      const free = target.docSpace(record.kbId, record.configId);
      const firstDoc = Math.max(record.firstDoc ?? free, free);
      target.indexContent(firstDoc === record.firstDoc ? record : { ...record, firstDoc }, attachment);
      return true;
    }
    case 'content.failed': {
      const item = target.contentState(record.kbId, record.id, record.configId);
      if (!item || item.version !== record.version || item.status === 'ready' || item.status === 'failed') return false;
      target.failContent(record);
      return true;
    }
    case 'log.mark':
      return false;
    case 'content.retry': {
      const item = target.contentState(record.kbId, record.id);
      if (!item || item.version !== record.version || item.status !== 'failed') return false;
      target.retryContent(record);
      return true;
    }
  }
}

/** The configuration a record is for (its knowledge base exists and has it: checked before). */
function configOf(target: StateTarget, kbId: string, configId: string | undefined): KnowledgeBaseConfig {
  const { active, building } = target.configs(kbId)!;
  return configId !== undefined && building?.id === configId ? building : active;
}

/** The status an indexed record leaves its item in. */
export function statusAfterIndexed(record: RecordOf<'content.indexed'>): Extract<ContentStatus, 'ready' | 'failed'> {
  return record.embeddingError === undefined ? 'ready' : 'failed';
}
