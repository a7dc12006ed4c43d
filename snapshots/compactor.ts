// Log compaction: fold records into the smallest set that rebuilds the same state — one record per
// knowledge base as it is now (its creation, with the latest name and description and the active
// configuration folded in), the build of another configuration under way (re-embedding), and per
// content item the version whose chunks answer searches (its put and indexed records), the newest
// put when it is newer, a failure or re-index request of the newest version, and the same for the
// configuration being built. Deleted items, superseded versions and replaced configurations
// disappear. Which records apply is decided
// by the engine's state machine (applyRecord), the same that builds the state in memory; indexed
// records carry their document numbers, so replaying the result numbers documents identically.
import {
  applyRecord,
  encodePayload,
  statusAfterIndexed,
  type ContentStatus,
  type KnowledgeBaseConfig,
  type KnowledgeBaseRecord,
  type LogRecord,
  type RecordOf,
  type StateTarget,
} from '../engine';

/**
 * A record as compaction reads it: only what the state machine needs (snapshots/build.ts drops
 * texts and terms), never its payload, so that compacting a million chunks holds no payload bytes.
 * The builder writes a kept record's payload by reading its input again (the records are kept in
 * log order), unless `payload` says what to write instead.
 */
export interface KeptRecord {
  seq: number;
  record: LogRecord;
  /** Bytes of the record's attachment (vectors), at the end of its payload. */
  attachmentBytes: number;
  /** Fields the state machine settled differently from the record as written (applied to its payload when written). */
  settled?: { version: number } | { firstDoc: number };
  /** A record compaction made (a knowledge base's creation as it is now, a census): written in place of the input's. */
  payload?: Uint8Array;
}

interface KbEntry {
  create: KeptRecord;
  /** The knowledge base as it is now. */
  record: KnowledgeBaseRecord;
  /** Whether a later record changed it (an update, an activation): then a new create record says so. */
  changed: boolean;
  /** The configuration being built, and the record that started it. */
  building?: { config: KnowledgeBaseConfig; started: KeptRecord };
}

/** Where an item stands in one configuration. */
interface Indexing {
  status: ContentStatus;
  live?: { put: KeptRecord; indexed: KeptRecord };
  failed?: KeptRecord;
}

interface ContentEntry {
  kbId: string;
  version: number;
  latestPut: KeptRecord;
  /** In the active configuration. */
  active: Indexing;
  /** A re-index of the newest version asked for after it failed. */
  retry?: KeptRecord;
  /** In the configuration being built, if any. */
  next: Indexing;
}

const key = (kbId: string, id: string) => `${kbId}/${id}`;

export class Compactor implements StateTarget {
  private readonly kbs = new Map<string, KbEntry>();
  private readonly contents = new Map<string, ContentEntry>();
  /** Document numbers handed out per configuration of a knowledge base (as the live state counts them). */
  private readonly docSpaces = new Map<string, number>();
  /** Knowledge bases whose content the snapshot leaves out: their item ids and the last record that changed them. */
  private readonly elsewhere = new Map<string, { ids: Set<string>; seq: number }>();
  /** The record being added (the target methods receive only its decoded part). */
  private current!: KeptRecord;
  records = 0;

  /** `holds`: the knowledge bases whose content the snapshot keeps (a node's shards; default all). */
  constructor(private readonly holds: (kbId: string) => boolean = () => true) {}

  add(kept: KeptRecord): void {
    this.records++;
    this.current = kept;
    applyRecord(this, kept.record);
  }

  hasKnowledgeBase(kbId: string): boolean {
    return this.kbs.has(kbId);
  }

  holdsContent(kbId: string): boolean {
    return this.holds(kbId);
  }

  itemElsewhere(kbId: string, id: string, exists: boolean): void {
    const entry = this.elsewhere.get(kbId) ?? { ids: new Set<string>(), seq: 0 };
    if (exists) entry.ids.add(id);
    else entry.ids.delete(id);
    entry.seq = this.current.seq;
    this.elsewhere.set(kbId, entry);
  }

  setItemsElsewhere(kbId: string, ids: readonly string[]): void {
    this.elsewhere.set(kbId, { ids: new Set(ids), seq: this.current.seq });
  }

  /** Which side of an item a configuration is: the active one (also for no id), the one being built, or none. */
  private side(kbId: string, configId: string | undefined): 'active' | 'next' | undefined {
    const kb = this.kbs.get(kbId);
    if (!kb) return undefined;
    if (configId === undefined || configId === kb.record.config.id) return 'active';
    return kb.building?.config.id === configId ? 'next' : undefined;
  }

  contentState(kbId: string, id: string, configId?: string) {
    const entry = this.contents.get(key(kbId, id));
    const side = this.side(kbId, configId);
    return entry && side && { version: entry.version, status: entry[side].status };
  }

  private spaceKey(kbId: string, configId: string | undefined): string {
    return `${kbId}/${configId ?? this.kbs.get(kbId)?.record.config.id}`;
  }

  docSpace(kbId: string, configId?: string): number {
    return this.docSpaces.get(this.spaceKey(kbId, configId)) ?? 0;
  }

  configs(kbId: string) {
    const kb = this.kbs.get(kbId);
    return kb && { active: kb.record.config, building: kb.building?.config };
  }

  private entriesOf(kbId: string): ContentEntry[] {
    return [...this.contents.values()].filter((c) => c.kbId === kbId);
  }

  startBuilding(record: RecordOf<'kb.reconfigure'>): void {
    this.kbs.get(record.kbId)!.building = { config: record.config, started: this.current };
    for (const c of this.entriesOf(record.kbId)) c.next = { status: 'pending' };
  }

  cancelBuilding(record: RecordOf<'kb.reconfigure'>): void {
    this.kbs.get(record.kbId)!.building = undefined;
    for (const c of this.entriesOf(record.kbId)) c.next = { status: 'pending' };
  }

  activateBuilding(record: RecordOf<'kb.activate'>): void {
    const kb = this.kbs.get(record.kbId)!;
    kb.record = { ...kb.record, config: kb.building!.config, updatedAt: record.at };
    kb.changed = true;
    kb.building = undefined;
    for (const c of this.entriesOf(record.kbId)) {
      c.active = c.next;
      c.retry = undefined;
      c.next = { status: 'pending' };
    }
  }

  /**
   * The state machine settled a field differently from what the record's writer proposed (a
   * version or document number taken meanwhile by another node's write): the kept record says
   * what was applied, so replaying the snapshot rebuilds exactly this state.
   */
  private settle(fields: { version: number } | { firstDoc: number }): void {
    this.current = { ...this.current, record: { ...this.current.record, ...fields } as LogRecord, settled: { ...this.current.settled, ...fields } };
  }

  createKnowledgeBase(record: RecordOf<'kb.create'>): void {
    this.kbs.set(record.kb.id, { create: this.current, record: record.kb, changed: false });
    // As in memory, a knowledge base made again starts empty.
    this.forgetContents(record.kb.id);
  }

  updateKnowledgeBase(record: RecordOf<'kb.update'>): void {
    const kb = this.kbs.get(record.id)!;
    kb.record = { ...kb.record, name: record.name, description: record.description, updatedAt: record.at };
    kb.changed = true;
  }

  deleteKnowledgeBase(record: RecordOf<'kb.delete'>): void {
    this.kbs.delete(record.id);
    this.forgetContents(record.id);
  }

  /** The knowledge base's items, document numbers and items kept elsewhere. */
  private forgetContents(kbId: string): void {
    for (const k of this.docSpaces.keys()) if (k.startsWith(`${kbId}/`)) this.docSpaces.delete(k);
    this.elsewhere.delete(kbId);
    for (const [k, c] of this.contents) if (c.kbId === kbId) this.contents.delete(k);
  }

  putContent(record: RecordOf<'content.put'>): void {
    if (record.version !== (this.current.record as RecordOf<'content.put'>).version) this.settle({ version: record.version });
    const entry = this.contents.get(key(record.kbId, record.id));
    if (entry) {
      entry.latestPut = this.current;
      entry.version = record.version;
      entry.active = { status: 'pending', live: entry.active.live };
      entry.next = { status: 'pending', live: entry.next.live };
      entry.retry = undefined;
    } else {
      this.contents.set(key(record.kbId, record.id), {
        kbId: record.kbId,
        version: record.version,
        latestPut: this.current,
        active: { status: 'pending' },
        next: { status: 'pending' },
      });
    }
  }

  deleteContent(record: RecordOf<'content.delete'>): void {
    this.contents.delete(key(record.kbId, record.id));
  }

  indexContent(record: RecordOf<'content.indexed'>): void {
    if (record.firstDoc !== (this.current.record as RecordOf<'content.indexed'>).firstDoc) this.settle({ firstDoc: record.firstDoc });
    this.docSpaces.set(this.spaceKey(record.kbId, record.configId), record.firstDoc + record.chunks.length);
    const entry = this.contents.get(key(record.kbId, record.id))!;
    const side = this.side(record.kbId, record.configId)!;
    entry[side] = { status: statusAfterIndexed(record), live: { put: entry.latestPut, indexed: this.current } };
    if (side === 'active') entry.retry = undefined;
  }

  failContent(record: RecordOf<'content.failed'>): void {
    const entry = this.contents.get(key(record.kbId, record.id))!;
    const side = this.side(record.kbId, record.configId)!;
    // A re-index asked for before stays: the failure of the version it queued applies only after it.
    entry[side] = { status: 'failed', live: entry[side].live, failed: this.current };
  }

  retryContent(record: RecordOf<'content.retry'>): void {
    const entry = this.contents.get(key(record.kbId, record.id))!;
    entry.active = { status: 'pending', live: entry.active.live };
    entry.retry = this.current;
  }

  /** The kept records in log order. */
  kept(): KeptRecord[] {
    const out: KeptRecord[] = [];
    for (const kb of this.kbs.values()) {
      // Changed since its creation: one create record of the knowledge base as it is now, in place
      // of its updates and activations (numbered as the creation, before anything about its items).
      if (!kb.changed) out.push(kb.create);
      else {
        const record: LogRecord = { t: 'kb.create', kb: kb.record };
        out.push({ seq: kb.create.seq, record, attachmentBytes: 0, payload: encodePayload(record) });
      }
      if (kb.building) out.push(kb.building.started);
    }
    for (const c of this.contents.values()) {
      // A put can serve both configurations and the newest version: each record once.
      const kept = new Set<KeptRecord>();
      for (const side of [c.active, c.next]) {
        if (side.live) kept.add(side.live.put).add(side.live.indexed);
        if (side.failed) kept.add(side.failed);
      }
      kept.add(c.latestPut);
      if (c.retry) kept.add(c.retry);
      out.push(...kept);
    }
    // One census per knowledge base kept elsewhere, in place of its content records (which are not
    // kept): numbered as the last record that changed it, which is not kept either.
    for (const [kbId, { ids, seq }] of this.elsewhere) {
      if (ids.size === 0) continue;
      const record: LogRecord = { t: 'kb.census', kbId, ids: [...ids] };
      out.push({ seq, record, attachmentBytes: 0, payload: encodePayload(record) });
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  get stats(): { knowledgeBases: number; contents: number; chunks: number } {
    let chunks = 0;
    for (const c of this.contents.values()) if (c.active.live?.indexed.record.t === 'content.indexed') chunks += c.active.live.indexed.record.chunks.length;
    return { knowledgeBases: this.kbs.size, contents: this.contents.size, chunks };
  }
}
