// JSON → `key.path: value` lines for every string, number and boolean (nulls, empty strings and
// empty containers are left out). Array elements are `key[0]`. Each top-level entry whose value is
// an object or array becomes its own block (a blank line around it), so chunks follow records.
import { ExtractionError, formatCount, reasonOf } from '../errors';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function scalarText(v: Json): string | undefined {
  if (typeof v === 'string') {
    const s = v.replace(/\s+/g, ' ').trim();
    return s || undefined;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function joinPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Lines for one value, walking with an explicit stack (deep nesting cannot overflow the stack). */
function flatten(root: Json, rootPath: string, lines: string[], maxChars: number, count: { chars: number }): void {
  const stack: Array<[string, Json]> = [[rootPath, root]];
  while (stack.length > 0) {
    const [path, value] = stack.pop()!;
    if (value !== null && typeof value === 'object') {
      const children: Array<[string, Json]> = Array.isArray(value)
        ? value.map((v, i) => [`${path}[${i}]`, v])
        : Object.entries(value).map(([k, v]) => [joinPath(path, k), v]);
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
      continue;
    }
    const text = scalarText(value);
    if (text === undefined) continue;
    const line = path ? `${path}: ${text}` : text;
    count.chars += line.length + 1;
    if (count.chars > maxChars) throw new ExtractionError('TOO_LARGE', `The text extracted from the file is longer than ${formatCount(maxChars)} characters.`);
    lines.push(line);
  }
}

export function jsonToText(source: string, maxChars: number): string {
  let data: Json;
  try {
    data = JSON.parse(source.replace(/^\uFEFF/, '')) as Json;
  } catch (err) {
    throw new ExtractionError('EXTRACTION_FAILED', 'The JSON file is not valid JSON.', reasonOf(err));
  }
  const count = { chars: 0 };
  const blocks: string[] = [];
  const entries: Array<[string, Json]> = Array.isArray(data)
    ? data.map((v, i) => [`[${i}]`, v])
    : data !== null && typeof data === 'object'
      ? Object.entries(data)
      : [['', data]];
  let flat: string[] = [];
  const flushFlat = () => {
    if (flat.length > 0) blocks.push(flat.join('\n'));
    flat = [];
  };
  for (const [key, value] of entries) {
    if (value !== null && typeof value === 'object') {
      flushFlat();
      const lines: string[] = [];
      flatten(value, key, lines, maxChars, count);
      if (lines.length > 0) blocks.push(lines.join('\n'));
    } else {
      flatten(value, key, flat, maxChars, count);
    }
  }
  flushFlat();
  return blocks.join('\n\n');
}
