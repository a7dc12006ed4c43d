// JSON body reading (src/http/body.ts) as plain functions: the nesting scan, and the string
// conversion given to objects whose own "toString" is data.
import { describe, expect, test } from 'bun:test';
import { ApiError } from '../../src/errors';
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJsonText } from '../../src/http/body';

describe('nestsDeeperThan', () => {
  test('counts arrays and objects, not brackets inside strings or after escaped quotes', () => {
    expect(nestsDeeperThan('[[[1]]]', 3)).toBe(false);
    expect(nestsDeeperThan('[[[[1]]]]', 3)).toBe(true);
    expect(nestsDeeperThan('{"a":{"b":{"c":{}}}}', 3)).toBe(true);
    expect(nestsDeeperThan('["[[[[[[", "\\"[[[[[["]', 1)).toBe(false);
    expect(nestsDeeperThan('["\\\\", [[1]]]', 2)).toBe(true);
    expect(nestsDeeperThan('"unterminated [[[[', 1)).toBe(false);
  });
});

describe('parseJsonText', () => {
  test(`refuses nesting deeper than ${MAX_JSON_DEPTH} with a VALIDATION_ERROR naming the path`, () => {
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    let caught: unknown;
    try {
      parseJsonText(deep, '/metadata');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect((caught as ApiError).code).toBe('VALIDATION_ERROR');
    expect((caught as ApiError).details?.[0]?.path).toBe('/metadata');
    expect(parseJsonText('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBeArray();
  });

  test('bad JSON is INVALID_JSON', () => {
    expect(() => parseJsonText('{"a":')).toThrow('not valid JSON');
  });

  test('objects whose own toString is data can be turned into strings, and still read as sent', () => {
    for (const text of ['{"q":{"toString":1}}', '{"q":{"to\\u0053tring":"x"}}', '[{"q":{"toString":null,"valueOf":2}}]']) {
      const parsed = parseJsonText(text) as Record<string, unknown> | Record<string, unknown>[];
      const holder = Array.isArray(parsed) ? parsed[0]! : parsed;
      expect(`${holder.q}`).toBe('[object Object]');
      expect(JSON.stringify(parsed)).toBe(JSON.stringify(JSON.parse(text)));
      expect(Object.keys(holder.q as object)).toEqual(Object.keys((Array.isArray(JSON.parse(text)) ? JSON.parse(text)[0] : JSON.parse(text)).q));
    }
    // Without such a key, nothing is added.
    const plain = parseJsonText('{"q":{"a":1}}') as { q: object };
    expect(Object.getOwnPropertySymbols(plain.q)).toEqual([]);
  });
});
