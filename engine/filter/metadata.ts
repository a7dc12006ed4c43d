// Metadata filters (expression.ts: pairs, operators, $and / $or) over an index of the items'
// metadata: documents per (key, value), and per key its values in order for ranges.
import type { DocSet } from './doc-set';
import { compileFilter, evaluate, inRange, nodeMatches, type Bound, type EvaluateOptions, type MetadataFilter, type Postings, type Scalar } from './expression';

export type { MetadataFilter } from './expression';
export type MetadataValue = string | number | boolean | string[];
export type Metadata = Record<string, MetadataValue>;

function scalarKey(v: Scalar): string {
  return typeof v === 'string' ? `s:${v}` : typeof v === 'number' ? `n:${v}` : `b:${v}`;
}

/** The pure rule, used to check single records and as the reference for the index below. */
export function matchesFilter(metadata: Metadata, filter: MetadataFilter): boolean {
  return nodeMatches(compileFilter(filter), metadata);
}

const valueOfKey = (k: string): Scalar => (k.startsWith('n:') ? Number(k.slice(2)) : k.startsWith('b:') ? k === 'b:true' : k.slice(2));

/**
 * The documents of one (key, value), ascending, in a typed array (a Set of numbers cost about ten
 * times the bytes). Documents come in increasing order, so adding appends; a removed document
 * becomes a tombstone (its number, bitwise negated, keeps the order for binary search) and the
 * list is rewritten without them once they are half of it.
 */
class DocList implements Postings {
  private docs = new Int32Array(2);
  length = 0;
  private dead = 0;

  get size(): number {
    return this.length - this.dead;
  }

  add(doc: number): void {
    const last = this.length > 0 ? this.docs[this.length - 1]! : -1;
    const lastDoc = last < 0 ? ~last : last;
    if (this.length > 0 && doc <= lastDoc) {
      // Out of order (not seen in practice) or already present: find its place.
      const at = this.find(doc);
      if (at < this.length && this.valueAt(at) === doc) {
        if (this.docs[at]! < 0) {
          this.docs[at] = doc;
          this.dead--;
        }
        return;
      }
      this.grow();
      this.docs.copyWithin(at + 1, at, this.length);
      this.docs[at] = doc;
      this.length++;
      return;
    }
    this.grow();
    this.docs[this.length++] = doc;
  }

  /** Whether it held the document. */
  delete(doc: number): boolean {
    const at = this.find(doc);
    if (at >= this.length || this.docs[at] !== doc) return false;
    this.docs[at] = ~doc;
    this.dead++;
    if (this.dead * 2 >= this.length) {
      let w = 0;
      for (let r = 0; r < this.length; r++) if (this.docs[r]! >= 0) this.docs[w++] = this.docs[r]!;
      this.length = w;
      this.dead = 0;
      if (this.docs.length > 8 && w * 2 < this.docs.length) this.docs = this.docs.slice(0, Math.max(2, w + (w >>> 2)));
    }
    return true;
  }

  copyTo(out: Uint32Array, at: number, space: number): number {
    const { docs, length } = this;
    for (let i = 0; i < length; i++) {
      const d = docs[i]!;
      if (d >= 0 && d < space) out[at++] = d;
    }
    return at;
  }

  setBits(words: Uint32Array): void {
    const { docs, length } = this;
    const space = words.length << 5;
    for (let i = 0; i < length; i++) {
      const d = docs[i]!;
      if (d >= 0 && d < space) words[d >>> 5]! |= 1 << (d & 31);
    }
  }

  private valueAt(i: number): number {
    const d = this.docs[i]!;
    return d < 0 ? ~d : d;
  }

  /** The first position whose document is ≥ doc. */
  private find(doc: number): number {
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.valueAt(mid) < doc) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private grow(): void {
    if (this.length < this.docs.length) return;
    const next = new Int32Array(this.length + Math.max(2, this.length >>> 1));
    next.set(this.docs);
    this.docs = next;
  }
}

/**
 * An inverted index from (key, value) to documents, so a filter becomes a set of documents (a
 * sorted list or a bitset) in time proportional to the matching documents rather than to the
 * whole knowledge base.
 */
export class MetadataIndex {
  private readonly postings = new Map<string, Map<string, DocList>>();
  /** Per key, its number and string values in order (for ranges), made when first asked and dropped when a value comes or goes. */
  private readonly ordered = new Map<string, { value: number | string; key: string }[]>();

  private entries(metadata: Metadata): [string, string][] {
    const out: [string, string][] = [];
    for (const [key, value] of Object.entries(metadata)) {
      const values: Scalar[] = Array.isArray(value) ? value : [value];
      for (const v of values) out.push([key, scalarKey(v)]);
      // An empty array: the key is there ($exists) with no value to match.
      if (values.length === 0) out.push([key, 'e:']);
    }
    return out;
  }

  add(doc: number, metadata: Metadata): void {
    for (const [key, value] of this.entries(metadata)) {
      let byValue = this.postings.get(key);
      if (!byValue) this.postings.set(key, (byValue = new Map()));
      let docs = byValue.get(value);
      if (!docs) {
        byValue.set(value, (docs = new DocList()));
        this.ordered.delete(key);
      }
      docs.add(doc);
    }
  }

  remove(doc: number, metadata: Metadata): void {
    for (const [key, value] of this.entries(metadata)) {
      const byValue = this.postings.get(key);
      const docs = byValue?.get(value);
      if (!docs) continue;
      docs.delete(doc);
      if (docs.size === 0) {
        byValue!.delete(value);
        this.ordered.delete(key);
      }
      if (byValue!.size === 0) this.postings.delete(key);
    }
  }

  /**
   * The live documents matching the filter (expression.ts evaluate): a sorted list when few, a
   * bitset when many. `live`: the live documents below `space` (a bitset); `metadataOf`: a live
   * document's metadata, as indexed (lets a few candidates be checked against a big condition).
   */
  matching(filter: MetadataFilter, at: { space: number; live: DocSet; metadataOf?: (doc: number) => Metadata | undefined }, options?: EvaluateOptions): DocSet {
    return evaluate(
      compileFilter(filter),
      {
        docSpace: at.space,
        live: at.live,
        metadataOf: at.metadataOf,
        postingsOf: (leaf) => {
          const byValue = this.postings.get(leaf.key);
          if (!byValue) return [];
          if (leaf.kind === 'exists') return [...byValue.values()];
          if (leaf.kind === 'range') return this.inRange(leaf.key, byValue, leaf.lower, leaf.upper);
          const out: DocList[] = [];
          for (const v of leaf.values) {
            const docs = byValue.get(scalarKey(v));
            if (docs) out.push(docs);
          }
          return out;
        },
      },
      options,
    );
  }

  /** The postings of the key's values in the range: a binary search over the key's ordered values, then on while in range. */
  private inRange(key: string, byValue: Map<string, DocList>, lower: Bound | undefined, upper: Bound | undefined): DocList[] {
    let ordered = this.ordered.get(key);
    if (!ordered) {
      ordered = [...byValue.keys()]
        .filter((k) => k.startsWith('n:') || k.startsWith('s:'))
        .map((k) => ({ value: valueOfKey(k) as number | string, key: k }))
        .sort((x, y) => (typeof x.value !== typeof y.value ? (typeof x.value === 'number' ? -1 : 1) : x.value < y.value ? -1 : x.value > y.value ? 1 : 0));
      this.ordered.set(key, ordered);
    }
    // The first value of the bounds' type at or past the lower bound, then on while in range.
    const type = typeof (lower ?? upper)!.value;
    let lo = 0;
    let hi = ordered.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const v = ordered[mid]!.value;
      const before = typeof v !== type ? type === 'string' : lower !== undefined && (v < lower.value || (!lower.inclusive && v === lower.value));
      if (before) lo = mid + 1;
      else hi = mid;
    }
    const out: DocList[] = [];
    for (let i = lo; i < ordered.length && inRange(ordered[i]!.value, lower, upper); i++) {
      const docs = byValue.get(ordered[i]!.key);
      if (docs) out.push(docs);
    }
    return out;
  }
}
