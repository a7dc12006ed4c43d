// Log compaction: fold records into the smallest set that rebuilds the same state — the latest
// knowledge base records, and per content item the version whose chunks answer searches (its put
// and indexed records), the newest put when it is newer, and a failure or re-index request of the
// newest version. Deleted items and superseded versions disappear. Which records apply is decided
// by the engine's state machine (applyRecord), the same that builds the state in memory; indexed
// records carry their document numbers, so replaying the result numbers documents identically.
import { applyRecord, decodePayload, encodePayload, statusAfterIndexed, type ContentStatus, type LogRecord, type RecordOf, type StateTarget } from '../engine';

export interface KeptRecord {
  seq: number;
  record: LogRecord;
  /** The record's encoded payload (record and attachment), re-emitted unchanged. */
  payload: Uint8Array;
  attachment: Uint8Array;
}

interface ContentEntry {
  kbId: string;
  status: ContentStatus;
  version: number;
  latestPut: KeptRecord;
  live?: { put: KeptRecord; indexed: KeptRecord };
  failed?: KeptRecord;
  /** A re-index of the newest version asked for after it failed. */
  retry?: KeptRecord;
}

const key = (kbId: string, id: string) => `${kbId}/${id}`;

export class Compactor implements StateTarget {
  private readonly kbs = new Map<string, { create: KeptRecord; update?: KeptRecord }>();
  private readonly contents = new Map<string, ContentEntry>();
  /** Document numbers handed out per knowledge base (as the live state counts them). */
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
    applyRecord(this, kept.record, kept.attachment);
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

  contentState(kbId: string, id: string) {
    const entry = this.contents.get(key(kbId, id));
    return entry && { version: entry.version, status: entry.status };
  }

  docSpace(kbId: string): number {
    return this.docSpaces.get(kbId) ?? 0;
  }

  /**
   * The state machine settled a field differently from what the record's writer proposed (a
   * version or document number taken meanwhile by another node's write): the kept record says
   * what was applied, so replaying the snapshot rebuilds exactly this state.
   */
  private settle(fields: { version: number } | { firstDoc: number }): void {
    const { record, attachment } = decodePayload<LogRecord>(this.current.payload);
    this.current = {
      ...this.current,
      record: { ...this.current.record, ...fields } as LogRecord,
      payload: encodePayload({ ...record, ...fields }, attachment.length > 0 ? attachment : undefined),
    };
  }

  createKnowledgeBase(record: RecordOf<'kb.create'>): void {
    this.kbs.set(record.kb.id, { create: this.current });
    // As in memory, a knowledge base made again starts empty.
    this.elsewhere.delete(record.kb.id);
  }

  updateKnowledgeBase(record: RecordOf<'kb.update'>): void {
    this.kbs.get(record.id)!.update = this.current;
  }

  deleteKnowledgeBase(record: RecordOf<'kb.delete'>): void {
    this.kbs.delete(record.id);
    this.docSpaces.delete(record.id);
    this.elsewhere.delete(record.id);
    for (const [k, c] of this.contents) if (c.kbId === record.id) this.contents.delete(k);
  }

  putContent(record: RecordOf<'content.put'>): void {
    if (record.version !== (this.current.record as RecordOf<'content.put'>).version) this.settle({ version: record.version });
    const entry = this.contents.get(key(record.kbId, record.id));
    if (entry) {
      entry.latestPut = this.current;
      entry.version = record.version;
      entry.status = 'pending';
      entry.failed = undefined;
      entry.retry = undefined;
    } else {
      this.contents.set(key(record.kbId, record.id), { kbId: record.kbId, status: 'pending', version: record.version, latestPut: this.current });
    }
  }

  deleteContent(record: RecordOf<'content.delete'>): void {
    this.contents.delete(key(record.kbId, record.id));
  }

  indexContent(record: RecordOf<'content.indexed'>): void {
    if (record.firstDoc !== (this.current.record as RecordOf<'content.indexed'>).firstDoc) this.settle({ firstDoc: record.firstDoc });
    this.docSpaces.set(record.kbId, record.firstDoc + record.chunks.length);
    const entry = this.contents.get(key(record.kbId, record.id))!;
    entry.live = { put: entry.latestPut, indexed: this.current };
    entry.status = statusAfterIndexed(record);
    entry.failed = undefined;
    entry.retry = undefined;
  }

  failContent(record: RecordOf<'content.failed'>): void {
    const entry = this.contents.get(key(record.kbId, record.id))!;
    entry.status = 'failed';
    entry.failed = this.current;
    entry.retry = undefined;
  }

  retryContent(record: RecordOf<'content.retry'>): void {
    const entry = this.contents.get(key(record.kbId, record.id))!;
    entry.status = 'pending';
    entry.failed = undefined;
    entry.retry = this.current;
  }

  /** The kept records in log order. */
  kept(): KeptRecord[] {
    const out: KeptRecord[] = [];
    for (const kb of this.kbs.values()) {
      out.push(kb.create);
      if (kb.update) out.push(kb.update);
    }
    for (const c of this.contents.values()) {
      if (c.live) out.push(c.live.put, c.live.indexed);
      if (c.latestPut !== c.live?.put) out.push(c.latestPut);
      if (c.failed) out.push(c.failed);
      if (c.retry) out.push(c.retry);
    }
    // One census per knowledge base kept elsewhere, in place of its content records (which are not
    // kept): numbered as the last record that changed it, which is not kept either.
    for (const [kbId, { ids, seq }] of this.elsewhere) {
      if (ids.size === 0) continue;
      const record: LogRecord = { t: 'kb.census', kbId, ids: [...ids] };
      out.push({ seq, record, payload: encodePayload(record), attachment: new Uint8Array(0) });
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  get stats(): { knowledgeBases: number; contents: number; chunks: number } {
    let chunks = 0;
    for (const c of this.contents.values()) if (c.live?.indexed.record.t === 'content.indexed') chunks += c.live.indexed.record.chunks.length;
    return { knowledgeBases: this.kbs.size, contents: this.contents.size, chunks };
  }
}
