// What a snapshot keeps of a knowledge base's content items (issue 25): every item with its newest
// version and the version whose chunks answer searches, in columns, each stored text as its place
// in the text store's file (which the snapshot links). A restart from a snapshot with item dumps
// builds the item table from them instead of replaying a put and an indexed record per item: at a
// million items that replay was most of the restart (decoding every record, and the item table
// built one map lookup at a time).
import type { Metadata } from '../filter/metadata';
import type { ContentSource, ContentStatus, KnowledgeBaseRecord } from '../records';
import type { TextStore } from '../text/text-store';
import type { ContentItem } from './knowledge-base';
import { isPlainTextSource, ItemVersion } from './version';

/** The columns of an item dump (snapshots/item-dump.ts writes them as sections). */
export interface ItemDump {
  /** The id clock when the dump was taken (engine/ids.ts): every id in it sorts at or before it. */
  clock: { ms: number; counter: number };
  kb: KnowledgeBaseRecord;
  /** Items in list order (createdAt, id); per item, indexes into `versions`. */
  items: {
    ids: string[];
    createdAt: string[];
    /** 0: the same as createdAt. */
    updatedAt: (string | 0)[];
    /** STATUSES index; an item being processed is dumped pending (a restart queues it again). */
    status: Uint8Array<ArrayBuffer>;
    /** The error of each failed item, by item index. */
    errors: [number, string][];
    current: Uint32Array<ArrayBuffer>;
    /** The version whose chunks answer searches; -1: none. */
    live: Int32Array<ArrayBuffer>;
    liveFirst: Int32Array<ArrayBuffer>;
    liveCount: Uint32Array<ArrayBuffer>;
    /** 1: the live chunks' vectors are rows of the set's vector file (0: none, their embedding failed). */
    liveVectors: Uint8Array<ArrayBuffer>;
  };
  versions: {
    number: Float64Array<ArrayBuffer>;
    metadata: Metadata[];
    /** Sources other than typed text, by version index. */
    sources: [number, ContentSource][];
    pages: [number, number[]][];
    /** Byte offset of the text in the text store's file; -1: held on the heap (in `held`). */
    textAt: Float64Array<ArrayBuffer>;
    /** Characters (UTF-16 code units). */
    textChars: Float64Array<ArrayBuffer>;
    /** 1: UTF-16LE in the file, 0: Latin-1. */
    textWide: Uint8Array<ArrayBuffer>;
    held: [number, string][];
  };
  /**
   * Present: a delta of an earlier full dump of the same knowledge base (its base): the rows are
   * the items changed since the base (new, updated, re-indexed, their status changed), and
   * `removed` the ids deleted since. A restart reads the base and the delta (applyItemDelta).
   */
  delta?: { removed: string[] };
  /** Not written: the full dump a later dump may be a delta of (KnowledgeBase.dumpItems, applyItemDelta). */
  mark?: ItemMark;
  /** Not written: the rows a delta gave, and the ids it removed, once merged with its base (applyItemDelta). */
  merged?: { changed: Uint8Array<ArrayBuffer>; removed: string[] };
}

/**
 * A full item dump, named by the knowledge base's lineage (the object KnowledgeBase keeps while
 * its items' change stamps count from the dump) and its change clock when the dump was taken:
 * items stamped later changed since.
 */
export interface ItemMark {
  readonly of: object;
  readonly epoch: number;
}

/** Item deltas are taken while they hold at most this share of the items (rows and removals); past it, a full dump. */
export const ITEM_DELTA_MAX_SHARE = 0.5;

const STATUSES: readonly ContentStatus[] = ['pending', 'ready', 'failed'];

/** The item columns of a dump of `n` items, to be filled. */
function itemColumns(n: number): ItemDump['items'] {
  return {
    ids: new Array(n),
    createdAt: new Array(n),
    updatedAt: new Array(n),
    status: new Uint8Array(n),
    errors: [],
    current: new Uint32Array(n),
    live: new Int32Array(n),
    liveFirst: new Int32Array(n),
    liveCount: new Uint32Array(n),
    liveVectors: new Uint8Array(n),
  };
}

/**
 * The dump of `items` (in list order, their live chunks those of the active set); `hasVector`:
 * whether a document's vector is stored. Texts in the store are dumped as their place in it, texts
 * held on the heap (an engine without a text store) as they are.
 */
export function dumpItems(
  kb: KnowledgeBaseRecord,
  items: readonly ContentItem[],
  hasVector: (doc: number) => boolean,
  clock: { ms: number; counter: number },
): ItemDump {
  const n = items.length;
  const versions: ItemVersion[] = [];
  const indexOf = (v: unknown): number => {
    if (!(v instanceof ItemVersion)) throw new Error('an item dump holds item versions only');
    return versions.push(v) - 1;
  };
  const out = itemColumns(n);
  for (let i = 0; i < n; i++) {
    const item = items[i]!;
    out.ids[i] = item.id;
    out.createdAt[i] = item.createdAt;
    out.updatedAt[i] = item.updatedAt === item.createdAt ? 0 : item.updatedAt;
    const status = item.status === 'processing' ? 0 : STATUSES.indexOf(item.status);
    out.status[i] = status;
    if (item.status === 'failed' && item.error !== undefined) out.errors.push([i, item.error]);
    const current = indexOf(item.current);
    out.current[i] = current;
    const live = item.live;
    if (!live) {
      out.live[i] = -1;
      continue;
    }
    out.live[i] = live.version === item.current ? current : indexOf(live.version);
    out.liveFirst[i] = live.first;
    out.liveCount[i] = live.count;
    out.liveVectors[i] = live.count > 0 && hasVector(live.first) ? 1 : 0;
  }
  const v = versions.length;
  const columns: ItemDump['versions'] = {
    number: new Float64Array(v),
    metadata: new Array(v),
    sources: [],
    pages: [],
    textAt: new Float64Array(v),
    textChars: new Float64Array(v),
    textWide: new Uint8Array(v),
    held: [],
  };
  for (let i = 0; i < v; i++) {
    const version = versions[i]!;
    columns.number[i] = version.version;
    columns.metadata[i] = version.metadata;
    if (!isPlainTextSource(version.source)) columns.sources.push([i, version.source]);
    if (version.pages !== undefined) columns.pages.push([i, version.pages]);
    const ref = version.storedRef;
    if (ref) {
      columns.textAt[i] = ref.at;
      columns.textChars[i] = ref.length;
      columns.textWide[i] = ref.wide ? 1 : 0;
    } else {
      columns.textAt[i] = -1;
      columns.held.push([i, version.text]);
    }
  }
  return { clock, kb, items: out, versions: columns };
}

/**
 * A full dump with a delta of it applied: the base's rows that the delta neither removed nor gave
 * again, merged in list order with the delta's rows (`merged` says which rows came from it). Version
 * columns are the base's then the delta's; versions only replaced rows used are never made
 * (loadItems makes versions as rows refer to them).
 */
export function applyItemDelta(base: ItemDump, delta: ItemDump): ItemDump {
  if (base.delta || !delta.delta) throw new Error('item delta: needs a full dump and a delta of it');
  if (base.kb.id !== delta.kb.id) throw new Error(`item delta of ${delta.kb.id} over a dump of ${base.kb.id}`);
  const b = base.items;
  const d = delta.items;
  const gone = new Set(delta.delta.removed);
  for (const id of d.ids) gone.add(id);
  const nb = b.ids.length;
  const nd = d.ids.length;
  let kept = 0;
  for (let i = 0; i < nb; i++) if (!gone.has(b.ids[i]!)) kept++;
  const n = kept + nd;
  const shift = base.versions.number.length;
  const out = itemColumns(n);
  const changed = new Uint8Array(n);
  const baseErrors = new Map(b.errors);
  const deltaErrors = new Map(d.errors);
  const copy = (from: ItemDump['items'], i: number, to: number, versionShift: number, errors: Map<number, string>) => {
    out.ids[to] = from.ids[i]!;
    out.createdAt[to] = from.createdAt[i]!;
    out.updatedAt[to] = from.updatedAt[i]!;
    out.status[to] = from.status[i]!;
    const error = errors.get(i);
    if (error !== undefined) out.errors.push([to, error]);
    out.current[to] = from.current[i]! + versionShift;
    out.live[to] = from.live[i]! < 0 ? -1 : from.live[i]! + versionShift;
    out.liveFirst[to] = from.liveFirst[i]!;
    out.liveCount[to] = from.liveCount[i]!;
    out.liveVectors[to] = from.liveVectors[i]!;
  };
  // Both in list order (createdAt, id): merged as two sorted runs.
  const before = (i: number, j: number) => {
    const ca = b.createdAt[i]!;
    const cb = d.createdAt[j]!;
    return ca < cb || (ca === cb && b.ids[i]! < d.ids[j]!);
  };
  let i = 0;
  let j = 0;
  for (let to = 0; to < n; to++) {
    while (i < nb && gone.has(b.ids[i]!)) i++;
    if (i < nb && (j >= nd || before(i, j))) copy(b, i++, to, 0, baseErrors);
    else {
      copy(d, j++, to, shift, deltaErrors);
      changed[to] = 1;
    }
  }
  const bv = base.versions;
  const dv = delta.versions;
  const cat = <T extends Float64Array<ArrayBuffer> | Uint8Array<ArrayBuffer>>(x: T, y: T, make: (n: number) => T): T => {
    const z = make(x.length + y.length);
    z.set(x);
    z.set(y, x.length);
    return z;
  };
  const shifted = <T>(list: [number, T][]) => list.map(([k, v]): [number, T] => [k + shift, v]);
  return {
    clock: delta.clock,
    kb: delta.kb,
    items: out,
    versions: {
      number: cat(bv.number, dv.number, (k) => new Float64Array(k)),
      metadata: [...bv.metadata, ...dv.metadata],
      sources: [...bv.sources, ...shifted(dv.sources)],
      pages: [...bv.pages, ...shifted(dv.pages)],
      textAt: cat(bv.textAt, dv.textAt, (k) => new Float64Array(k)),
      textChars: cat(bv.textChars, dv.textChars, (k) => new Float64Array(k)),
      textWide: cat(bv.textWide, dv.textWide, (k) => new Uint8Array(k)),
      held: [...bv.held, ...shifted(dv.held)],
    },
    merged: { changed, removed: delta.delta.removed },
  };
}

/** Indexes of the items with live chunks, by their first document (those without chunks first); `space`: documents handed out. */
function liveByDocument(d: ItemDump['items'], space: number): Int32Array {
  const n = d.live.length;
  let live = 0;
  for (let i = 0; i < n; i++) {
    if (d.live[i]! < 0) continue;
    live++;
    if (d.liveCount[i]! > 0 && !(d.liveFirst[i]! >= 0 && d.liveFirst[i]! + d.liveCount[i]! <= space))
      throw new Error(`item dump: documents from ${d.liveFirst[i]} past the ${space} handed out`);
  }
  // Items with chunks have distinct first documents: one slot each.
  const slot = new Int32Array(space).fill(-1);
  const out = new Int32Array(live);
  let k = 0;
  for (let i = 0; i < n; i++) {
    if (d.live[i]! < 0) continue;
    if (d.liveCount[i]! === 0) out[k++] = i;
    else {
      const first = d.liveFirst[i]!;
      if (slot[first] !== -1) throw new Error(`item dump: document ${first} is live twice`);
      slot[first] = i;
    }
  }
  for (let doc = 0; doc < space; doc++) if (slot[doc]! >= 0) out[k++] = slot[doc]!;
  return out;
}

/** Where a loaded item's chunks answer: its live version and documents (restoreLive). */
export type PlaceLive = (item: ContentItem, version: ItemVersion, first: number, count: number, vectors: boolean) => void;

/**
 * The items of a dump, in list order, their stored texts read from `texts` (which took over the
 * dumped file); `place` is given each item with live chunks, which lie below `space` (the
 * documents the set handed out). Throws when the dump is inconsistent.
 * Returns the items, the bytes of texts they hold in the store, and where the last of those ends.
 */
export function loadItems(
  dump: ItemDump,
  kbId: string,
  texts: TextStore | undefined,
  space: number,
  place: PlaceLive,
): { items: ContentItem[]; textBytes: number; textEnd: number } {
  const { items: d, versions: c } = dump;
  const n = d.ids.length;
  const v = c.number.length;
  if (
    [d.createdAt, d.updatedAt, d.status, d.current, d.live, d.liveFirst, d.liveCount, d.liveVectors].some((a) => a.length !== n) ||
    [c.metadata, c.textAt, c.textChars, c.textWide].some((a) => a.length !== v)
  )
    throw new Error('item dump: columns do not match its counts');
  const sources = new Map(c.sources);
  const pages = new Map(c.pages);
  const held = new Map(c.held);
  const made = new Array<ItemVersion | undefined>(v);
  let textBytes = 0;
  let textEnd = 0;
  const versionAt = (i: number): ItemVersion => {
    if (!(i >= 0 && i < v)) throw new Error(`item dump: version ${i} out of range`);
    let version = made[i];
    if (version) return version;
    const fields = {
      version: c.number[i]!,
      metadata: c.metadata[i]!,
      source: sources.get(i) ?? { kind: 'text' as const },
      ...(pages.has(i) ? { pages: pages.get(i) } : {}),
    };
    const at = c.textAt[i]!;
    if (at < 0) {
      const text = held.get(i);
      if (text === undefined) throw new Error(`item dump: version ${i} has no text`);
      version = new ItemVersion({ ...fields, text });
    } else {
      if (!texts) throw new Error('item dump: stored texts need a text store');
      // A damaged dump is found by its checksum in another thread while this loads: a place that is
      // no place must not be read meanwhile (a fractional length read on forever).
      if (!Number.isSafeInteger(at) || !Number.isSafeInteger(c.textChars[i]!) || c.textChars[i]! < 0)
        throw new Error(`item dump: version ${i} has its text at ${at}, ${c.textChars[i]} characters`);
      const wide = c.textWide[i] === 1;
      const bytes = c.textChars[i]! * (wide ? 2 : 1);
      textBytes += bytes;
      textEnd = Math.max(textEnd, at + bytes);
      version = ItemVersion.stored(fields, texts, { at, length: c.textChars[i]!, wide });
    }
    made[i] = version;
    return version;
  };
  const errors = new Map(d.errors);
  const items = new Array<ContentItem>(n);
  for (let i = 0; i < n; i++) {
    const createdAt = d.createdAt[i]!;
    const updatedAt = d.updatedAt[i]!;
    const status = STATUSES[d.status[i]!];
    if (status === undefined) throw new Error(`item dump: status ${d.status[i]}`);
    // The shape putContent gives an item (status last; live and error set after).
    const item: ContentItem = {
      id: d.ids[i]!,
      kbId,
      createdAt,
      updatedAt: updatedAt === 0 ? createdAt : updatedAt,
      current: versionAt(d.current[i]!),
      status,
      touched: 0,
    };
    if (status === 'failed') item.error = errors.get(i);
    items[i] = item;
  }
  // Live chunks are placed in document order: a metadata posting list takes documents in order,
  // and one out of order is an insertion (items updated since their creation are later documents).
  for (const i of liveByDocument(d, space)) place(items[i]!, versionAt(d.live[i]!), d.liveFirst[i]!, d.liveCount[i]!, d.liveVectors[i] === 1);
  return { items, textBytes, textEnd };
}
