// The answer writer must produce exactly JSON.stringify's bytes (UTF-8), for every string shape.
import { describe, expect, test } from 'bun:test';
import { JsonByteWriter, jsonAnswerBytes } from '../../src/http/json-bytes';
import { mulberry32 } from '../helpers/random';

const writer = new JsonByteWriter(16); // tiny on purpose: every answer grows the buffer
const same = (value: unknown) => {
  const ours = Buffer.from(writer.encode(value)).toString('utf8');
  expect(ours).toBe(JSON.stringify(value));
};

describe('JsonByteWriter', () => {
  test('strings: escapes at the edges, next to each other, and in long texts', () => {
    for (const s of [
      '',
      'plain',
      '"',
      '\n',
      '\\',
      '"\n"',
      '\n\n\n',
      'a"b\nc',
      '"start',
      'end"',
      'tab\there',
      'cr\rlf\n',
      '\u0000\u001f\u007f',
      '\u2028\u2029',
    ]) {
      same(s);
      same('x'.repeat(100) + s + 'y'.repeat(100));
    }
    same('Line one.\nLine "two" with a quote.\n'.repeat(500));
  });

  test('strings beyond ASCII: Latin-1, BMP, astral pairs and lone surrogates', () => {
    for (const s of [
      'café',
      'β-cell “quoted”\n',
      'naïve – dash',
      '😀 emoji',
      'CJK 漢字\n"',
      '\ud800 lone high',
      'lone low \udc00',
      'pair \ud83d\ude00 then lone \ud83d',
    ]) {
      same(s);
      same(s.repeat(40));
    }
  });

  test('random strings from an alphabet full of escapes', () => {
    const alphabet = ['a', 'b', ' ', '"', '\n', '\\', '\t', '\u0001', 'é', 'β', '—', '😀', '\ud800', '\udfff', '\u2028'];
    const random = mulberry32(7);
    for (let i = 0; i < 2000; i++) {
      const n = Math.floor(random() * (i % 10 === 0 ? 600 : 80));
      let s = '';
      for (let j = 0; j < n; j++) s += alphabet[Math.floor(random() * alphabet.length)];
      same(s);
      same({ [s]: s, n: i });
    }
  });

  test('numbers, literals and nesting', () => {
    same([0, -0, 1.5, -2e-7, 1e21, 123456789.12345678, Number.MAX_VALUE, NaN, Infinity, -Infinity]);
    same({ t: true, f: false, n: null, nested: { a: [1, [2, [3, {}]]], empty: [] } });
  });

  test('what JSON.stringify leaves out or turns into null', () => {
    same({ a: undefined, b: () => 1, c: Symbol('s'), d: 1 });
    same([undefined, () => 1, Symbol('s'), 2]);
  });

  test('objects that are not plain data go to JSON.stringify', () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    same({ when: new Date(0), point: new Point(1, 2), custom: { toJSON: () => 'custom' }, map: new Map([[1, 2]]) });
    const bare = Object.create(null) as Record<string, unknown>;
    bare.k = 'v\n';
    same(bare);
  });

  test('a search answer of the service', () => {
    same({
      success: true,
      data: Array.from({ length: 10 }, (_, i) => ({
        id: `ch_${i.toString(16).padStart(28, '0')}`,
        contentChunk: `Title ${i}: “quoted” β\n\nBody with "quotes", a backslash \\ and a tab\t.`.repeat(20),
        score: 12.345678 / (i + 1),
        contentId: `ct_${i}`,
        metadata: i % 2 ? {} : { team: 'billing', tags: ['a', 'b'], n: i },
        ...(i % 3 ? {} : { page: i + 1 }),
      })),
    });
  });

  test('bigint throws as JSON.stringify does', () => {
    expect(() => writer.encode({ n: 1n })).toThrow();
  });

  test('jsonAnswerBytes takes plain objects and arrays only', () => {
    expect(jsonAnswerBytes('text')).toBeUndefined();
    expect(jsonAnswerBytes(null)).toBeUndefined();
    expect(jsonAnswerBytes(new Response('x'))).toBeUndefined();
    expect(Buffer.from(jsonAnswerBytes([1, 'a'])!).toString()).toBe('[1,"a"]');
  });

  // The writer hands out a view of its reusable buffer; the route builds a Response from it at
  // once. That is safe only because a Response copies its body: if Bun ever stops copying, answers
  // would overwrite each other, so this must fail first.
  test('a Response copies a byte body when constructed', async () => {
    const bytes = Buffer.from('{"a":1}');
    const response = new Response(bytes.subarray(0, 7));
    bytes.fill(0x20);
    expect(await response.text()).toBe('{"a":1}');
    const view = writer.encode({ first: 'answer' });
    const first = new Response(view);
    writer.encode({ second: 'answer, longer than the first one' });
    expect(await first.text()).toBe('{"first":"answer"}');
  });
});
