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
 * Tell the index the items of the chunks added since the last call: after a write, the next search
 * does this once (a restart's first search for every item); otherwise it costs one comparison.
 */
export function syncItems(index: InvertedIndex, items: ItemView): void {
  const fresh = index.unsettled();
  if (fresh.length === 0) return;
  for (const item of items.itemsOf(fresh)) if (item.docs.length > 1) index.group(item.docs, overlapOf(index, item));
  index.settle();
}

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

/** Above this many new chunks, their items are found by one pass over the items instead of one lookup each. */
const LOOKUP_LIMIT = 256;

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
      if (docs.length > LOOKUP_LIMIT) {
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
