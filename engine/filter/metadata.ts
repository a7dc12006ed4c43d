// Metadata filters: `{ key: value }` pairs that must all match. A scalar matches an equal value or
// an array value containing it; an array in the filter matches any of its values.

export type MetadataValue = string | number | boolean | string[];
export type Metadata = Record<string, MetadataValue>;
export type FilterValue = string | number | boolean | (string | number | boolean)[];
export type MetadataFilter = Record<string, FilterValue>;

type Scalar = string | number | boolean;

function scalarKey(v: Scalar): string {
  return typeof v === 'string' ? `s:${v}` : typeof v === 'number' ? `n:${v}` : `b:${v}`;
}

/** The pure rule, used to check single records and as the reference for the index below. */
export function matchesFilter(metadata: Metadata, filter: MetadataFilter): boolean {
  for (const [key, wanted] of Object.entries(filter)) {
    if (!Object.hasOwn(metadata, key)) return false;
    const have = metadata[key]!;
    const haveValues: Scalar[] = Array.isArray(have) ? have : [have];
    const wantedValues: Scalar[] = Array.isArray(wanted) ? wanted : [wanted];
    const haveKeys = new Set(haveValues.map(scalarKey));
    if (!wantedValues.some((w) => haveKeys.has(scalarKey(w)))) return false;
  }
  return true;
}

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

  private entries(metadata: Metadata): [string, string][] {
    const out: [string, string][] = [];
    for (const [key, value] of Object.entries(metadata)) {
      const values: Scalar[] = Array.isArray(value) ? value : [value];
      for (const v of values) out.push([key, scalarKey(v)]);
    }
    return out;
  }

  add(doc: number, metadata: Metadata): void {
    for (const [key, value] of this.entries(metadata)) {
      let byValue = this.postings.get(key);
      if (!byValue) this.postings.set(key, (byValue = new Map()));
      let docs = byValue.get(value);
      if (!docs) byValue.set(value, (docs = new DocList()));
      docs.add(doc);
    }
  }

  remove(doc: number, metadata: Metadata): void {
    for (const [key, value] of this.entries(metadata)) {
      const byValue = this.postings.get(key);
      const docs = byValue?.get(value);
      if (!docs) continue;
      docs.delete(doc);
      if (docs.size === 0) byValue!.delete(value);
      if (byValue!.size === 0) this.postings.delete(key);
    }
  }

  /** Documents matching every pair of the filter, as a sorted array. */
  matching(filter: MetadataFilter): number[] {
    let result: Set<number> | undefined;
    // Evaluate the most selective key first so intersections stay small.
    const clauses = Object.entries(filter).map(([key, wanted]) => {
      const byValue = this.postings.get(key);
      const union = new Set<number>();
      for (const w of Array.isArray(wanted) ? wanted : [wanted]) {
        byValue?.get(scalarKey(w))?.forEach((d) => union.add(d));
      }
      return union;
    });
    clauses.sort((a, b) => a.size - b.size);
    for (const clause of clauses) {
      if (result === undefined) {
        result = clause;
      } else {
        const next = new Set<number>();
        for (const d of result) if (clause.has(d)) next.add(d);
        result = next;
      }
      if (result.size === 0) break;
    }
    return result ? [...result].sort((a, b) => a - b) : [];
  }
}
