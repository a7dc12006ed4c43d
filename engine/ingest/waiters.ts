// Callers waiting for a content item's outcome (`?wait=true`): resolved once the record that
// settles the item (indexed, failed or deleted) is durable, or at their timeout.
import type { ContentItem, KnowledgeBase } from '../kb/knowledge-base';
import type { LogRecord } from '../records';
import { isSettled } from '../state/content-status';

interface Waiter {
  version: number;
  resolve: () => void;
}

export class ContentWaiters {
  private readonly waiting = new Map<string, Set<Waiter>>();

  /** Resolve once the item's current version is ready or failed (or the item deleted), or at the timeout. */
  wait(item: ContentItem, timeoutMs: number): Promise<void> {
    if (isSettled(item)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = { version: item.current.version, resolve: () => done() };
      const key = `${item.kbId}/${item.id}`;
      let set = this.waiting.get(key);
      if (!set) this.waiting.set(key, (set = new Set()));
      set.add(waiter);
      const timer = setTimeout(() => done(), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        set!.delete(waiter);
        if (set!.size === 0) this.waiting.delete(key);
        resolve();
      };
    });
  }

  /** A record applied earlier is durable now: whoever waits for the item it settles may answer. */
  settled(record: LogRecord, kbs: ReadonlyMap<string, KnowledgeBase>): void {
    if (record.t === 'content.indexed' || record.t === 'content.failed' || record.t === 'content.delete') {
      this.notify(record.kbId, record.id, kbs.get(record.kbId)?.contents.get(record.id));
    }
  }

  /** The item (undefined: deleted) may have settled: wake whoever waits for a version it reached. */
  notify(kbId: string, id: string, item: ContentItem | undefined): void {
    const set = this.waiting.get(`${kbId}/${id}`);
    if (!set) return;
    if (item && !isSettled(item)) return;
    for (const w of [...set]) if (!item || w.version <= item.current.version) w.resolve();
  }
}
