// Metadata filter expressions, as Pinecone, Chroma and Qdrant users write them. Beside today's
// `{ key: value }` (equal, or an array holding it) and `{ key: [a, b] }` (any of them), a key takes
// an operator object — `$eq $ne $gt $gte $lt $lte $in $nin $exists`, several in one object all
// holding — and `$and` / `$or` take arrays of filters. Top-level keys all hold. Like MongoDB,
// `$ne` and `$nin` also match items without the key. Ranges compare numbers with numbers and
// strings with strings (ISO dates order as text); an array value matches when one of its strings does.
//
// A filter compiles once to a tree (compileFilter: a FilterError naming the path of what is wrong),
// which is evaluated on one item's metadata (the reference rule) or on the metadata index
// (metadata.ts: postings per value, sorted values per key for ranges).

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

/** What the evaluation reads of an index: documents by value, by key, in a range, and which are live. */
export interface FilterSource {
  /** Upper bound of document numbers (masks are this long). */
  docSpace: number;
  eachWith(key: string, value: Scalar, visit: (doc: number) => void): void;
  eachWithKey(key: string, visit: (doc: number) => void): void;
  eachInRange(key: string, lower: Bound | undefined, upper: Bound | undefined, visit: (doc: number) => void): void;
  /** 1 for every live document (what a negation is taken against). */
  liveMask(): Uint8Array;
}

/**
 * The documents matching the tree, as a mask over the document numbers. Leaves set the bits of
 * their postings (time in proportion to what they match); and, or and not are byte loops over the
 * mask (a million documents in about a millisecond), so a compound never sorts or merges lists.
 */
export function evaluate(node: FilterNode, source: FilterSource): Uint8Array {
  const leaf = (fill: (set: (doc: number) => void) => void) => {
    const mask = new Uint8Array(source.docSpace);
    fill((doc) => {
      if (doc < mask.length) mask[doc] = 1;
    });
    return mask;
  };
  switch (node.kind) {
    case 'in':
      return leaf((set) => {
        for (const v of node.values) source.eachWith(node.key, v, set);
      });
    case 'exists':
      return leaf((set) => source.eachWithKey(node.key, set));
    case 'range':
      return leaf((set) => source.eachInRange(node.key, node.lower, node.upper, set));
    case 'not': {
      const inner = evaluate(node.child, source);
      const live = source.liveMask();
      for (let d = 0; d < inner.length; d++) inner[d] = live[d]! & (inner[d]! ^ 1);
      return inner;
    }
    case 'or': {
      const [first, ...rest] = node.children.map((c) => evaluate(c, source));
      for (const m of rest) for (let d = 0; d < first!.length; d++) first![d]! |= m[d]!;
      return first!;
    }
    case 'and': {
      const [first, ...rest] = node.children.map((c) => evaluate(c, source));
      if (!first) return source.liveMask().slice();
      for (const m of rest) for (let d = 0; d < first.length; d++) first[d]! &= m[d]!;
      return first;
    }
  }
}
