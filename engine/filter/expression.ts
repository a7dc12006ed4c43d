// Metadata filter expressions, as Pinecone, Chroma and Qdrant users write them. Beside today's
// `{ key: value }` (equal, or an array holding it) and `{ key: [a, b] }` (any of them), a key takes
// an operator object — `$eq $ne $gt $gte $lt $lte $in $nin $exists`, several in one object all
// holding — and `$and` / `$or` take arrays of filters. Top-level keys all hold. Like MongoDB,
// `$ne` and `$nin` also match items without the key. Ranges compare numbers with numbers and
// strings with strings (ISO dates order as text); an array value matches when one of its strings does.
//
// A filter compiles once to a tree (compileFilter: a FilterError naming the path of what is wrong),
// which is evaluated on one item's metadata (the reference rule) or on the metadata index
// (metadata.ts: postings per value, sorted values per key for ranges) to a set of documents
// (doc-set.ts: a sorted list when small, a bitset when large).
import {
  andBits,
  andNotBits,
  clearBits,
  DocSet,
  filterByBits,
  filterList,
  intersectLists,
  orBits,
  setBits,
  subtractLists,
  unionLists,
  wordsFor,
} from './doc-set';

export type Scalar = string | number | boolean;
export type FilterValue = Scalar | Scalar[];
export interface FilterOperators {
  $eq?: Scalar;
  $ne?: Scalar;
  $gt?: number | string;
  $gte?: number | string;
  $lt?: number | string;
  $lte?: number | string;
  $in?: Scalar[];
  $nin?: Scalar[];
  $exists?: boolean;
}
export type MetadataFilter = { [key: string]: FilterValue | FilterOperators | MetadataFilter[] };

export interface Bound {
  value: number | string;
  inclusive: boolean;
}

export type FilterNode =
  | { kind: 'and'; children: FilterNode[] }
  | { kind: 'or'; children: FilterNode[] }
  | { kind: 'not'; child: FilterNode }
  /** The key holds one of the values (a scalar field equal to it, or an array field containing it). */
  | { kind: 'in'; key: string; values: Scalar[] }
  | { kind: 'exists'; key: string }
  | { kind: 'range'; key: string; lower?: Bound; upper?: Bound };

export class FilterError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

const OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists'] as const;
/** The most a filter nests ($and/$or inside each other) and the most conditions it holds. */
export const MAX_FILTER_DEPTH = 8;
export const MAX_FILTER_CONDITIONS = 256;

const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function scalarList(value: unknown, path: string, what: string): Scalar[] {
  if (!Array.isArray(value) || value.length === 0) throw new FilterError(path, `${what} takes a non-empty array of strings, numbers or booleans`);
  value.forEach((v, i) => {
    if (!isScalar(v)) throw new FilterError(`${path}/${i}`, 'must be a string, a number or a boolean');
  });
  return value as Scalar[];
}

function bound(value: unknown, path: string, op: string): number | string {
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'string') return value;
  throw new FilterError(path, `${op} compares with a number or a string; got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
}

/** The filter as a tree; FilterError (with the path, from `base`) when any part of it means nothing. */
export function compileFilter(filter: unknown, base = ''): FilterNode {
  let conditions = 0;
  const compile = (f: unknown, path: string, depth: number): FilterNode => {
    if (!isPlainObject(f)) throw new FilterError(path || '/', 'a filter is an object of key: condition pairs');
    if (depth > MAX_FILTER_DEPTH) throw new FilterError(path, `$and / $or nest at most ${MAX_FILTER_DEPTH} deep`);
    const children: FilterNode[] = [];
    for (const [key, condition] of Object.entries(f)) {
      const at = `${path}/${key}`;
      if (++conditions > MAX_FILTER_CONDITIONS) throw new FilterError(at, `a filter holds at most ${MAX_FILTER_CONDITIONS} conditions`);
      if (key === '$and' || key === '$or') {
        if (!Array.isArray(condition) || condition.length === 0) throw new FilterError(at, `${key} takes a non-empty array of filters`);
        const parts = condition.map((c, i) => compile(c, `${at}/${i}`, depth + 1));
        children.push({ kind: key === '$and' ? 'and' : 'or', children: parts });
      } else if (key.startsWith('$')) {
        throw new FilterError(at, `unknown operator ${key} at this level: $and or $or (operators such as $gt go inside a key: { "year": { "$gt": 2020 } })`);
      } else {
        children.push(keyCondition(key, condition, at));
      }
    }
    return children.length === 1 ? children[0]! : { kind: 'and', children };
  };
  return compile(filter, base, 0);
}

function keyCondition(key: string, condition: unknown, at: string): FilterNode {
  if (isScalar(condition)) return { kind: 'in', key, values: [condition] };
  if (Array.isArray(condition)) return { kind: 'in', key, values: scalarList(condition, at, 'a list of values') };
  if (!isPlainObject(condition))
    throw new FilterError(at, 'must be a string, a number, a boolean, an array of them, or an operator object such as { "$gte": 2020 }');
  const ops = Object.entries(condition);
  if (ops.length === 0) throw new FilterError(at, 'an operator object needs at least one operator');
  const parts: FilterNode[] = [];
  let lower: Bound | undefined;
  let upper: Bound | undefined;
  for (const [op, value] of ops) {
    const p = `${at}/${op}`;
    switch (op) {
      case '$eq':
        if (!isScalar(value)) throw new FilterError(p, '$eq takes a string, a number or a boolean');
        parts.push({ kind: 'in', key, values: [value] });
        break;
      case '$ne':
        if (!isScalar(value)) throw new FilterError(p, '$ne takes a string, a number or a boolean');
        parts.push({ kind: 'not', child: { kind: 'in', key, values: [value] } });
        break;
      case '$in':
        parts.push({ kind: 'in', key, values: scalarList(value, p, '$in') });
        break;
      case '$nin':
        parts.push({ kind: 'not', child: { kind: 'in', key, values: scalarList(value, p, '$nin') } });
        break;
      case '$exists':
        if (typeof value !== 'boolean') throw new FilterError(p, '$exists takes true or false');
        parts.push(value ? { kind: 'exists', key } : { kind: 'not', child: { kind: 'exists', key } });
        break;
      case '$gt':
      case '$gte':
        lower = { value: bound(value, p, op), inclusive: op === '$gte' };
        break;
      case '$lt':
      case '$lte':
        upper = { value: bound(value, p, op), inclusive: op === '$lte' };
        break;
      default:
        throw new FilterError(p, `unknown operator ${op}: one of ${OPERATORS.join(', ')}`);
    }
  }
  if (lower && upper && typeof lower.value !== typeof upper.value)
    throw new FilterError(at, 'a range compares numbers with numbers or strings with strings, not both');
  if (lower || upper) parts.push({ kind: 'range', key, lower, upper });
  return parts.length === 1 ? parts[0]! : { kind: 'and', children: parts };
}

/** Whether a value satisfies a range: same type as the bounds, within them. */
export function inRange(value: Scalar, lower: Bound | undefined, upper: Bound | undefined): boolean {
  const type = (lower ?? upper)!.value;
  if (typeof value !== typeof type) return false;
  if (lower && (value < lower.value || (!lower.inclusive && value === lower.value))) return false;
  if (upper && (value > upper.value || (!upper.inclusive && value === upper.value))) return false;
  return true;
}

type Metadata = Record<string, Scalar | string[]>;

const valuesOf = (metadata: Metadata, key: string): Scalar[] | undefined => {
  if (!Object.hasOwn(metadata, key)) return undefined;
  const v = metadata[key]!;
  return Array.isArray(v) ? v : [v];
};

/** The rule on one item's metadata: the reference the index must equal. */
export function nodeMatches(node: FilterNode, metadata: Metadata): boolean {
  switch (node.kind) {
    case 'and':
      return node.children.every((c) => nodeMatches(c, metadata));
    case 'or':
      return node.children.some((c) => nodeMatches(c, metadata));
    case 'not':
      return !nodeMatches(node.child, metadata);
    case 'exists':
      return Object.hasOwn(metadata, node.key);
    case 'in': {
      const have = valuesOf(metadata, node.key);
      return have !== undefined && node.values.some((w) => have.some((h) => h === w));
    }
    case 'range': {
      const have = valuesOf(metadata, node.key);
      return have !== undefined && have.some((h) => inRange(h, node.lower, node.upper));
    }
  }
}

// --- evaluation on an index ----------------------------------------------------------------------

type Leaf = Extract<FilterNode, { kind: 'in' | 'exists' | 'range' }>;

/** The documents of one (key, value) of the index, ascending. */
export interface Postings {
  /** How many (at least as many as it copies). */
  readonly size: number;
  /** Write its documents below `space` to out[at…] in order; the end. */
  copyTo(out: Uint32Array, at: number, space: number): number;
  /** Set its documents' bits (those within `words`). */
  setBits(words: Uint32Array): void;
}

/** What the evaluation reads of an index: the postings a leaf unites, the live documents, a document's metadata. */
export interface FilterSource {
  /** Upper bound of document numbers. */
  docSpace: number;
  /** The postings whose union is the leaf: one per value it matches. */
  postingsOf(leaf: Leaf): Postings[];
  /** The live documents as a bitset (read only): what a negation is taken against, and what every result is kept within. */
  live: DocSet;
  /**
   * A live document's metadata (undefined for any other): a few candidates are checked one by one
   * against a condition that matches many more documents than they are, instead of evaluating it.
   */
  metadataOf?(doc: number): Metadata | undefined;
}

export interface EvaluateOptions {
  /** A result estimated at most this many documents is a sorted list, a larger one a bitset (default: docSpace / 32, the bitset's words). */
  listMax?: number;
  /**
   * In an $and, a condition that would cost more than this many times the documents found so far
   * (their count, by the postings' sizes) is checked on each of them by the rule (default 8;
   * Infinity: never; needs metadataOf).
   */
  checkFactor?: number;
}

/**
 * The live documents matching the tree. Every node's size is estimated from the postings' sizes
 * (a leaf: the sum of its values' documents; $and: its smallest condition; $or: the sum), and a
 * result estimated small is a sorted list, a large one a bitset. Leaves copy or set their postings
 * (time in proportion to what they match). $and starts from its smallest condition and intersects
 * (merging, or galloping when the sizes differ much), subtracts its negations' documents rather
 * than taking their complements, and checks a big condition on each of a few documents instead of
 * evaluating it. $or merges lists or sets bits. A negation alone is the live bitset with the
 * inner documents cleared. So a selective filter costs about what it matches, and one that matches
 * half the knowledge base costs word loops over its bitset, never a byte per document.
 */
export function evaluate(node: FilterNode, source: FilterSource, options: EvaluateOptions = {}): DocSet {
  const result = new Evaluation(source, options).eval(node);
  const live = source.live.bits();
  if (result.isList) return DocSet.ofList(filterByBits(result.list(), live, true), source.docSpace);
  const words = result.bits();
  andBits(words, live);
  return DocSet.ofBits(words, source.docSpace);
}

class Evaluation {
  private readonly space: number;
  private readonly listMax: number;
  private readonly checkFactor: number;
  private readonly liveCount: number;
  private readonly estimates = new Map<FilterNode, number>();
  private readonly postings = new Map<FilterNode, Postings[]>();

  constructor(
    private readonly source: FilterSource,
    options: EvaluateOptions,
  ) {
    this.space = source.docSpace;
    this.listMax = options.listMax ?? this.space >>> 5;
    this.checkFactor = source.metadataOf ? (options.checkFactor ?? 8) : Infinity;
    this.liveCount = source.live.size;
  }

  private leafPostings(leaf: Leaf): Postings[] {
    let lists = this.postings.get(leaf);
    if (!lists) this.postings.set(leaf, (lists = this.source.postingsOf(leaf)));
    return lists;
  }

  /** At least as many documents as the node matches. */
  estimate(node: FilterNode): number {
    let n = this.estimates.get(node);
    if (n !== undefined) return n;
    switch (node.kind) {
      case 'in':
      case 'exists':
      case 'range':
        n = 0;
        for (const p of this.leafPostings(node)) n += p.size;
        break;
      case 'not':
        n = this.liveCount;
        break;
      case 'or':
        n = 0;
        for (const c of node.children) n += this.estimate(c);
        break;
      case 'and':
        n = this.liveCount;
        for (const c of node.children) if (c.kind !== 'not') n = Math.min(n, this.estimate(c));
        break;
    }
    n = Math.min(n, this.liveCount);
    this.estimates.set(node, n);
    return n;
  }

  /** The node's documents (possibly some that are not live: evaluate keeps the live ones). The set is the caller's to change. */
  eval(node: FilterNode): DocSet {
    switch (node.kind) {
      case 'in':
      case 'exists':
      case 'range':
        return this.leaf(node);
      case 'not':
        return this.not(node.child);
      case 'or':
        return this.or(node.children);
      case 'and':
        return this.and(node.children);
    }
  }

  private leaf(leaf: Leaf): DocSet {
    const lists = this.leafPostings(leaf);
    const est = this.estimate(leaf);
    const { space } = this;
    if (est > this.listMax) {
      const words = wordsFor(space);
      for (const p of lists) p.setBits(words);
      return DocSet.ofBits(words, space);
    }
    let total = 0;
    for (const p of lists) total += p.size;
    let out = new Uint32Array(total);
    let n = 0;
    for (const p of lists) n = p.copyTo(out, n, space);
    out = out.subarray(0, n);
    if (lists.length > 1) {
      // Several values' documents: in order, each once (an array value puts a document under several).
      out.sort();
      let w = 0;
      for (let r = 0; r < n; r++) if (w === 0 || out[r] !== out[w - 1]) out[w++] = out[r]!;
      out = out.subarray(0, w);
    }
    return DocSet.ofList(out, space);
  }

  private not(child: FilterNode): DocSet {
    const inner = this.eval(child);
    const words = this.source.live.bits().slice(0, (this.space + 31) >>> 5);
    if (inner.isList) clearBits(words, inner.list());
    else andNotBits(words, inner.bits());
    const out = DocSet.ofBits(words, this.space);
    return this.liveCount <= this.listMax ? DocSet.ofList(out.list(), this.space) : out;
  }

  private or(children: FilterNode[]): DocSet {
    const { space } = this;
    let sum = 0;
    for (const c of children) sum += this.estimate(c);
    if (sum <= this.listMax) {
      let acc: DocSet | undefined;
      for (const c of children) {
        const s = this.eval(c);
        acc = acc === undefined ? s : union(acc, s, space);
      }
      return acc!;
    }
    const words = wordsFor(space);
    for (const c of children) {
      if (c.kind === 'in' || c.kind === 'exists' || c.kind === 'range') {
        for (const p of this.leafPostings(c)) p.setBits(words);
        continue;
      }
      const s = this.eval(c);
      if (s.isList) setBits(words, s.list());
      else orBits(words, s.bits());
    }
    return DocSet.ofBits(words, space);
  }

  private and(children: FilterNode[]): DocSet {
    const { space, source } = this;
    // Conditions by what they cost: the smallest first; negations cost their inner condition, subtracted.
    const cost = (c: FilterNode) => this.estimate(c.kind === 'not' ? c.child : c);
    const positives = children.filter((c) => c.kind !== 'not').sort((a, b) => this.estimate(a) - this.estimate(b));
    const negations = children.filter((c) => c.kind === 'not').sort((a, b) => cost(a) - cost(b));
    let acc: DocSet;
    const rest: FilterNode[] = [...positives, ...negations];
    if (positives.length === 0) {
      // Only negations: the live documents less each one's inner documents.
      acc = DocSet.ofBits(source.live.bits().slice(0, (space + 31) >>> 5), space, this.liveCount);
    } else acc = this.eval(rest.shift()!);
    for (const c of rest) {
      if (acc.isList) {
        if (acc.size === 0) return acc;
        if (cost(c) > this.checkFactor * acc.size) {
          const metadataOf = source.metadataOf!;
          acc = DocSet.ofList(
            filterList(acc.list(), (d) => {
              const m = metadataOf(d);
              return m !== undefined && nodeMatches(c, m);
            }),
            space,
          );
          continue;
        }
      }
      acc = c.kind === 'not' ? subtract(acc, this.eval(c.child), space) : intersect(acc, this.eval(c), space);
    }
    return acc;
  }
}

function union(a: DocSet, b: DocSet, space: number): DocSet {
  if (a.isList && b.isList) return DocSet.ofList(unionLists(a.list(), b.list()), space);
  const [bits, other] = a.isList ? [b, a] : [a, b];
  const words = bits.bits();
  if (other.isList) setBits(words, other.list());
  else orBits(words, other.bits());
  return DocSet.ofBits(words, space);
}

function intersect(a: DocSet, b: DocSet, space: number): DocSet {
  if (a.isList && b.isList) return DocSet.ofList(intersectLists(a.list(), b.list()), space);
  if (a.isList) return DocSet.ofList(filterByBits(a.list(), b.bits(), true), space);
  if (b.isList) return DocSet.ofList(filterByBits(b.list(), a.bits(), true), space);
  const words = a.bits();
  andBits(words, b.bits());
  return DocSet.ofBits(words, space);
}

function subtract(a: DocSet, b: DocSet, space: number): DocSet {
  if (a.isList) return DocSet.ofList(b.isList ? subtractLists(a.list(), b.list()) : filterByBits(a.list(), b.bits(), false), space);
  const words = a.bits();
  if (b.isList) clearBits(words, b.list());
  else andNotBits(words, b.bits());
  return DocSet.ofBits(words, space);
}
