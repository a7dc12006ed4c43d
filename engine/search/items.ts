// Which chunks belong together: the content item of each chunk document. The BM25 index counts
// items, not chunks (its groups: engine/bm25/inverted-index.ts), and scores an item as one
// document; it learns the items here, at search time, for the chunks added since it last asked
// (syncItems), together with what neighbouring chunks' overlaps count twice, so that an item
// scores as its text once. Read from the knowledge base; nothing is stored beyond the index.
import { termVector } from '../analysis/analyzer';
import type { GroupOverlap, InvertedIndex } from '../bm25/inverted-index';
import type { ContentItem, KnowledgeBase } from '../kb/knowledge-base';

export interface ItemChunks {
  /** The item's chunk documents, ascending. */
  docs: readonly number[];
  /** The text the chunks' spans point into. */
  text: string;
}

export interface ItemView {
  /** The items of the given live documents, each once. */
  itemsOf(docs: readonly number[]): ItemChunks[];
}

/**
 * Tell the index the items of the chunks added since the last call: a search does this for what
 * the background settling (ItemSettler) has not done yet; otherwise it costs one comparison.
 * `limit`: at most about this many chunks (whole items), for settling in runs; whether all are done.
 */
export function syncItems(index: InvertedIndex, items: ItemView, limit = Number.POSITIVE_INFINITY): boolean {
  const fresh = index.unsettled(limit);
  if (fresh.length === 0) return true;
  // An item's chunks are consecutive documents: the last item taken may reach past the slice.
  let upTo = fresh[fresh.length - 1]!;
  for (const item of items.itemsOf(fresh)) {
    if (item.docs.length > 1) index.group(item.docs, overlapOf(index, item));
    upTo = Math.max(upTo, item.docs[item.docs.length - 1]!);
  }
  if (fresh.length < limit) {
    index.settle();
    return true;
  }
  index.settle(upTo);
  return false;
}

/**
 * Groups items in the background shortly after they are indexed, in runs of SETTLE_RUN chunks a
 * turn of the event loop, so that no search pays for many at once: after a bulk load of a million
 * chunks the first full-text search grouped every item, 3.4 s.
 */
export class ItemSettler {
  private readonly waiting = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(
    private readonly knowledgeBases: ReadonlyMap<string, KnowledgeBase>,
    private readonly delayMs = 250,
  ) {}

  /** The knowledge base has chunks its active index may not have grouped yet. */
  indexed(kbId: string): void {
    if (this.stopped) return;
    this.waiting.add(kbId);
    this.schedule(this.delayMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting.clear();
  }

  private schedule(ms: number): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => this.run(), ms);
    this.timer.unref?.();
  }

  private run(): void {
    this.timer = undefined;
    for (const kbId of this.waiting) {
      const kb = this.knowledgeBases.get(kbId);
      try {
        if (!kb || syncItems(kb.bm25, kbItems(kb), SETTLE_RUN)) this.waiting.delete(kbId);
      } catch {
        // Nothing to crash the process for from a timer: the next search groups what is left, and a
        // failure there is answered to its caller.
        this.waiting.delete(kbId);
      }
    }
    if (this.waiting.size > 0) this.schedule(0);
  }
}

/** Chunks grouped per turn in the background (a few milliseconds). */
const SETTLE_RUN = 4096;

/**
 * The terms neighbouring chunks both hold: the text from where a chunk starts to where the one
 * before it ends. The chunker starts and ends chunks at whitespace, so this text analyzes to
 * exactly the terms both chunks counted.
 */
function overlapOf(index: InvertedIndex, item: ItemChunks): GroupOverlap | undefined {
  const parts: string[] = [];
  let prev = index.spanOf(item.docs[0]!);
  for (let i = 1; i < item.docs.length; i++) {
    const span = index.spanOf(item.docs[i]!);
    if (prev && span && span.start < prev.end) parts.push(item.text.slice(span.start, prev.end));
    prev = span;
  }
  return parts.length === 0 ? undefined : termVector(parts.join('\n'));
}

/** Above this share of the items in new chunks, their items are found by one pass over the items instead of one lookup each. */
const LOOKUP_SHARE = 1 / 8;

export function kbItems(kb: KnowledgeBase): ItemView {
  return {
    itemsOf(docs) {
      const out: ItemChunks[] = [];
      const seen = new Set<string>();
      const take = (item: ContentItem | undefined) => {
        const live = item?.live;
        if (!item || !live || live.docs.length === 0 || seen.has(item.id)) return;
        seen.add(item.id);
        const { version } = live;
        // Read when used (items of several chunks): the text may be in a store out of the heap.
        out.push({
          docs: live.docs,
          get text() {
            return version.text;
          },
        });
      };
      if (docs.length === 0) return out;
      if (docs.length > 256 && docs.length > kb.contents.size * LOOKUP_SHARE) {
        // The new chunks are the documents from docs[0] on: the items whose chunks start there.
        const from = docs[0]!;
        for (const item of kb.contents.values()) if (item.live && item.live.docs.length > 0 && item.live.docs[0]! >= from) take(item);
      } else {
        for (const hit of kb.hits(docs.map((doc) => ({ doc, score: 0 })))) take(kb.contents.get(hit.contentId));
      }
      return out;
    },
  };
}

/** Items given as arrays (benchmarks): `owner[doc]` is a document's item, `docs[item]` its documents, `texts[item]` its text. */
export function arrayItems(owner: readonly number[], docs: readonly (readonly number[])[], texts: readonly string[]): ItemView {
  return {
    itemsOf(ds) {
      const items = [...new Set(ds.map((d) => owner[d]!))];
      return items.map((i) => ({ docs: docs[i]!, text: texts[i]! }));
    },
  };
}
