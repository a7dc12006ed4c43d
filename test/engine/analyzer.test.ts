import { describe, expect, test } from 'bun:test';
import porter2 from 'wink-porter2-stemmer';
import { analyze, foldAccents, stem, termVector, tokenize } from '../../engine/analysis/analyzer';
import expected from '../fixtures/porter2-node.json';

describe('wink-nlp under Bun (patched regex escapes)', () => {
  test('tokenizes "purpose opaque" as two whole words', () => {
    expect(tokenize('purpose opaque')).toEqual(['purpose', 'opaque']);
  });

  test('words with u are never split, hyphen and dash handling intact', () => {
    expect(tokenize('unusual true blue — a well-known fact – indeed')).toEqual([
      'unusual', 'true', 'blue', '—', 'a', 'well', '-', 'known', 'fact', '–', 'indeed',
    ]);
  });
});

describe('Porter2 stemming under Bun equals Node', () => {
  const words = Object.keys(expected as Record<string, string>);

  test(`all ${words.length} fixture words stem as under Node`, () => {
    const mismatches = words.filter((w) => porter2(w) !== (expected as Record<string, string>)[w]);
    expect(mismatches).toEqual([]);
    expect(words.length).toBeGreaterThan(500);
  });

  test('stemming is stable after many calls (no state leaks between words)', () => {
    for (let i = 0; i < 2000; i++) for (const w of ['running', 'nationalization', 'happily']) stem(w);
    expect(porter2('0001')).toBe('0001');
    expect(porter2('covid-19')).toBe('covid-19');
    expect(stem('running')).toBe('run');
  });
});

describe('analyze', () => {
  test('lowercases, drops stop words, stems', () => {
    expect(analyze('The Cats are running into THE houses')).toEqual(['cat', 'run', 'hous']);
  });

  test('folds accents and ligatures', () => {
    expect(foldAccents('Résumé naïve')).toBe('Resume naive');
    expect(analyze('résumé')).toEqual(analyze('resume'));
    expect(analyze('ﬁrst')).toEqual(['first']);
  });

  test('splits hyphenated compounds into parts and keeps numbers unstemmed', () => {
    expect(analyze('IL-6 covid-19 x-ray')).toEqual(['il', '6', 'covid', '19', 'x', 'ray']);
    expect(analyze('3.5 mg 0001 413')).toEqual(['3.5', 'mg', '0001', '413']);
  });

  test('drops punctuation and symbols', () => {
    expect(analyze('hello, world! (really?) %')).toEqual(['hello', 'world', 'realli']);
  });

  test('only stop words gives no terms', () => {
    expect(analyze('the and of a')).toEqual([]);
    expect(analyze('')).toEqual([]);
  });

  test('term vector counts frequencies and length', () => {
    const tv = termVector('cat cats CAT dog');
    expect(tv.length).toBe(4);
    expect(Object.fromEntries(tv.terms.map((t, i) => [t, tv.tfs[i]]))).toEqual({ cat: 3, dog: 1 });
  });
});
