// An inverted index with BM25 ranking over documents identified by dense integer ids (one per
// chunk, assigned in increasing order by the caller). Postings are growable typed arrays; deletes
// are tombstones whose postings are compacted per term once they make up half of a list, so a
// delete never rebuilds the index.
//
// Top-k retrieval uses MaxScore (Turtle & Flood; Lucene's MaxScoreBulkScorer) over windows of doc
// ids: each term has an upper bound on its contribution; once the k-th best score exceeds the sum
// of the smallest bounds, those terms can no longer make a document enter on their own, so their
// (long, low-idf) lists are only probed for documents the other terms found, and only while the
// document can still beat the k-th score. Results equal exhaustive scoring (tested).
//
// Documents are chunks; their content items are groups of documents (group, below). BM25's
// collection statistics count groups: idf is ln(1 + (N − n + 0.5) / (n + 0.5)) with N the live
// groups and n those holding the term, so a word repeated across the chunks of one item is as rare
// as a word of one chunk, and splitting an item into more chunks changes no weight. A document no
// group was formed for is a group of its own (then these are the usual document counts).
import { DEFAULT_BM25, idf, lengthNorm, lengthNormParts, termWeight, weightedTermScore, type Bm25Params, type ScoreExplanation } from './scorer';
import { TopK, type Scored } from '../topk';
import { DocSet, gallop } from '../filter/doc-set';
import { DocTerms, type DocTermsDump } from './doc-terms';
import { Vocabulary } from './vocabulary';

const MAX_TF = 0xffff;
/** A tf of at least this is stored as this byte and looked up in the list's `bigTfs` by document. */
const BIG_TF = 0xff;

class PostingList {
  docs = new Int32Array(4);
  /** One byte per posting: tfs of BIG_TF and more (rare) are BIG_TF here and exact in bigTfs. */
  tfs = new Uint8Array(4);
  bigTfs: Map<number, number> | undefined;
  length = 0;
  /** Postings whose document was deleted but not yet compacted away. */
  dead = 0;
  // For the score upper bound: the largest tf and the shortest document of the list. Deletes leave
  // them as they are (still bounds, only looser) until compaction recomputes them.
  maxTf = 0;
  minDocLength = Infinity;
  /** Live groups (content items) with a document holding the term: the idf's n. */
  groupFreq = 0;
  /** Compactions so far: a later dump continues an earlier one's postings only while this is unchanged (index deltas). */
  rewrites = 0;

  get docFreq(): number {
    return this.length - this.dead;
  }

  push(doc: number, tf: number, docLength: number): void {
    if (tf > this.maxTf) this.maxTf = tf;
    if (docLength < this.minDocLength) this.minDocLength = docLength;
    if (this.length === this.docs.length) {
      // Grows by a quarter (doubling left a third of all postings' room empty on average).
      const cap = this.length + Math.max(4, this.length >>> 2);
      const docs = new Int32Array(cap);
      docs.set(this.docs);
      this.docs = docs;
      const tfs = new Uint8Array(cap);
      tfs.set(this.tfs);
      this.tfs = tfs;
    }
    this.docs[this.length] = doc;
    this.setTf(this.length, doc, tf);
    this.length++;
  }

  /** The tf at position `p` (of document `doc`). */
  tfAt(p: number, doc: number): number {
    const tf = this.tfs[p]!;
    return tf === BIG_TF ? this.bigTfs!.get(doc)! : tf;
  }

  setTf(p: number, doc: number, tf: number): void {
    if (tf >= BIG_TF) {
      this.tfs[p] = BIG_TF;
      (this.bigTfs ??= new Map()).set(doc, tf);
    } else {
      this.tfs[p] = tf;
      this.bigTfs?.delete(doc);
    }
  }

  /**
   * Drop the postings of dead documents, into new arrays: a dump being written may still be reading
   * the old ones (InvertedIndex.dump: postings are only ever appended past a list's length, or moved).
   */
  compact(alive: Uint8Array, docLength: Uint32Array): void {
    let live = 0;
    for (let r = 0; r < this.length; r++) live += alive[this.docs[r]!]!;
    const docs = new Int32Array(Math.max(4, live));
    const tfs = new Uint8Array(docs.length);
    let w = 0;
    this.maxTf = 0;
    this.minDocLength = Infinity;
    for (let r = 0; r < this.length; r++) {
      const d = this.docs[r]!;
      if (alive[d]) {
        const tf = this.tfAt(r, d);
        docs[w] = d;
        tfs[w] = this.tfs[r]!;
        if (tf > this.maxTf) this.maxTf = tf;
        if (docLength[d]! < this.minDocLength) this.minDocLength = docLength[d]!;
        w++;
      }
    }
    this.docs = docs;
    this.tfs = tfs;
    this.length = w;
    this.dead = 0;
    this.rewrites++;
    if (this.bigTfs) for (const d of this.bigTfs.keys()) if (!alive[d]) this.bigTfs.delete(d);
  }

  /**
   * The first position at or after `from` whose doc id is ≥ `doc` (galloping, then binary search).
   * The same walk as filter/doc-set.ts gallop(), kept here on purpose: sharing it (one function for
   * Int32Array postings and Uint32Array filter lists) made full-text search 10% slower in
   * `bun bench/fulltext.ts` (index search p50 0.551-0.570 -> 0.608-0.624 ms, two runs each).
   */
  advance(from: number, doc: number): number {
    const docs = this.docs;
    const n = this.length;
    if (from >= n || docs[from]! >= doc) return from;
    let step = 1;
    let lo = from;
    let hi = from + 1;
    while (hi < n && docs[hi]! < doc) {
      lo = hi;
      step *= 2;
      hi = lo + step;
    }
    if (hi > n) hi = n;
    // docs[lo] < doc; the answer is in (lo, hi].
    lo++;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (docs[mid]! < doc) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Binary search for `doc`'s tf (postings are sorted by doc id). */
  tfOf(doc: number): number {
    let lo = 0;
    let hi = this.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const d = this.docs[mid]!;
      if (d === doc) return this.tfAt(mid, d);
      if (d < doc) lo = mid + 1;
      else hi = mid - 1;
    }
    return 0;
  }
}

/** How often an overlap holds a term (0 if not). */
function overlapTf(overlap: { ids: Int32Array; tfs: Int32Array }, termId: number): number {
  for (let i = 0; i < overlap.ids.length; i++) if (overlap.ids[i] === termId) return overlap.tfs[i]!;
  return 0;
}

export interface IndexedDoc {
  terms: readonly string[];
  tfs: readonly number[];
  length: number;
  /** Where the document (a chunk) lies in its item's text, when known: overlaps between chunks are found from it. */
  start?: number;
  end?: number;
}

/** The terms two neighbouring chunks of a group share (the chunking overlap), counted once per overlap. */
export interface GroupOverlap {
  terms: readonly string[];
  tfs: readonly number[];
  length: number;
}

interface StoredOverlap {
  ids: Int32Array;
  tfs: Int32Array;
  length: number;
}

/**
 * A term that stands in for a query word the user typed differently: a typo of it, or a completion
 * of the query's last word (engine/search/expansion.ts decides which).
 */
export interface TermExpansion {
  term: string;
  /** The share of the word's weight it carries: below 1, so it counts less than the word itself. */
  boost: number;
  /**
   * Content items holding the word it stands for: its idf is the word's (Lucene's blended term
   * frequencies), so a rare misspelling in the data weighs no more than the word it misspells.
   */
  groupFreq: number;
  /**
   * The query word (its term) it stands for: a document holding several expansions of one word
   * scores by the best of them, as a word matches by one spelling (absent: it counts on its own).
   */
  word?: string;
}

/** Query terms with expansions: a hit needs one of `terms` when any of them occurs at all. */
export interface ExpandedQuery {
  terms: readonly string[];
  expansions: readonly TermExpansion[];
}

/** Analyzed query terms, or terms with expansions. */
export type Bm25Query = readonly string[] | ExpandedQuery;

export const exactTerms = (q: Bm25Query): readonly string[] => (isExpanded(q) ? q.terms : q);
export const isExpanded = (q: Bm25Query): q is ExpandedQuery => !Array.isArray(q);

/** A query term that occurs in the index. */
interface QueryTerm {
  term: string;
  id: number;
  list: PostingList;
  weight: number; // qtf · idf · (k1 + 1)
  idf: number;
  /** The most this term can add to any document score (tf at its max, length at its min). */
  bound: number;
  /** An expansion (TermExpansion), not a term of the query itself. */
  expansion: boolean;
  /**
   * For an expansion, which of the query's expanded words it stands for (0, 1, …): a document
   * scores by the best expansion of each word. -1 for the query's own terms.
   */
  word: number;
}

/** How many expanded words the query terms stand for (QueryTerm.word). */
function wordCount(qterms: readonly QueryTerm[]): number {
  let n = 0;
  for (const q of qterms) if (q.word >= n) n = q.word + 1;
  return n;
}

/**
 * One document's score from its terms' contributions, added in the reverse of queryTerms' order:
 * each query term's, then each expanded word's best expansion, in word order. search, scoreDocs,
 * groupScores and explain all add this way, so a document gets one score, bit for bit.
 */
class ScoreSum {
  private exact = 0;
  private readonly best: Float64Array;

  constructor(words: number) {
    this.best = new Float64Array(words);
  }

  add(q: QueryTerm, contribution: number): void {
    if (q.word < 0) this.exact += contribution;
    else if (contribution > this.best[q.word]!) this.best[q.word] = contribution;
  }

  /** The total, and ready for the next document. */
  take(): number {
    let score = this.exact;
    this.exact = 0;
    for (let w = 0; w < this.best.length; w++) {
      score += this.best[w]!;
      this.best[w] = 0;
    }
    return score;
  }
}

/** Doc ids scored together per MaxScore window: big enough to amortize, small enough to stay in cache. */
const WINDOW = 2048;
const WINDOW_WORDS = WINDOW / 32;
/**
 * A posting list this many times longer than a selective filter's allowed documents is read by
 * galloping from one allowed document to the next instead of testing each posting.
 */
const DRIVE_RATIO = 8;
/** Relative slack on pruning so floating-point summation order can never drop a real top-k hit. */
const PRUNE_SLACK = 1e-9;

export class InvertedIndex {
  private readonly termIds = new Map<string, number>();
  private readonly terms: string[] = [];
  private readonly lists: PostingList[] = [];
  // Term counts are integers: 4 bytes each keeps the array the scoring loops read small in cache.
  private docLength = new Uint32Array(1024);
  /** Each live document's term ids (for deletes and grouping), packed. */
  private readonly docTerms = new DocTerms();
  private alive = new Uint8Array(1024);
  private liveDocs = 0;
  private totalLength = 0;
  private maxDoc = -1;
  private changes = 0;
  // Groups (content items): each document's group, named by its first document; the members of
  // groups of more than one document; the terms their chunks' overlaps count twice.
  private groupOf = new Int32Array(1024);
  private readonly members = new Map<number, Int32Array>();
  private readonly overlaps = new Map<number, StoredOverlap>();
  private overlapLength = 0;
  private liveGroups = 0;
  /** Documents up to this one have their group settled (settle()); later ones are on their own. */
  private settledUpTo = -1;
  private spanStart = new Int32Array(1024).fill(-1);
  private spanEnd = new Int32Array(1024).fill(-1);
  // Scratch stamps of group(), by term id.
  private groupStamp = new Int32Array(0);
  private docStamp = new Int32Array(0);
  private groupSerial = 0;
  // Scratch space of one MaxScore window; reused across searches (single-threaded).
  private readonly window = new Float64Array(WINDOW);
  private readonly windowBits = new Int32Array(WINDOW_WORDS);

  /**
   * Who this index's state descends from, for index deltas: an object of its own, or the counters
   * of the dump it loaded (a restart's mark of that dump then matches it).
   */
  private lineage: object = {};

  constructor(readonly params: Bm25Params = DEFAULT_BM25) {}

  get docCount(): number {
    return this.liveDocs;
  }

  get termCount(): number {
    return this.termIds.size;
  }

  get avgDocLength(): number {
    return this.liveDocs === 0 ? 0 : this.totalLength / this.liveDocs;
  }

  /** Live groups (content items): the N of idf. */
  get groupCount(): number {
    return this.liveGroups;
  }

  /** Average length of a group scored as one document (its documents' lengths less their overlaps). */
  get avgGroupLength(): number {
    return this.liveGroups === 0 ? 0 : (this.totalLength - this.overlapLength) / this.liveGroups;
  }

  /** Indexed terms over every live document (the sum of their lengths). */
  get termTotal(): number {
    return this.totalLength;
  }

  /** Adds and removes so far: a cache of anything derived from the documents is current while this stays the same. */
  get version(): number {
    return this.changes;
  }

  /** A live document's length in indexed terms (0 if it is not live). */
  lengthOf(doc: number): number {
    return this.has(doc) ? this.docLength[doc]! : 0;
  }

  has(doc: number): boolean {
    return doc <= this.maxDoc && this.alive[doc] === 1;
  }

  private ensureCapacity(doc: number): void {
    if (doc < this.alive.length) return;
    let cap = this.alive.length;
    while (cap <= doc) cap *= 2;
    const grow = <T extends Uint32Array | Uint8Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a as never);
      return b;
    };
    this.alive = grow(this.alive, (n) => new Uint8Array(n));
    this.docLength = grow(this.docLength, (n) => new Uint32Array(n));
    this.groupOf = grow(this.groupOf, (n) => new Int32Array(n));
    this.spanStart = grow(this.spanStart, (n) => new Int32Array(n).fill(-1));
    this.spanEnd = grow(this.spanEnd, (n) => new Int32Array(n).fill(-1));
  }

  /** Add a document; `doc` must be greater than every id added before. */
  add(doc: number, vector: IndexedDoc): void {
    if (doc <= this.maxDoc) throw new Error(`document ids must increase (${doc} after ${this.maxDoc})`);
    this.ensureCapacity(doc);
    this.maxDoc = doc;
    const ids = new Int32Array(vector.terms.length);
    for (let i = 0; i < vector.terms.length; i++) {
      const term = vector.terms[i]!;
      let id = this.termIds.get(term);
      if (id === undefined) {
        id = this.terms.length;
        this.termIds.set(term, id);
        this.terms.push(term);
        this.lists.push(new PostingList());
      }
      ids[i] = id;
      const list = this.lists[id]!;
      const tf = Math.max(1, vector.tfs[i]!);
      // A term listed twice for one document adds to its posting rather than duplicating it.
      if (list.length > 0 && list.docs[list.length - 1] === doc) {
        const merged = Math.min(MAX_TF, list.tfAt(list.length - 1, doc) + tf);
        list.setTf(list.length - 1, doc, merged);
        list.maxTf = Math.max(list.maxTf, merged);
      } else {
        list.push(doc, Math.min(MAX_TF, tf), vector.length);
        list.groupFreq++;
      }
    }
    this.docTerms.set(doc, ids);
    this.docLength[doc] = vector.length;
    this.alive[doc] = 1;
    this.liveDocs++;
    this.totalLength += vector.length;
    this.groupOf[doc] = doc;
    this.liveGroups++;
    if (vector.start !== undefined && vector.end !== undefined) {
      this.spanStart[doc] = vector.start;
      this.spanEnd[doc] = vector.end;
    }
    this.changes++;
  }

  remove(doc: number): boolean {
    if (!this.has(doc)) return false;
    this.alive[doc] = 0;
    this.liveDocs--;
    this.totalLength -= this.docLength[doc]!;
    this.changes++;
    const group = this.groupOf[doc]!;
    const members = this.members.get(group);
    const { ids, count } = this.docTerms.read(doc);
    for (let i = 0; i < count; i++) {
      const list = this.lists[ids[i]!]!;
      // The group still holds the term while another of its live documents does.
      if (!members || !this.heldByOther(list, members, doc)) list.groupFreq--;
      list.dead++;
      if (list.dead * 2 >= list.length) list.compact(this.alive, this.docLength);
    }
    this.docTerms.delete(doc);
    if (!members?.some((m) => this.alive[m] === 1)) {
      this.liveGroups--;
      if (members) {
        this.members.delete(group);
        const overlap = this.overlaps.get(group);
        if (overlap) {
          this.overlapLength -= overlap.length;
          this.overlaps.delete(group);
        }
      }
    }
    return true;
  }

  private heldByOther(list: PostingList, members: Int32Array, doc: number): boolean {
    for (const m of members) if (m !== doc && this.alive[m] === 1 && list.tfOf(m) > 0) return true;
    return false;
  }

  // --- groups (content items) -----------------------------------------------------------------

  /** Live documents added since the last settle(), ascending (the first `limit`): each is a group of its own until grouped. */
  unsettled(limit = Number.POSITIVE_INFINITY): number[] {
    const out: number[] = [];
    for (let d = this.settledUpTo + 1; d <= this.maxDoc && out.length < limit; d++) if (this.alive[d] === 1) out.push(d);
    return out;
  }

  /** Every document added so far (or up to `upTo`) has its group: later ones start unsettled. */
  settle(upTo = this.maxDoc): void {
    this.settledUpTo = Math.max(this.settledUpTo, Math.min(upTo, this.maxDoc));
  }

  /**
   * Make `docs` (ascending: the chunks of one content item, each still a group of its own) one group.
   * `overlap` holds the terms their neighbouring chunks both count (the chunking overlap), so the
   * group scores as its text once (groupScores). Documents already grouped or not live are left out.
   */
  group(docs: readonly number[], overlap?: GroupOverlap): void {
    const live: number[] = [];
    for (let i = 0; i < docs.length; i++) {
      const d = docs[i]!;
      if (this.has(d) && this.groupOf[d] === d && !this.members.has(d)) live.push(d);
    }
    if (live.length < 2) return;
    const id = live[0]!;
    if (this.groupStamp.length < this.lists.length) {
      const size = Math.max(1024, this.lists.length * 2);
      const grow = (a: Int32Array) => {
        const b = new Int32Array(size);
        b.set(a);
        return b;
      };
      this.groupStamp = grow(this.groupStamp);
      this.docStamp = grow(this.docStamp);
    }
    const serial = ++this.groupSerial;
    const { groupStamp, docStamp, lists } = this;
    for (let k = 0; k < live.length; k++) {
      const d = live[k]!;
      const { ids, count } = this.docTerms.read(d);
      for (let i = 0; i < count; i++) {
        const t = ids[i]!;
        // A term a document of the group already holds adds no group to its count.
        if (groupStamp[t] === serial) {
          if (docStamp[t] !== d + 1) lists[t]!.groupFreq--;
        } else groupStamp[t] = serial;
        docStamp[t] = d + 1;
      }
      this.groupOf[d] = id;
    }
    this.liveGroups -= live.length - 1;
    this.members.set(id, Int32Array.from(live));
    if (overlap && overlap.length > 0) {
      const ids: number[] = [];
      const tfs: number[] = [];
      overlap.terms.forEach((term, i) => {
        const t = this.termIds.get(term);
        if (t !== undefined && overlap.tfs[i]! > 0) {
          ids.push(t);
          tfs.push(overlap.tfs[i]!);
        }
      });
      this.overlaps.set(id, { ids: Int32Array.from(ids), tfs: Int32Array.from(tfs), length: overlap.length });
      this.overlapLength += overlap.length;
    }
    this.changes++;
  }

  /** The live documents of `doc`'s group, ascending (itself alone when it has none). */
  membersOf(doc: number): readonly number[] {
    const members = this.members.get(this.groupOf[doc]!);
    if (!members) return [doc];
    const out: number[] = [];
    for (const m of members) if (this.alive[m] === 1) out.push(m);
    return out;
  }

  /** The group (content item) of a document: its first document's number. */
  groupIdOf(doc: number): number {
    return doc <= this.maxDoc ? this.groupOf[doc]! : doc;
  }

  /** Where a document lies in its item's text, when add() was told. */
  spanOf(doc: number): { start: number; end: number } | undefined {
    if (!this.has(doc) || this.spanStart[doc]! < 0) return undefined;
    return { start: this.spanStart[doc]!, end: this.spanEnd[doc]! };
  }

  /** The sorted terms, for finding those near a query word (built when first asked for). */
  get vocabulary(): Vocabulary {
    return (this.sortedTerms ??= new Vocabulary(
      () => this.terms.length,
      (id) => this.terms[id]!,
    ));
  }
  private sortedTerms: Vocabulary | undefined;

  /** Live groups (content items) holding the term: its idf's n (0 when no live document holds it). */
  groupFreqOf(term: string): number {
    const id = this.termIds.get(term);
    return id === undefined ? 0 : this.lists[id]!.groupFreq;
  }

  /**
   * The query's unique terms that occur, each with its weight and an upper bound on what it can add
   * to a document's score, in ascending bound order (ties by term). Every score is summed over the
   * terms in the reverse of this order, by search, scoreDocs and explain alike, so one document
   * always gets the same score, bit for bit, and equal documents tie exactly. Expansions come first
   * (below every query term, so a search never starts a candidate from them while a query term
   * occurs: expansionCount), each with its boosted weight.
   */
  private queryTerms(query: Bm25Query): QueryTerm[] {
    const counts = new Map<string, number>();
    for (const t of exactTerms(query)) counts.set(t, (counts.get(t) ?? 0) + 1);
    const out: QueryTerm[] = [];
    const term = (term: string, qtf: number, expansion?: TermExpansion): QueryTerm | undefined => {
      const id = this.termIds.get(term);
      if (id === undefined) return undefined;
      const list = this.lists[id]!;
      if (list.docFreq === 0) return undefined;
      const termIdf = idf(this.liveGroups, expansion ? expansion.groupFreq : list.groupFreq);
      const weight = termWeight(this.params, termIdf, qtf) * (expansion ? expansion.boost : 1);
      // tf / (tf + K) grows with tf and shrinks with the document's length.
      const bound = (weight * list.maxTf) / (list.maxTf + lengthNorm(this.params, list.minDocLength, this.avgDocLength));
      return { term, id, list, idf: termIdf, weight, bound, expansion: expansion !== undefined, word: -1 };
    };
    for (const [t, qtf] of counts) {
      const q = term(t, qtf);
      if (q) out.push(q);
    }
    const byBound = (x: QueryTerm, y: QueryTerm) => x.bound - y.bound || (x.term < y.term ? -1 : 1);
    if (!isExpanded(query) || query.expansions.length === 0) return out.sort(byBound);
    // An expansion two words share, or a query term itself, counts once: with its largest weight
    // (and as that word's). Words are numbered as they first come; one without a word is its own.
    const expanded = new Map<string, QueryTerm>();
    const words = new Map<string, number>();
    let loose = 0;
    for (const e of query.expansions) {
      if (counts.has(e.term)) continue;
      const q = term(e.term, 1, e);
      if (!q) continue;
      if (e.word === undefined) q.word = -2 - loose++;
      else {
        if (!words.has(e.word)) words.set(e.word, words.size);
        q.word = words.get(e.word)!;
      }
      const seen = expanded.get(e.term);
      if (!seen || q.weight > seen.weight) expanded.set(e.term, q);
    }
    // Expansions without a word are numbered after the words.
    for (const q of expanded.values()) if (q.word <= -2) q.word = words.size + (-2 - q.word);
    return [...[...expanded.values()].sort(byBound), ...out.sort(byBound)];
  }

  /** Leading expansions of queryTerms' order a search never starts a candidate from: all of them while a query term occurs. */
  private static expansionCount(qterms: readonly QueryTerm[]): number {
    let n = 0;
    while (n < qterms.length && qterms[n]!.expansion) n++;
    return n < qterms.length ? n : 0;
  }

  /**
   * The k best documents for the analyzed query terms. `allowed`, when given, is the documents that
   * may match (a DocSet, or a mask: 1 = may match), applied while scoring, so a filter never
   * truncates the results: a bitset is tested per posting; a sorted list is leapfrogged with each
   * posting list (each skips to the other's next document, galloping), and windows start at allowed
   * documents, so a selective filter reads about as many postings as it allows. With expansions,
   * the documents are those holding a query term (expansions add to their scores), or, when no
   * query term occurs, those holding an expansion.
   */
  search(query: Bm25Query, k: number, allowed?: DocSet | Uint8Array): Scored[] {
    const qterms = this.queryTerms(query);
    if (qterms.length === 0 || k <= 0) return [];
    const filter = allowed instanceof Uint8Array ? DocSet.ofMask(allowed) : allowed;
    // Every filter is tested as a bitset (a list's is made once and kept with it); a selective one
    // (a list) also starts windows at allowed documents and drives the lists much longer than it.
    const bits = filter?.bits();
    const only = filter?.isList ? filter.list() : undefined;
    if (only?.length === 0) return [];
    const driveAbove = only ? only.length * DRIVE_RATIO : Infinity;
    // In `only`: the first allowed document at or past the window's start, and past its end.
    let next = 0;
    let past = 0;
    const { alive, docLength, window, windowBits } = this;
    const { base: normBase, perLength: normPerLength } = lengthNormParts(this.params, this.avgDocLength);

    const n = qterms.length;
    const lists = qterms.map((q) => q.list);
    const weights = qterms.map((q) => q.weight);
    // prefix[i] = the most terms 0..i can add together: a word's expansions add their best bound,
    // not the sum of theirs (which kept every query term essential: a search with typo tolerance
    // read every posting of its words, 4 to 8 times the time of one without at 1M chunks).
    const prefix = new Float64Array(n);
    const words = wordCount(qterms);
    const wordBound = new Float64Array(words);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const q = qterms[i]!;
      if (q.word < 0) sum += q.bound;
      else if (q.bound > wordBound[q.word]!) {
        sum += q.bound - wordBound[q.word]!;
        wordBound[q.word] = q.bound;
      }
      prefix[i] = sum;
    }
    // Expansions essential (no query term occurs): their window sum is more than a document's
    // score (a word's best), so a candidate kept is scored again (scoreOf) before it is ranked.
    const essentialExpansions = InvertedIndex.expansionCount(qterms) === 0 && words > 0;
    const wordOf = qterms.map((q) => q.word);
    const best = new Float64Array(words);
    const pos = new Int32Array(n);

    const top = new TopK(k);
    // Terms below `essential` cannot lift a document past the k-th score on their own (nor can
    // expansions ever bring a document: they are only looked up for documents the others found).
    let essential = InvertedIndex.expansionCount(qterms);
    // The k-th best score so far, less the slack: what a document must reach to be ranked.
    let cut = -Infinity;
    for (;;) {
      while (essential < n && prefix[essential]! < cut) essential++;
      if (essential === n) break;
      // The window starts at the smallest unread document of the essential lists.
      let start = 0x7fffffff;
      for (let i = essential; i < n; i++) if (pos[i]! < lists[i]!.length && lists[i]!.docs[pos[i]!]! < start) start = lists[i]!.docs[pos[i]!]!;
      if (start === 0x7fffffff) break;
      if (only) {
        next = gallop(only, next, start);
        if (next === only.length) break;
        start = only[next]!;
      }
      const end = start + WINDOW;
      if (only) past = gallop(only, next, end);

      // Essential terms, term at a time (highest bound first: the summation order), into the
      // window's accumulator; touched slots are marked in a bitmap.
      for (let i = n - 1; i >= essential; i--) {
        const list = lists[i]!;
        const { docs, tfs, length, dead } = list;
        const w = weights[i]!;
        let p = pos[i]!;
        if (length > driveAbove) {
          // Far more postings than allowed documents: skip (galloping) from one allowed document to the next.
          for (let a = next; a < past && p < length; a++) {
            const d = only![a]!;
            p = list.advance(p, d);
            if (p >= length || docs[p] !== d) continue;
            p++;
            if (alive[d] === 0) continue;
            let tf = tfs[p - 1]!;
            if (tf === BIG_TF) tf = list.bigTfs!.get(d)!;
            const slot = d - start;
            if (window[slot] === 0) windowBits[slot >>> 5]! |= 1 << (slot & 31);
            window[slot] += weightedTermScore(w, tf, normBase + normPerLength * docLength[d]!);
          }
          pos[i] = list.advance(p, end);
          continue;
        }
        // A list without deleted postings and no filter needs no per-document check.
        const check = dead > 0 || bits !== undefined;
        for (; p < length; p++) {
          const d = docs[p]!;
          if (d >= end) break;
          if (check && (alive[d] === 0 || (bits !== undefined && ((bits[d >>> 5]! >>> (d & 31)) & 1) === 0))) continue;
          let tf = tfs[p]!;
          if (tf === BIG_TF) tf = list.bigTfs!.get(d)!;
          const slot = d - start;
          if (window[slot] === 0) windowBits[slot >>> 5]! |= 1 << (slot & 31);
          window[slot] += weightedTermScore(w, tf, normBase + normPerLength * docLength[d]!);
        }
        pos[i] = p;
      }

      // Each candidate in doc order (read off the bitmap): probe the non-essential lists, in the
      // summation order, while the document can still beat the k-th score.
      for (let word = 0; word < WINDOW_WORDS; word++) {
        let bits = windowBits[word]!;
        if (bits === 0) continue;
        windowBits[word] = 0;
        while (bits !== 0) {
          const lowest = bits & -bits;
          bits ^= lowest;
          const slot = (word << 5) | (31 - Math.clz32(lowest));
          // The query terms' sum in summation order (the window's, then the rest), and each
          // expanded word's best expansion so far (`best`, `fromWords` their sum): ScoreSum's order.
          let score = window[slot]!;
          window[slot] = 0;
          let fromWords = 0;
          const d = start + slot;
          let i = essential - 1;
          for (; i >= 0; i--) {
            if (score + fromWords + prefix[i]! < cut) break;
            const list = lists[i]!;
            const { docs, length } = list;
            // Candidates come in doc order and most lists probed are dense: the next posting or the
            // one after is usually the one, and a gallop is taken only past them.
            let p = pos[i]!;
            if (p < length && docs[p]! < d && ++p < length && docs[p]! < d) p = list.advance(p, d);
            pos[i] = p;
            if (p < length && docs[p] === d) {
              const tf = list.tfAt(p, d);
              const contribution = weightedTermScore(weights[i]!, tf, normBase + normPerLength * docLength[d]!);
              const w = wordOf[i]!;
              if (w < 0) score += contribution;
              else if (contribution > best[w]!) {
                fromWords += contribution - best[w]!;
                best[w] = contribution;
              }
            }
          }
          for (let w = 0; w < words; w++) {
            score += best[w]!;
            best[w] = 0;
          }
          if (i >= 0) continue; // pruned
          top.push(d, essentialExpansions ? this.scoreOf(qterms, d) : score);
          cut = top.threshold() * (1 - PRUNE_SLACK);
        }
      }
    }
    return top.sorted();
  }

  /** K for one document, in the form search uses (lengthNormParts). */
  private norm(doc: number): number {
    const { base, perLength } = lengthNormParts(this.params, this.avgDocLength);
    return base + perLength * this.docLength[doc]!;
  }

  /** One document's score by the same arithmetic, in the same order, as search. */
  private scoreOf(qterms: readonly QueryTerm[], doc: number, sum = new ScoreSum(wordCount(qterms))): number {
    const norm = this.norm(doc);
    for (let i = qterms.length - 1; i >= 0; i--) {
      const q = qterms[i]!;
      const tf = q.list.tfOf(doc);
      if (tf > 0) sum.add(q, weightedTermScore(q.weight, tf, norm));
    }
    return sum.take();
  }

  /** Exact scores of given documents (0 when nothing matches), equal to what search gives them. */
  scoreDocs(query: Bm25Query, docs: readonly number[]): number[] {
    const qterms = this.queryTerms(query);
    const sum = new ScoreSum(wordCount(qterms));
    return docs.map((d) => (this.has(d) ? this.scoreOf(qterms, d, sum) : 0));
  }

  /**
   * The most any document could score for the query: each unique term's weight qtf · idf · (k1 + 1),
   * the limit of its contribution as its frequency grows. A term no document holds counts with the
   * idf of document frequency 0, so a query whose rarest words match nothing cannot reach the top
   * of this scale by its common words alone. Scores divided by it lie in [0, 1).
   */
  maxScore(query: readonly string[]): number {
    const counts = new Map<string, number>();
    for (const t of query) counts.set(t, (counts.get(t) ?? 0) + 1);
    let max = 0;
    for (const [term, qtf] of counts) {
      const id = this.termIds.get(term);
      max += termWeight(this.params, idf(this.liveGroups, id === undefined ? 0 : this.lists[id]!.groupFreq), qtf);
    }
    return max;
  }

  /** More than any document or group can score for the query: the sum of its terms' weights (of each expanded word's, the largest). */
  scoreBound(query: Bm25Query): number {
    const qterms = this.queryTerms(query);
    const sum = new ScoreSum(wordCount(qterms));
    for (const q of qterms) sum.add(q, q.weight);
    return sum.take();
  }

  /**
   * BM25 of each document's group (its content item) scored as one document: a term's frequency
   * and the length are summed over the group's live documents, less what the overlaps between its
   * chunks count twice, so the group scores as its text once; lengths are normalized by
   * avgGroupLength. Terms are summed in the order scoreDocs uses, so where every group is one
   * document (avgGroupLength = avgDocLength) this equals scoreDocs bit for bit.
   */
  groupScores(query: Bm25Query, docs: readonly number[]): number[] {
    const qterms = this.queryTerms(query);
    const { base, perLength } = lengthNormParts(this.params, this.avgGroupLength);
    const { alive, docLength, groupOf } = this;
    const byGroup = new Map<number, number>();
    const sum = new ScoreSum(wordCount(qterms));
    return docs.map((doc) => {
      if (!this.has(doc)) return 0;
      const group = groupOf[doc]!;
      const known = byGroup.get(group);
      if (known !== undefined) return known;
      const members = this.members.get(group);
      if (!members) {
        const norm = base + perLength * docLength[doc]!;
        for (let i = qterms.length - 1; i >= 0; i--) {
          const tf = qterms[i]!.list.tfOf(doc);
          if (tf > 0) sum.add(qterms[i]!, weightedTermScore(qterms[i]!.weight, tf, norm));
        }
      } else {
        const overlap = this.overlaps.get(group);
        let length = 0;
        for (const m of members) if (alive[m] === 1) length += docLength[m]!;
        if (overlap) length = Math.max(0, length - overlap.length);
        const norm = base + perLength * length;
        const first = members[0]!;
        const last = members[members.length - 1]!;
        for (let i = qterms.length - 1; i >= 0; i--) {
          const list = qterms[i]!.list;
          let tf = 0;
          for (let p = list.advance(0, first); p < list.length && list.docs[p]! <= last; p++) {
            const d = list.docs[p]!;
            if (alive[d] === 1 && groupOf[d] === group) tf += list.tfAt(p, d);
          }
          if (overlap && tf > 0) tf = Math.max(0, tf - overlapTf(overlap, qterms[i]!.id));
          if (tf > 0) sum.add(qterms[i]!, weightedTermScore(qterms[i]!.weight, tf, norm));
        }
      }
      const score = sum.take();
      byGroup.set(group, score);
      return score;
    });
  }

  explain(query: Bm25Query, doc: number): ScoreExplanation | undefined {
    if (!this.has(doc)) return undefined;
    const avg = this.avgDocLength;
    const norm = this.norm(doc);
    const qterms = this.queryTerms(query);
    const terms = qterms.map((q) => {
      const tf = q.list.tfOf(doc);
      return { term: q.term, tf, docFreq: q.list.groupFreq, idf: q.idf, score: tf > 0 ? weightedTermScore(q.weight, tf, norm) : 0 };
    });
    const sum = new ScoreSum(wordCount(qterms));
    for (let i = qterms.length - 1; i >= 0; i--) sum.add(qterms[i]!, terms[i]!.score);
    return {
      // The same sum, in the same order, as scoreOf (terms that do not occur add exactly 0; of a
      // word's expansions, the best counts).
      score: sum.take(),
      docLength: this.docLength[doc]!,
      avgDocLength: avg,
      docCount: this.liveGroups,
      terms,
    };
  }

  /** Bytes held by postings and per-document arrays (for memory reports). */
  memoryBytes(): number {
    let bytes = this.alive.byteLength + this.docLength.byteLength + this.window.byteLength + this.windowBits.byteLength;
    for (const l of this.lists) bytes += l.docs.byteLength + l.tfs.byteLength + 48 + (l.bigTfs ? 64 + 32 * l.bigTfs.size : 0);
    bytes += this.docTerms.byteLength;
    for (const t of this.terms) bytes += 2 * t.length + 48;
    // Groups: each document's group and span, the members and overlaps of multi-chunk items.
    bytes += this.groupOf.byteLength + this.spanStart.byteLength + this.spanEnd.byteLength + this.groupStamp.byteLength + this.docStamp.byteLength;
    for (const m of this.members.values()) bytes += m.byteLength + 64;
    for (const o of this.overlaps.values()) bytes += o.ids.byteLength + o.tfs.byteLength + 96;
    return bytes;
  }

  // --- dump and load (snapshots: restart loads the index as it was instead of re-adding every document) ---

  /**
   * The index as flat typed arrays (snapshots/index-dump.ts writes them) that later changes leave as
   * they are, so a snapshot writes them while the index goes on: views of the postings (appended to
   * past a list's length, compacted into new arrays) and of per-document arrays only new documents
   * write, copies of those deletes and grouping write in place.
   */
  dump(): InvertedIndexDump {
    const n = this.lists.length;
    const listStats = new Uint32Array(4 * n);
    const minDocLength = new Float64Array(n);
    const rewrites = new Uint32Array(n);
    let bigs = 0;
    for (let t = 0; t < n; t++) {
      const l = this.lists[t]!;
      rewrites[t] = l.rewrites;
      listStats[4 * t] = l.length;
      listStats[4 * t + 1] = l.dead;
      listStats[4 * t + 2] = l.maxTf;
      listStats[4 * t + 3] = l.groupFreq;
      minDocLength[t] = l.minDocLength;
      bigs += l.bigTfs?.size ?? 0;
    }
    // Each list's postings as a view (the writer copies them out in order): no second copy of them all.
    const postingDocs: Int32Array<ArrayBuffer>[] = [];
    const postingTfs: Uint8Array<ArrayBuffer>[] = [];
    const bigTfs = new Int32Array(3 * bigs);
    let b = 0;
    for (let t = 0; t < n; t++) {
      const l = this.lists[t]!;
      postingDocs.push(l.docs.subarray(0, l.length) as Int32Array<ArrayBuffer>);
      postingTfs.push(l.tfs.subarray(0, l.length) as Uint8Array<ArrayBuffer>);
      if (l.bigTfs)
        for (const [doc, tf] of l.bigTfs) {
          bigTfs[b++] = t;
          bigTfs[b++] = doc;
          bigTfs[b++] = tf;
        }
    }
    const docs = this.maxDoc + 1;
    const memberKeys = Int32Array.from(this.members.keys());
    const memberOffsets = new Uint32Array(memberKeys.length + 1);
    memberKeys.forEach((k, i) => (memberOffsets[i + 1] = memberOffsets[i]! + this.members.get(k)!.length));
    const memberDocs = new Int32Array(memberOffsets[memberKeys.length]!);
    memberKeys.forEach((k, i) => memberDocs.set(this.members.get(k)!, memberOffsets[i]!));
    const overlapKeys = Int32Array.from(this.overlaps.keys());
    const overlapLengths = new Float64Array(overlapKeys.length);
    const overlapOffsets = new Uint32Array(overlapKeys.length + 1);
    overlapKeys.forEach((k, i) => {
      const o = this.overlaps.get(k)!;
      overlapLengths[i] = o.length;
      overlapOffsets[i + 1] = overlapOffsets[i]! + o.ids.length;
    });
    const overlapIds = new Int32Array(overlapOffsets[overlapKeys.length]!);
    const overlapTfs = new Int32Array(overlapIds.length);
    overlapKeys.forEach((k, i) => {
      const o = this.overlaps.get(k)!;
      overlapIds.set(o.ids, overlapOffsets[i]!);
      overlapTfs.set(o.tfs, overlapOffsets[i]!);
    });
    return {
      counters: Float64Array.of(this.liveDocs, this.totalLength, this.maxDoc, this.changes, this.overlapLength, this.liveGroups, this.settledUpTo),
      // A copy: the dump writes it later (snapshots/dump-file.ts encodes JSON when it writes).
      terms: this.terms.slice(),
      listStats,
      minDocLength,
      postingDocs,
      postingTfs,
      bigTfs,
      // Views where only new documents are written (past `docs`), copies where deletes and grouping write in place.
      docLength: this.docLength.subarray(0, docs),
      alive: this.alive.slice(0, docs),
      groupOf: this.groupOf.slice(0, docs),
      spanStart: this.spanStart.subarray(0, docs),
      spanEnd: this.spanEnd.subarray(0, docs),
      docTerms: this.docTerms.dump(),
      memberKeys,
      memberOffsets,
      memberDocs,
      overlapKeys,
      overlapLengths,
      overlapOffsets,
      overlapIds,
      overlapTfs,
      lineage: { of: this.lineage, lists: rewrites, pool: this.docTerms.rewrites },
    };
  }

  /**
   * Take over a dump (of an index with the same parameters) into this empty index. Posting lists,
   * members and the document-terms pool are views of the dump's arrays (no copy); a list that grows
   * later moves to an array of its own. The dump's postings array stays whole while any list still
   * points into it: after much growth since the restart, up to its size (0.45 KB per chunk at 100k
   * chunks) is held by lists that moved out, until the next restart. Reading each long list into an
   * array of its own instead cost 20% more time to read at 100k chunks, and more RSS at once.
   */
  load(d: InvertedIndexDump): void {
    if (this.maxDoc >= 0 || this.lists.length > 0) throw new Error('an index dump loads into an empty index');
    const n = d.terms.length;
    if (d.listStats.length !== 4 * n || d.minDocLength.length !== n) throw new Error('index dump: posting list stats do not match its terms');
    const [liveDocs, totalLength, maxDoc, changes, overlapLength, liveGroups, settledUpTo] = d.counters as unknown as number[];
    const docs = maxDoc! + 1;
    if (docs < 0 || [d.docLength, d.alive, d.groupOf, d.spanStart, d.spanEnd].some((a) => a.length !== docs))
      throw new Error('index dump: per-document arrays do not match its document count');
    const postingDocs = joined(d.postingDocs, Int32Array);
    const postingTfs = joined(d.postingTfs, Uint8Array);
    let at = 0;
    for (let t = 0; t < n; t++) {
      const term = d.terms[t]!;
      this.termIds.set(term, t);
      this.terms.push(term);
      const l = new PostingList();
      const length = d.listStats[4 * t]!;
      if (at + length > postingDocs.length) throw new Error('index dump: posting lists overrun their postings');
      l.docs = postingDocs.subarray(at, at + length);
      l.tfs = postingTfs.subarray(at, at + length);
      l.length = length;
      l.dead = d.listStats[4 * t + 1]!;
      l.maxTf = d.listStats[4 * t + 2]!;
      l.groupFreq = d.listStats[4 * t + 3]!;
      l.minDocLength = d.minDocLength[t]!;
      at += length;
      this.lists.push(l);
    }
    if (at !== postingDocs.length || postingTfs.length !== at) throw new Error('index dump: postings left over');
    for (let b = 0; b < d.bigTfs.length; b += 3) (this.lists[d.bigTfs[b]!]!.bigTfs ??= new Map()).set(d.bigTfs[b + 1]!, d.bigTfs[b + 2]!);
    // Per-document arrays at the capacity ensureCapacity would have given them.
    let cap = this.alive.length;
    while (cap < docs) cap *= 2;
    const sized = <T extends Uint32Array | Uint8Array | Int32Array>(from: T, make: (n: number) => T): T => {
      const a = make(cap);
      a.set(from as never);
      return a;
    };
    this.alive = sized(d.alive, (k) => new Uint8Array(k));
    this.docLength = sized(d.docLength, (k) => new Uint32Array(k));
    this.groupOf = sized(d.groupOf, (k) => new Int32Array(k));
    this.spanStart = sized(d.spanStart, (k) => new Int32Array(k).fill(-1));
    this.spanEnd = sized(d.spanEnd, (k) => new Int32Array(k).fill(-1));
    this.docTerms.load(d.docTerms);
    for (let i = 0; i < d.memberKeys.length; i++) this.members.set(d.memberKeys[i]!, d.memberDocs.subarray(d.memberOffsets[i]!, d.memberOffsets[i + 1]!));
    for (let i = 0; i < d.overlapKeys.length; i++) {
      const from = d.overlapOffsets[i]!;
      const to = d.overlapOffsets[i + 1]!;
      this.overlaps.set(d.overlapKeys[i]!, { ids: d.overlapIds.subarray(from, to), tfs: d.overlapTfs.subarray(from, to), length: d.overlapLengths[i]! });
    }
    this.liveDocs = liveDocs!;
    this.totalLength = totalLength!;
    this.maxDoc = maxDoc!;
    this.changes = changes!;
    this.overlapLength = overlapLength!;
    this.liveGroups = liveGroups!;
    this.settledUpTo = settledUpTo!;
    this.lineage = d.counters;
  }
}

/** An InvertedIndex as flat arrays (InvertedIndex.dump/load; snapshots/index-dump.ts writes them). */
export interface InvertedIndexDump {
  /** liveDocs, totalLength, maxDoc, changes, overlapLength, liveGroups, settledUpTo. */
  counters: Float64Array<ArrayBuffer>;
  /** By term id. */
  terms: readonly string[];
  /** Per term id: length, dead, maxTf, groupFreq. */
  listStats: Uint32Array<ArrayBuffer>;
  minDocLength: Float64Array<ArrayBuffer>;
  /** Every list's postings, in term id order: one array (read back), or one per list (dump()). */
  postingDocs: Int32Array<ArrayBuffer> | readonly Int32Array<ArrayBuffer>[];
  postingTfs: Uint8Array<ArrayBuffer> | readonly Uint8Array<ArrayBuffer>[];
  /** (term id, doc, tf) of the postings whose tf is BIG_TF or more. */
  bigTfs: Int32Array<ArrayBuffer>;
  /** Per document up to maxDoc. */
  docLength: Uint32Array<ArrayBuffer>;
  alive: Uint8Array<ArrayBuffer>;
  groupOf: Int32Array<ArrayBuffer>;
  spanStart: Int32Array<ArrayBuffer>;
  spanEnd: Int32Array<ArrayBuffer>;
  docTerms: DocTermsDump;
  /** Groups: their ids and, from memberOffsets[i] to memberOffsets[i + 1], their documents. */
  memberKeys: Int32Array<ArrayBuffer>;
  memberOffsets: Uint32Array<ArrayBuffer>;
  memberDocs: Int32Array<ArrayBuffer>;
  overlapKeys: Int32Array<ArrayBuffer>;
  overlapLengths: Float64Array<ArrayBuffer>;
  overlapOffsets: Uint32Array<ArrayBuffer>;
  overlapIds: Int32Array<ArrayBuffer>;
  overlapTfs: Int32Array<ArrayBuffer>;
  /**
   * Not written (dump() gives it): what an index delta needs to know the state it continues is this
   * one's past. `of`: the index (its lineage), `lists`: each list's compactions, `pool`: the
   * document-terms pool's.
   */
  lineage?: { of: object; lists: Uint32Array; pool: number };
}

/** One array of pieces (a dump handed straight to load, without a file in between; an index delta's base and tail). */
export function joined<T extends Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer> | Uint8Array<ArrayBuffer>>(
  a: T | readonly T[],
  make: new (n: number) => T,
): T {
  if (!Array.isArray(a)) return a as T;
  const out = new make((a as readonly T[]).reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of a as readonly T[]) {
    out.set(p as never, at);
    at += p.length;
  }
  return out;
}
