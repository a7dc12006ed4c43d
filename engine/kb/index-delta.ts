// Index deltas: what an index set's dump holds beyond an earlier dump of the same set (its base), so
// a snapshot writes only that and a restart reads the base and the delta (snapshots/index-dump.ts).
// A set's arrays change in three ways (IndexSet.dump, InvertedIndex.dump): documents, terms and
// postings are appended past what a dump saw; a compaction rewrites a posting list or the
// document-terms pool into new arrays; and small arrays (alive, grouping, offsets, statistics, the
// vectors' duplicate groups) change in place. A delta holds the appended tails, whole what a
// compaction rewrote since the base, and the small arrays whole: bytes per document or per term,
// where the postings and the pool are bytes per posting (most of a dump).
import { joined, type InvertedIndexDump } from '../bm25/inverted-index';
import type { IndexSetDump } from './index-set';

/** What a dump held, to take a later dump of the same set as a delta of it (indexMark). */
export interface IndexMark {
  /** The index it was dumped from (InvertedIndexDump.lineage.of). */
  readonly of: object;
  /** Per term: its postings then, and its list's compactions. */
  readonly lengths: Uint32Array;
  readonly rewrites: Uint32Array;
  readonly docs: number;
  readonly pool: number;
  readonly poolRewrites: number;
  readonly chunks: number;
}

/** How much of its base a delta continues (the rest of the base is not used). */
export interface DeltaBase {
  /** Terms of the base; their lists go on in the delta but for `rewritten`. */
  terms: number;
  /** Term ids whose list was compacted since the base: the delta holds it whole. */
  rewritten: Int32Array<ArrayBuffer>;
  /** Documents of the base (BM25's per-document arrays). */
  docs: number;
  /** Bytes of the base's document-terms pool kept: all of it, or 0 when the pool was compacted since. */
  pool: number;
  /** Rows of the base's chunk table. */
  chunks: number;
}

/** A set's dump as a delta: `dump` holds only the tails of what `base` says continues. */
export interface IndexSetDelta {
  dump: IndexSetDump;
  base: DeltaBase;
}

/** The per-document arrays of the BM25 index that only new documents write. */
const DOC_TAILS = ['docLength', 'spanStart', 'spanEnd'] as const;
/** The chunk table's columns (only new rows are written). */
const CHUNK_TAILS = ['start', 'end', 'page', 'prefixCode'] as const;
const ID_BYTES_OF = (d: IndexSetDump) => (d.chunks.length > 0 ? d.chunks.idBytes.length / d.chunks.length : 0);

/** What `dump` holds, for deltas of later dumps of its set; a dump read back (no lineage) names the index that loads it. */
export function indexMark(dump: IndexSetDump): IndexMark {
  const bm25 = dump.bm25;
  const n = bm25.terms.length;
  const lengths = new Uint32Array(n);
  for (let t = 0; t < n; t++) lengths[t] = bm25.listStats[4 * t]!;
  return {
    of: bm25.lineage?.of ?? bm25.counters,
    lengths,
    rewrites: bm25.lineage ? Uint32Array.from(bm25.lineage.lists) : new Uint32Array(n),
    docs: bm25.docLength.length,
    pool: bm25.docTerms.pool.length,
    poolRewrites: bm25.lineage?.pool ?? 0,
    chunks: dump.chunks.length,
  };
}

/** Each list's postings as views (dump() gives them so; a dump read back holds them in one array). */
function lists<T extends Int32Array<ArrayBuffer> | Uint8Array<ArrayBuffer>>(all: T | readonly T[], listStats: Uint32Array): readonly T[] {
  if (Array.isArray(all)) return all as readonly T[];
  const one = all as T;
  const out: T[] = [];
  let at = 0;
  for (let t = 0; 4 * t < listStats.length; t++) {
    const n = listStats[4 * t]!;
    out.push(one.subarray(at, at + n) as T);
    at += n;
  }
  return out;
}

/**
 * `now` (a later dump of the set `mark` was taken of) as a delta of that dump: views of `now`'s
 * arrays, so the same rule holds (write it before they change in place). Undefined when `now` does
 * not continue it (another index, or less than it held).
 */
export function indexDelta(now: IndexSetDump, mark: IndexMark): IndexSetDelta | undefined {
  const bm25 = now.bm25;
  const terms = mark.lengths.length;
  if (bm25.lineage?.of !== mark.of || bm25.terms.length < terms || bm25.docLength.length < mark.docs || now.chunks.length < mark.chunks) return undefined;
  const docs = lists(bm25.postingDocs, bm25.listStats);
  const tfs = lists(bm25.postingTfs, bm25.listStats);
  const rewritten: number[] = [];
  const tailDocs: Int32Array<ArrayBuffer>[] = [];
  const tailTfs: Uint8Array<ArrayBuffer>[] = [];
  for (let t = 0; t < docs.length; t++) {
    let kept = 0;
    if (t < terms) {
      if (bm25.lineage.lists[t] === mark.rewrites[t] && docs[t]!.length >= mark.lengths[t]!) kept = mark.lengths[t]!;
      else rewritten.push(t);
    }
    tailDocs.push(docs[t]!.subarray(kept));
    tailTfs.push(tfs[t]!.subarray(kept));
  }
  const pool = bm25.lineage.pool === mark.poolRewrites && bm25.docTerms.pool.length >= mark.pool ? mark.pool : 0;
  const tails: Partial<InvertedIndexDump> = {};
  for (const k of DOC_TAILS) tails[k] = bm25[k].subarray(mark.docs) as never;
  const idBytes = ID_BYTES_OF(now);
  const chunks = { ...now.chunks, idBytes: now.chunks.idBytes.subarray(mark.chunks * idBytes) };
  for (const k of CHUNK_TAILS) chunks[k] = now.chunks[k].subarray(mark.chunks) as never;
  const { lineage: _, ...rest } = bm25;
  return {
    dump: {
      ...now,
      bm25: {
        ...rest,
        ...tails,
        terms: bm25.terms.slice(terms),
        postingDocs: tailDocs,
        postingTfs: tailTfs,
        docTerms: { ...bm25.docTerms, pool: bm25.docTerms.pool.subarray(pool) },
      },
      chunks,
    },
    base: { terms, rewritten: Int32Array.from(rewritten), docs: mark.docs, pool, chunks: mark.chunks },
  };
}

/** The bytes of a dump's arrays (what writing it costs, near enough; JSON sections not counted). */
export function dumpBytes(dump: IndexSetDump): number {
  let bytes = 0;
  const add = (v: unknown): void => {
    if (ArrayBuffer.isView(v)) bytes += v.byteLength;
    else if (Array.isArray(v)) for (const x of v) add(x);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) add(x);
  };
  const { lineage: _, ...bm25 } = dump.bm25;
  add({ ...dump, bm25 });
  return bytes;
}

/**
 * The dump `delta` continues `base` to (a dump as read back: one array per section). Throws when
 * `base` is not what the delta continues.
 */
export function applyIndexDelta(base: IndexSetDump, delta: IndexSetDelta): IndexSetDump {
  const { dump: d, base: at } = delta;
  const b = base.bm25;
  if (
    b.terms.length !== at.terms ||
    b.docLength.length !== at.docs ||
    base.chunks.length !== at.chunks ||
    (at.pool !== 0 && b.docTerms.pool.length !== at.pool)
  )
    throw new Error('index delta: its base is not the dump it continues');
  const n = d.bm25.terms.length + at.terms;
  const stats = d.bm25.listStats;
  if (stats.length !== 4 * n) throw new Error('index delta: posting list stats do not match its terms');
  const rewritten = new Set(at.rewritten);
  const baseDocs = lists(b.postingDocs, b.listStats);
  const baseTfs = lists(b.postingTfs, b.listStats);
  // Per list: what the base keeps of it, and the tail's length (its length less that).
  const kept = new Uint32Array(n);
  const tailStats = new Uint32Array(4 * n);
  let total = 0;
  let tails = 0;
  for (let t = 0; t < n; t++) {
    kept[t] = t < at.terms && !rewritten.has(t) ? baseDocs[t]!.length : 0;
    const length = stats[4 * t]!;
    if (length < kept[t]!) throw new Error('index delta: a posting list is shorter than its base');
    tailStats[4 * t] = length - kept[t]!;
    total += length;
    tails += length - kept[t]!;
  }
  const held = (a: Int32Array | Uint8Array | readonly (Int32Array | Uint8Array)[]) =>
    Array.isArray(a) ? a.reduce((m, p) => m + p.length, 0) : (a as Int32Array).length;
  if (held(d.bm25.postingDocs) !== tails || held(d.bm25.postingTfs) !== tails) throw new Error('index delta: its postings do not match its lists');
  const tailDocs = lists(d.bm25.postingDocs, tailStats);
  const tailTfs = lists(d.bm25.postingTfs, tailStats);
  const postingDocs = new Int32Array(total);
  const postingTfs = new Uint8Array(total);
  let w = 0;
  for (let t = 0; t < n; t++) {
    if (kept[t]! > 0) {
      postingDocs.set(baseDocs[t]!, w);
      postingTfs.set(baseTfs[t]!, w);
      w += kept[t]!;
    }
    postingDocs.set(tailDocs[t]!, w);
    postingTfs.set(tailTfs[t]!, w);
    w += tailDocs[t]!.length;
  }
  const bm25: InvertedIndexDump = {
    ...d.bm25,
    terms: [...b.terms, ...d.bm25.terms],
    postingDocs,
    postingTfs,
    docLength: joined([b.docLength, d.bm25.docLength], Uint32Array),
    spanStart: joined([b.spanStart, d.bm25.spanStart], Int32Array),
    spanEnd: joined([b.spanEnd, d.bm25.spanEnd], Int32Array),
    docTerms: { ...d.bm25.docTerms, pool: joined([b.docTerms.pool.subarray(0, at.pool), d.bm25.docTerms.pool], Uint8Array) },
  };
  const c = base.chunks;
  const chunks = {
    ...d.chunks,
    start: joined([c.start, d.chunks.start], Int32Array),
    end: joined([c.end, d.chunks.end], Int32Array),
    page: joined([c.page, d.chunks.page], Int32Array),
    prefixCode: joined([c.prefixCode, d.chunks.prefixCode], Uint8Array),
    idBytes: joined([c.idBytes, d.chunks.idBytes], Uint8Array),
  };
  return { ...d, bm25, chunks };
}
