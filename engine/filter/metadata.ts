// Metadata filters (expression.ts: pairs, operators, $and / $or) over an index of the items'
// metadata: documents per (key, value), and per key its values in order for ranges.
import { compileFilter, evaluate, inRange, nodeMatches, type Bound, type FilterSource, type MetadataFilter, type Scalar } from './expression';

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
class DocList {
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

  forEach(fn: (doc: number) => void): void {
    for (let i = 0; i < this.length; i++) if (this.docs[i]! >= 0) fn(this.docs[i]!);
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
 * An inverted index from (key, value) to documents, so a filter becomes a per-document mask in
 * time proportional to the matching documents rather than to the whole knowledge base.
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

  /** Documents matching the filter, as a mask over `docSpace` document numbers; `liveMask`: 1 for every live document (negations are taken against it). */
  matching(filter: MetadataFilter, docSpace: number, liveMask: () => Uint8Array): Uint8Array {
    const source: FilterSource = {
      docSpace,
      eachWith: (key, value, visit) => this.postings.get(key)?.get(scalarKey(value))?.forEach(visit),
      eachWithKey: (key, visit) => {
        for (const docs of this.postings.get(key)?.values() ?? []) docs.forEach(visit);
      },
      eachInRange: (key, lower, upper, visit) => this.eachInRange(key, lower, upper, visit),
      liveMask,
    };
    return evaluate(compileFilter(filter), source);
  }

  /** Documents whose value of `key` lies in the range: a binary search over the key's ordered values, then their documents. */
  private eachInRange(key: string, lower: Bound | undefined, upper: Bound | undefined, visit: (doc: number) => void): void {
    const byValue = this.postings.get(key);
    if (!byValue) return;
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
    for (let i = lo; i < ordered.length && inRange(ordered[i]!.value, lower, upper); i++) byValue.get(ordered[i]!.key)?.forEach(visit);
  }
}
