// Log compaction: fold records into the smallest set that rebuilds the same state — the latest
// knowledge base records, and per content item the version whose chunks answer searches (its put
// and indexed records), the newest put when it is newer, and a failure of the newest version.
// Deleted items and superseded versions disappear. The decisions mirror Engine.apply; indexed
// records carry their document numbers, so replaying the result numbers documents identically.
import { ANALYZER_VERSION } from '../analysis/analyzer';
import type { LogRecord } from '../records';

export interface KeptRecord {
  seq: number;
  record: LogRecord;
  /** The record's encoded payload (record and attachment), re-emitted unchanged. */
  payload: Uint8Array;
  attachment: Uint8Array;
}

interface ContentEntry {
  kbId: string;
  latestPut: KeptRecord;
  live?: { put: KeptRecord; indexed: KeptRecord };
  failed?: KeptRecord;
  /** A re-index of the newest version asked for after it failed. */
  retry?: KeptRecord;
}

const key = (kbId: string, id: string) => `${kbId}/${id}`;

export class Compactor {
  private readonly kbs = new Map<string, { create: KeptRecord; update?: KeptRecord }>();
  private readonly contents = new Map<string, ContentEntry>();
  records = 0;

  add(kept: KeptRecord): void {
    this.records++;
    const r = kept.record;
    switch (r.t) {
      case 'kb.create':
        this.kbs.set(r.kb.id, { create: kept });
        break;
      case 'kb.update': {
        const kb = this.kbs.get(r.id);
        if (kb) kb.update = kept;
        break;
      }
      case 'kb.delete':
        if (!this.kbs.delete(r.id)) break;
        for (const [k, c] of this.contents) if (c.kbId === r.id) this.contents.delete(k);
        break;
      case 'content.put': {
        if (!this.kbs.has(r.kbId)) break;
        const entry = this.contents.get(key(r.kbId, r.id));
        if (entry) {
          entry.latestPut = kept;
          entry.failed = undefined;
          entry.retry = undefined;
        } else {
          this.contents.set(key(r.kbId, r.id), { kbId: r.kbId, latestPut: kept });
        }
        break;
      }
      case 'content.delete':
        this.contents.delete(key(r.kbId, r.id));
        break;
      case 'content.indexed': {
        const entry = this.contents.get(key(r.kbId, r.id));
        const put = entry?.latestPut.record;
        if (!entry || put?.t !== 'content.put' || put.version !== r.version || r.analyzer !== ANALYZER_VERSION) break;
        entry.live = { put: entry.latestPut, indexed: kept };
        entry.failed = undefined;
        entry.retry = undefined;
        break;
      }
      case 'content.failed': {
        const entry = this.contents.get(key(r.kbId, r.id));
        const put = entry?.latestPut.record;
        if (entry && put?.t === 'content.put' && put.version === r.version) {
          entry.failed = kept;
          entry.retry = undefined;
        }
        break;
      }
      case 'content.retry': {
        const entry = this.contents.get(key(r.kbId, r.id));
        const put = entry?.latestPut.record;
        if (entry && put?.t === 'content.put' && put.version === r.version) {
          entry.failed = undefined;
          entry.retry = kept;
        }
        break;
      }
    }
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
    return out.sort((a, b) => a.seq - b.seq);
  }

  get stats(): { knowledgeBases: number; contents: number; chunks: number } {
    let chunks = 0;
    for (const c of this.contents.values()) if (c.live?.indexed.record.t === 'content.indexed') chunks += c.live.indexed.record.chunks.length;
    return { knowledgeBases: this.kbs.size, contents: this.contents.size, chunks };
  }
}
