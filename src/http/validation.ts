// Turns Elysia/TypeBox validation failures into the envelope's `details`: one entry per problem,
// each naming the field, what it must be (enum values by name, length and range bounds, types) and
// what was sent (cut short). Messages are written from the failing schema, never from TypeBox's
// own wording ("should be one of: 'string', 'string'").
import { ApiError, type ErrorDetail } from '../errors';

interface Schema {
  type?: string;
  const?: unknown;
  anyOf?: Schema[];
  items?: Schema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  properties?: Record<string, Schema>;
  format?: string;
}

interface TypeBoxIssue {
  type?: number;
  path?: string;
  message?: string;
  schema?: Schema;
  value?: unknown;
}

/** TypeBox's ValueErrorType for a missing required property. */
const REQUIRED_PROPERTY = 45;
const SHOWN_CHARS = 40;

const count = (n: number) => n.toLocaleString('en-US');
const plural = (n: number, one: string, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`;

function join(words: string[], last = 'or'): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} ${last} ${words.at(-1)}`;
}

function lengthBounds(min: number | undefined, max: number | undefined, unit: string): string {
  if (min !== undefined && max !== undefined) return min === max ? ` of exactly ${plural(min, unit)}` : ` of ${count(min)}–${count(max)} ${unit}s`;
  if (max !== undefined) return ` of at most ${plural(max, unit)}`;
  if (min !== undefined && min > 0) return ` of at least ${plural(min, unit)}`;
  return '';
}

function numberBounds(s: Schema): string {
  const low = s.minimum ?? s.exclusiveMinimum;
  const high = s.maximum ?? s.exclusiveMaximum;
  if (s.minimum !== undefined && s.maximum !== undefined) return ` between ${s.minimum} and ${s.maximum}`;
  const parts: string[] = [];
  if (low !== undefined) parts.push(`${s.exclusiveMinimum !== undefined ? '>' : '≥'} ${low}`);
  if (high !== undefined) parts.push(`${s.exclusiveMaximum !== undefined ? '<' : '≤'} ${high}`);
  return parts.length > 0 ? ` ${parts.join(' and ')}` : '';
}

/** What a value of this schema is, as a noun phrase ("a string of 1–256 characters"). */
export function expected(s: Schema): string {
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf) {
    if (s.anyOf.every((a) => a.const !== undefined)) return `one of ${s.anyOf.map((a) => String(a.const)).join(', ')}`;
    return join(s.anyOf.map(expected));
  }
  switch (s.type) {
    case 'string':
      return `a string${lengthBounds(s.minLength, s.maxLength, 'character')}${s.format ? ` (${s.format})` : ''}`;
    case 'number':
      return `a number${numberBounds(s)}`;
    case 'integer':
      return `an integer${numberBounds(s)}`;
    case 'boolean':
      return 'a boolean';
    case 'null':
      return 'null';
    case 'array': {
      const items = s.items ? pluralOf(s.items) : 'items';
      if (s.maxItems !== undefined && s.minItems !== undefined) return `an array of ${count(s.minItems)}–${count(s.maxItems)} ${items}`;
      if (s.maxItems !== undefined) return `an array of at most ${count(s.maxItems)} ${items}`;
      return `an array of ${items}`;
    }
    case 'object':
      return s.maxProperties !== undefined ? `an object of at most ${plural(s.maxProperties, 'key')}` : 'an object';
    default:
      return 'a valid value';
  }
}

/** Many values of a schema: "strings of at most 1,024 characters each", "strings, numbers or booleans". */
function pluralOf(s: Schema): string {
  if (s.anyOf) return join(s.anyOf.map(pluralOf));
  const bounds = s.type === 'string' && s.maxLength !== undefined ? ` of at most ${count(s.maxLength)} characters each` : '';
  const noun: Record<string, string> = { string: 'strings', number: 'numbers', integer: 'integers', boolean: 'booleans', object: 'objects', array: 'arrays' };
  return `${noun[s.type ?? ''] ?? 'values'}${bounds}`;
}

/** What was sent, briefly: `"FOO"`, `5`, `a string of 1,025 characters`, `an array of 2 items`. */
export function received(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const chars = [...value].length;
    if (chars > SHOWN_CHARS) return `a string of ${plural(chars, 'character')} ("${[...value].slice(0, 24).join('')}…")`;
    return JSON.stringify(value);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `an array of ${plural(value.length, 'item')}`;
  return 'an object';
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** The union member a value was meant for: the only one of its JSON type, if there is exactly one. */
function intendedMember(union: Schema[], value: unknown): Schema | undefined {
  const type = jsonType(value);
  const matches = union.filter((m) => m.const === undefined && (m.type === type || (m.type === 'number' && type === 'integer')));
  return matches.length === 1 ? matches[0] : undefined;
}

/** The first item of an array that its item schema refuses, by JSON type or string length. */
function badItem(items: Schema, value: unknown[]): { index: number; item: unknown } | undefined {
  const index = value.findIndex((item) => {
    const type = jsonType(item);
    const allowed = items.anyOf ? items.anyOf.map((a) => a.type) : [items.type];
    if (!allowed.includes(type) && !(type === 'integer' && allowed.includes('number'))) return true;
    return typeof item === 'string' && items.maxLength !== undefined && [...item].length > items.maxLength;
  });
  return index < 0 ? undefined : { index, item: value[index] };
}

function problem(schema: Schema, value: unknown): string {
  if (schema.anyOf) {
    const member = intendedMember(schema.anyOf, value);
    // A value of the right kind that breaks that kind's bounds: say the bound, not the whole union.
    if (member) return problem(member, value);
  }
  if (schema.type === 'array' && Array.isArray(value) && schema.items && (schema.maxItems === undefined || value.length <= schema.maxItems)) {
    const bad = badItem(schema.items, value);
    if (bad) return `must be ${expected(schema)}; item ${bad.index} is ${received(bad.item)}`;
  }
  return `must be ${expected(schema)}; got ${received(value)}`;
}

function fieldName(path: string): string {
  return path.slice(1).replaceAll('/', '.');
}

/** Names other services use for our fields: a client moving over gets pointed at ours. */
const FIELD_ALIASES: Record<string, string> = {
  filter: 'metadataFilter',
  filters: 'metadataFilter',
  where: 'metadataFilter',
  k: 'limit',
  topk: 'limit',
  top_k: 'limit',
  q: 'query',
  text: 'query',
  weight: 'semanticWeight',
  alpha: 'semanticWeight',
  score_threshold: 'minScore',
  max_chunks_per_document: 'maxChunksPerContent',
  typo_tolerance: 'typoTolerance',
  fuzzy: 'typoTolerance',
  fuzziness: 'typoTolerance',
};

/** A field the object does take that `unknown` was probably meant to be. */
function likelyField(unknown: string, known: readonly string[]): string | undefined {
  const alias = FIELD_ALIASES[unknown.toLowerCase()];
  if (alias && known.includes(alias)) return alias;
  const lower = unknown.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(lower, k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(unknown.length / 4)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

function describeIssue(issue: TypeBoxIssue): ErrorDetail {
  const path = issue.path || '/';
  const field = fieldName(path);
  if (issue.message === 'Unexpected property') {
    const meant = likelyField(field, Object.keys(issue.schema?.properties ?? {}));
    return { path, message: `unknown field '${field}'${meant ? ` (did you mean '${meant}'?)` : ''}` };
  }
  if (issue.type === REQUIRED_PROPERTY) return { path, message: `'${field}' is required${issue.schema ? ` (${expected(issue.schema)})` : ''}` };
  if (!issue.schema) return { path, message: issue.message ?? 'invalid value' };
  return { path, message: problem(issue.schema, issue.value) };
}

export function validationError(error: { all?: TypeBoxIssue[] }, where: string): ApiError {
  // One entry per field: TypeBox may report a field twice (missing, then not matching its union).
  const byPath = new Map<string, ErrorDetail>();
  for (const issue of error.all ?? []) {
    const path = issue.path || '/';
    if (!byPath.has(path)) byPath.set(path, describeIssue(issue));
  }
  const details = [...byPath.values()];
  const first = details[0];
  const message = first ? `Invalid ${where}: ${first.path === '/' ? first.message : `${fieldName(first.path)}: ${first.message}`}` : `Invalid ${where}`;
  return new ApiError('VALIDATION_ERROR', message, details);
}
