import { describe, expect, test } from 'bun:test';
import { analyze, foldAccents, stem, termVector, tokenize } from '../../engine/analysis/analyzer';
import { porterStem } from '../../engine/analysis/porter';

describe("Porter's original stemmer (Lucene's PorterStemFilter)", () => {
  // Examples of Porter (1980), step by step, and of his reference implementations' departures
  // from the paper ("bli" → "ble", "logi" → "log"), which Lucene keeps.
  const cases: Record<string, string> = {
    caresses: 'caress',
    ponies: 'poni',
    ties: 'ti',
    caress: 'caress',
    cats: 'cat',
    feed: 'feed',
    agreed: 'agre',
    plastered: 'plaster',
    bled: 'bled',
    motoring: 'motor',
    sing: 'sing',
    conflated: 'conflat',
    troubled: 'troubl',
    sized: 'size',
    hopping: 'hop',
    tanned: 'tan',
    falling: 'fall',
    hissing: 'hiss',
    fizzed: 'fizz',
    failing: 'fail',
    filing: 'file',
    happy: 'happi',
    sky: 'sky',
    relational: 'relat',
    conditional: 'condit',
    rational: 'ration',
    valenci: 'valenc',
    hesitanci: 'hesit',
    digitizer: 'digit',
    conformabli: 'conform',
    radicalli: 'radic',
    differentli: 'differ',
    vileli: 'vile',
    analogousli: 'analog',
    vietnamization: 'vietnam',
    predication: 'predic',
    operator: 'oper',
    feudalism: 'feudal',
    decisiveness: 'decis',
    hopefulness: 'hope',
    callousness: 'callous',
    formaliti: 'formal',
    sensitiviti: 'sensit',
    sensibiliti: 'sensibl',
    triplicate: 'triplic',
    formative: 'form',
    formalize: 'formal',
    electriciti: 'electr',
    electrical: 'electr',
    hopeful: 'hope',
    goodness: 'good',
    revival: 'reviv',
    allowance: 'allow',
    inference: 'infer',
    airliner: 'airlin',
    gyroscopic: 'gyroscop',
    adjustable: 'adjust',
    defensible: 'defens',
    irritant: 'irrit',
    replacement: 'replac',
    adjustment: 'adjust',
    dependent: 'depend',
    adoption: 'adopt',
    homologou: 'homolog',
    communism: 'commun',
    activate: 'activ',
    angulariti: 'angular',
    homologous: 'homolog',
    effective: 'effect',
    bowdlerize: 'bowdler',
    probate: 'probat',
    rate: 'rate',
    cease: 'ceas',
    controll: 'control',
    roll: 'roll',
    generalization: 'gener',
    organizations: 'organ',
    biology: 'biologi',
    archaeology: 'archaeolog',
    possibly: 'possibl',
    is: 'is',
    as: 'as',
  };
  test(`${Object.keys(cases).length} words as Porter's reference implementation stems them`, () => {
    const wrong = Object.entries(cases)
      .filter(([w, s]) => porterStem(w) !== s)
      .map(([w, s]) => `${w}: ${porterStem(w)} ≠ ${s}`);
    expect(wrong).toEqual([]);
  });
  test('the memoized stem is the same function', () => {
    for (let i = 0; i < 2000; i++) for (const w of ['running', 'nationalization', 'happily']) stem(w);
    expect(['running', 'nationalization', 'happily'].map(stem)).toEqual(['run', 'nation', 'happili']);
  });
});

describe("words (UAX #29, as Lucene's StandardTokenizer)", () => {
  test('letters and digits with joiners stay one word; hyphens, slashes and brackets separate', () => {
    expect(tokenize("IL-6 and TNF-α in p53-deficient mice (n=12), 3.5% vs. 10.2%; don't C57BL/6")).toEqual([
      'IL',
      '6',
      'and',
      'TNF',
      'α',
      'in',
      'p53',
      'deficient',
      'mice',
      'n',
      '12',
      '3.5',
      'vs',
      '10.2',
      "don't",
      'C57BL',
      '6',
    ]);
  });
  test('words with u are never split; dashes separate', () => {
    expect(tokenize('purpose opaque unusual true blue — a well-known fact – indeed')).toEqual([
      'purpose',
      'opaque',
      'unusual',
      'true',
      'blue',
      'a',
      'well',
      'known',
      'fact',
      'indeed',
    ]);
  });
});

describe('analyze', () => {
  test('lowercases, drops stop words, stems', () => {
    expect(analyze('The Cats are running into THE houses')).toEqual(['cat', 'run', 'hous']);
  });

  test("possessives lose their 's (apostrophe, right single quotation mark, fullwidth apostrophe)", () => {
    expect(analyze("Huntington's disease, the patients’s and the FDA＇s")).toEqual(['huntington', 'diseas', 'patient', 'fda']);
    expect(analyze("it's")).toEqual([]); // "it" is a stop word
  });

  test('folds accents and ligatures', () => {
    expect(foldAccents('Résumé naïve')).toBe('Resume naive');
    expect(analyze('résumé')).toEqual(analyze('resume'));
    expect(analyze('ﬁrst')).toEqual(['first']);
  });

  test('splits hyphenated compounds into parts; numbers stay whole', () => {
    expect(analyze('IL-6 covid-19 x-ray')).toEqual(['il', '6', 'covid', '19', 'x', 'rai']);
    expect(analyze('3.5 mg 0001 413 1990s')).toEqual(['3.5', 'mg', '0001', '413', '1990']);
  });

  test('drops punctuation and symbols', () => {
    expect(analyze('hello, world! (really?) % — ...')).toEqual(['hello', 'world', 'realli']);
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
