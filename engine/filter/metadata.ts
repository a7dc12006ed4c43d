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
 * An inverted index from (key, value) to documents, so a filter becomes a per-document mask in
 * time proportional to the matching documents rather than to the whole knowledge base.
 */
export class MetadataIndex {
  private readonly postings = new Map<string, Map<string, Set<number>>>();

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
      if (!docs) byValue.set(value, (docs = new Set()));
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
        for (const d of byValue?.get(scalarKey(w)) ?? []) union.add(d);
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
