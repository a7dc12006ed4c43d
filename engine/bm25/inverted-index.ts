// An inverted index with BM25 ranking over documents identified by dense integer ids (one per
// chunk, assigned in increasing order by the caller). Postings are growable typed arrays; deletes
// are tombstones whose postings are compacted per term once they make up half of a list, so a
// delete never rebuilds the index.
import { DEFAULT_BM25, idf, lengthNorm, type Bm25Params, type ScoreExplanation } from './scorer';
import { TopK, type Scored } from '../topk';

const MAX_TF = 0xffff;

class PostingList {
  docs = new Int32Array(4);
  tfs = new Uint16Array(4);
  length = 0;
  /** Postings whose document was deleted but not yet compacted away. */
  dead = 0;

  get docFreq(): number {
    return this.length - this.dead;
  }

  push(doc: number, tf: number): void {
    if (this.length === this.docs.length) {
      const docs = new Int32Array(this.length * 2);
      docs.set(this.docs);
      this.docs = docs;
      const tfs = new Uint16Array(this.length * 2);
      tfs.set(this.tfs);
      this.tfs = tfs;
    }
    this.docs[this.length] = doc;
    this.tfs[this.length] = tf;
    this.length++;
  }

  compact(alive: Uint8Array): void {
    let w = 0;
    for (let r = 0; r < this.length; r++) {
      const d = this.docs[r]!;
      if (alive[d]) {
        this.docs[w] = d;
        this.tfs[w] = this.tfs[r]!;
        w++;
      }
    }
    this.length = w;
    this.dead = 0;
  }

  /** Binary search for `doc`'s tf (postings are sorted by doc id). */
  tfOf(doc: number): number {
    let lo = 0;
    let hi = this.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const d = this.docs[mid]!;
      if (d === doc) return this.tfs[mid]!;
      if (d < doc) lo = mid + 1;
      else hi = mid - 1;
    }
    return 0;
  }
}

export interface IndexedDoc {
  terms: readonly string[];
  tfs: readonly number[];
  length: number;
}

/** A parsed query: unique terms in first-seen order, with how often each was asked for. */
interface QueryTerm {
  term: string;
  list: PostingList;
  weight: number; // qtf · idf · (k1 + 1)
  idf: number;
}

export class InvertedIndex {
  private readonly termIds = new Map<string, number>();
  private readonly terms: string[] = [];
  private readonly lists: PostingList[] = [];
  private docLength = new Float64Array(1024);
  private docTermIds: (Int32Array | undefined)[] = [];
  private alive = new Uint8Array(1024);
  private liveDocs = 0;
  private totalLength = 0;
  private maxDoc = -1;
  // Scratch space for term-at-a-time accumulation; reused across searches (single-threaded).
  private acc = new Float64Array(1024);
  private touched = new Int32Array(1024);

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

  has(doc: number): boolean {
    return doc <= this.maxDoc && this.alive[doc] === 1;
  }

  private ensureCapacity(doc: number): void {
    if (doc < this.alive.length) return;
    let cap = this.alive.length;
    while (cap <= doc) cap *= 2;
    const grow = <T extends Float64Array | Uint8Array | Int32Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a as never);
      return b;
    };
    this.alive = grow(this.alive, (n) => new Uint8Array(n));
    this.docLength = grow(this.docLength, (n) => new Float64Array(n));
    this.acc = new Float64Array(cap);
    this.touched = new Int32Array(cap);
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
      if (list.length > 0 && list.docs[list.length - 1] === doc) list.tfs[list.length - 1] = Math.min(MAX_TF, list.tfs[list.length - 1]! + tf);
      else list.push(doc, Math.min(MAX_TF, tf));
    }
    this.docTermIds[doc] = ids;
    this.docLength[doc] = vector.length;
    this.alive[doc] = 1;
    this.liveDocs++;
    this.totalLength += vector.length;
  }

  remove(doc: number): boolean {
    if (!this.has(doc)) return false;
    this.alive[doc] = 0;
    this.liveDocs--;
    this.totalLength -= this.docLength[doc]!;
    const ids = this.docTermIds[doc]!;
    this.docTermIds[doc] = undefined;
    for (const id of ids) {
      const list = this.lists[id]!;
      list.dead++;
      if (list.dead * 2 >= list.length) list.compact(this.alive);
    }
    return true;
  }

  private queryTerms(query: readonly string[]): QueryTerm[] {
    const counts = new Map<string, number>();
    for (const t of query) counts.set(t, (counts.get(t) ?? 0) + 1);
    const out: QueryTerm[] = [];
    for (const [term, qtf] of counts) {
      const id = this.termIds.get(term);
      if (id === undefined) continue;
      const list = this.lists[id]!;
      if (list.docFreq === 0) continue;
      const termIdf = idf(this.liveDocs, list.docFreq);
      out.push({ term, list, idf: termIdf, weight: qtf * termIdf * (this.params.k1 + 1) });
    }
    return out;
  }

  /**
   * The k best documents for the analyzed query terms. `allowed`, when given, is a per-document
   * mask (1 = may match) applied while scoring, so a filter never truncates the results.
   */
  search(query: readonly string[], k: number, allowed?: Uint8Array): Scored[] {
    const qterms = this.queryTerms(query);
    if (qterms.length === 0 || k <= 0) return [];
    const { alive, docLength, acc, touched, params } = this;
    const avg = this.avgDocLength;
    let nTouched = 0;
    for (const q of qterms) {
      const { docs, tfs, length } = q.list;
      const w = q.weight;
      for (let i = 0; i < length; i++) {
        const d = docs[i]!;
        if (alive[d] === 0) continue;
        if (allowed !== undefined && allowed[d] !== 1) continue;
        const tf = tfs[i]!;
        const s = (w * tf) / (tf + lengthNorm(params, docLength[d]!, avg));
        if (acc[d] === 0) touched[nTouched++] = d;
        acc[d] += s;
      }
    }
    const top = new TopK(Math.min(k, nTouched));
    for (let i = 0; i < nTouched; i++) {
      const d = touched[i]!;
      top.push(d, acc[d]!);
      acc[d] = 0;
    }
    return top.sorted();
  }

  /** Exact scores of given documents (0 when nothing matches), by the same arithmetic as search. */
  scoreDocs(query: readonly string[], docs: readonly number[]): number[] {
    const qterms = this.queryTerms(query);
    const avg = this.avgDocLength;
    return docs.map((d) => {
      if (!this.has(d)) return 0;
      let score = 0;
      for (const q of qterms) {
        const tf = q.list.tfOf(d);
        if (tf > 0) score += (q.weight * tf) / (tf + lengthNorm(this.params, this.docLength[d]!, avg));
      }
      return score;
    });
  }

  explain(query: readonly string[], doc: number): ScoreExplanation | undefined {
    if (!this.has(doc)) return undefined;
    const avg = this.avgDocLength;
    const norm = lengthNorm(this.params, this.docLength[doc]!, avg);
    const terms = this.queryTerms(query).map((q) => {
      const tf = q.list.tfOf(doc);
      return { term: q.term, tf, docFreq: q.list.docFreq, idf: q.idf, score: tf > 0 ? (q.weight * tf) / (tf + norm) : 0 };
    });
    return {
      score: terms.reduce((s, t) => s + t.score, 0),
      docLength: this.docLength[doc]!,
      avgDocLength: avg,
      docCount: this.liveDocs,
      terms,
    };
  }

  /** Bytes held by postings and per-document arrays (for memory reports). */
  memoryBytes(): number {
    let bytes = this.alive.byteLength + this.docLength.byteLength + this.acc.byteLength + this.touched.byteLength;
    for (const l of this.lists) bytes += l.docs.byteLength + l.tfs.byteLength + 48;
    for (const ids of this.docTermIds) if (ids) bytes += ids.byteLength + 16;
    for (const t of this.terms) bytes += 2 * t.length + 48;
    return bytes;
  }
}
