import { describe, expect, test } from 'bun:test';
import { DocSet } from '../../engine/filter/doc-set';
import { InvertedIndex } from '../../engine/bm25/inverted-index';
import { idf, lengthNorm, termScore } from '../../engine/bm25/scorer';

const doc = (terms: string[]) => {
  const counts = new Map<string, number>();
  for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
  return { terms: [...counts.keys()], tfs: [...counts.values()], length: terms.length };
};

const params = { k1: 1.2, b: 0.75 };

function corpus() {
  const index = new InvertedIndex(params);
  index.add(0, doc(['a', 'b', 'c']));
  index.add(1, doc(['a', 'a', 'd']));
  index.add(2, doc(['b', 'e', 'e', 'e', 'f']));
  return index;
}

describe('BM25 scorer (pure)', () => {
  test('idf matches Lucene', () => {
    // ln(1 + (N − df + 0.5)/(df + 0.5)) with N = 3, df = 2: ln(1.6)
    expect(idf(3, 2)).toBeCloseTo(0.470003629, 9);
    expect(idf(3, 1)).toBeCloseTo(Math.log(1 + 2.5 / 1.5), 12);
  });

  test('term score by hand', () => {
    // tf 2, dl 3, avgdl 11/3: K = 1.2 · (0.25 + 0.75 · 3/(11/3)) = 1.036363636…
    const norm = lengthNorm(params, 3, 11 / 3);
    expect(norm).toBeCloseTo(1.036363636, 8);
    // 0.470003629 · 2 · 2.2 / (2 + 1.036363636) = 0.681083…
    expect(termScore(params, idf(3, 2), 2, norm)).toBeCloseTo(0.681083, 6);
  });
});

describe('InvertedIndex', () => {
  test('single-term query scores by hand', () => {
    const hits = corpus().search(['a'], 10);
    expect(hits.map((h) => h.doc)).toEqual([1, 0]);
    expect(hits[0]!.score).toBeCloseTo(0.681083, 6);
    // d0: tf 1, dl 3 → 0.470003629 · 2.2 / (1 + 1.036363636) = 0.507772…
    expect(hits[1]!.score).toBeCloseTo(0.507772, 6);
  });

  test('multi-term query sums term scores; repeated query terms count twice', () => {
    const index = corpus();
    // "b e": d2 has b (tf 1) and e (tf 3), dl 5; d0 has b, dl 3. df(b) = 2, df(e) = 1.
    const normD2 = 1.2 * (0.25 + (0.75 * 5) / (11 / 3)); // 1.527273…
    const idfB = Math.log(1.6);
    const idfE = Math.log(1 + 2.5 / 1.5); // 0.980829…
    const d2 = (idfB * 2.2 * 1) / (1 + normD2) + (idfE * 2.2 * 3) / (3 + normD2);
    // 0.409139 + 0.980829 · 6.6 / 4.527273 = 0.409139 + 1.429884
    expect(d2).toBeCloseTo(1.839023, 5);
    const hits = index.search(['b', 'e'], 10);
    expect(hits.map((h) => h.doc)).toEqual([2, 0]);
    expect(hits[0]!.score).toBeCloseTo(d2, 12);
    const twice = index.search(['e', 'e'], 10);
    expect(twice[0]!.score).toBeCloseTo((2 * idfE * 2.2 * 3) / (3 + normD2), 12);
  });

  test('unknown terms and empty queries match nothing', () => {
    expect(corpus().search(['zzz'], 10)).toEqual([]);
    expect(corpus().search([], 10)).toEqual([]);
  });

  test('deletion updates N, df and avgdl exactly as if the document was never added', () => {
    const index = corpus();
    expect(index.remove(0)).toBe(true);
    expect(index.remove(0)).toBe(false);
    const fresh = new InvertedIndex(params);
    fresh.add(1, doc(['a', 'a', 'd']));
    fresh.add(2, doc(['b', 'e', 'e', 'e', 'f']));
    for (const q of [['a'], ['b'], ['b', 'e'], ['c'], ['a', 'd', 'f']]) {
      expect(index.search(q, 10)).toEqual(fresh.search(q, 10));
    }
    expect(index.docCount).toBe(2);
    expect(index.avgDocLength).toBe(4);
  });

  test('many deletes compact postings without changing results', () => {
    const index = new InvertedIndex(params);
    const fresh = new InvertedIndex(params);
    for (let d = 0; d < 1000; d++) {
      const terms = [`t${d % 7}`, `t${d % 13}`, 'common', ...(d % 2 ? ['odd'] : [])];
      index.add(d, doc(terms));
      if (d % 3 !== 0) fresh.add(d, doc(terms));
    }
    for (let d = 0; d < 1000; d += 3) index.remove(d);
    for (const q of [['common'], ['t3', 'odd'], ['t5', 't11', 'common']]) {
      expect(index.search(q, 50)).toEqual(fresh.search(q, 50));
    }
  });

  test('mask restricts matches before ranking', () => {
    const index = corpus();
    const allowed = new Uint8Array(3);
    allowed[0] = 1;
    const hits = index.search(['a'], 1, allowed);
    expect(hits.map((h) => h.doc)).toEqual([0]);
  });

  test('ties are broken by document number ascending', () => {
    const index = new InvertedIndex(params);
    for (let d = 0; d < 20; d++) index.add(d, doc(['same', 'text']));
    expect(index.search(['same'], 5).map((h) => h.doc)).toEqual([0, 1, 2, 3, 4]);
  });

  test('scoreDocs and explain agree with search', () => {
    const index = corpus();
    const hits = index.search(['b', 'e', 'a'], 10);
    const scores = index.scoreDocs(
      ['b', 'e', 'a'],
      hits.map((h) => h.doc),
    );
    expect(scores).toEqual(hits.map((h) => h.score));
    const ex = index.explain(['b', 'e'], 2)!;
    expect(ex.score).toBeCloseTo(index.search(['b', 'e'], 1)[0]!.score, 12);
    expect(ex.terms.map((t) => [t.term, t.tf, t.docFreq])).toEqual([
      ['b', 1, 2],
      ['e', 3, 1],
    ]);
    expect(index.scoreDocs(['b'], [1])).toEqual([0]);
  });

  test('MaxScore top-k equals exhaustive scoring (random corpus with duplicates, deletes, filters of either form)', () => {
    let seed = 7;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    // Zipf-like vocabulary, so some lists are long (non-essential) and some short (essential).
    const word = () => `w${Math.floor(random() ** 3 * 400)}`;
    const index = new InvertedIndex(params);
    const N = 12_000;
    let previous: string[] = [];
    for (let d = 0; d < N; d++) {
      // One document in ten repeats the one before it, so exact ties are common.
      const words = random() < 0.1 && previous.length > 0 ? previous : Array.from({ length: 1 + Math.floor(random() * 40) }, word);
      index.add(d, doc(words));
      previous = words;
    }
    for (let d = 0; d < N; d += 7) index.remove(d);
    const all = Array.from({ length: N }, (_, d) => d);
    const mask = new Uint8Array(N).map((_, d) => (d % 3 === 0 ? 0 : 1));
    // The same filter as a bitset and as a sorted list (leapfrogged), and a selective one (1%, deleted ones too) as a list.
    const maskDocs = Uint32Array.from(all.filter((d) => mask[d] === 1));
    const sparseDocs = Uint32Array.from(all.filter((d) => d % 97 === 3 || d % 211 === 0));
    const filters: { has: (d: number) => boolean; allowed: Uint8Array | DocSet }[] = [
      { has: (d) => mask[d] === 1, allowed: mask },
      { has: (d) => mask[d] === 1, allowed: DocSet.ofList(maskDocs, N) },
      { has: (d) => mask[d] === 1, allowed: DocSet.ofBits(DocSet.ofList(maskDocs.slice(), N).bits(), N) },
      { has: (d) => d % 97 === 3 || d % 211 === 0, allowed: DocSet.ofList(sparseDocs, N) },
      { has: () => false, allowed: DocSet.empty(N) },
    ];
    let compared = 0;
    for (let q = 0; q < 150; q++) {
      const query = Array.from({ length: 1 + Math.floor(random() * 8) }, word);
      const scores = index.scoreDocs(query, all);
      for (const filter of [undefined, ...filters]) {
        const ranked = all
          .filter((d) => scores[d]! > 0 && (!filter || filter.has(d)))
          .sort((a, b) => scores[b]! - scores[a]! || a - b)
          .map((d) => ({ doc: d, score: scores[d]! }));
        for (const k of [1, 10, 100, 1000]) {
          expect(index.search(query, k, filter?.allowed)).toEqual(ranked.slice(0, k));
          compared++;
        }
      }
    }
    expect(compared).toBe(150 * 4 * 6);
  });

  test('with items grouped (idf over items), MaxScore top-k still equals exhaustive scoring; group counts stay exact through deletes', () => {
    let seed = 11;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const word = () => `w${Math.floor(random() ** 3 * 300)}`;
    const index = new InvertedIndex(params);
    const items: number[][] = [];
    let d = 0;
    for (let i = 0; i < 2_000; i++) {
      const docs: number[] = [];
      for (let c = 1 + Math.floor(random() * 4); c > 0; c--) {
        index.add(d, doc(Array.from({ length: 1 + Math.floor(random() * 30) }, word)));
        docs.push(d++);
      }
      items.push(docs);
    }
    for (const docs of items) index.group(docs);
    index.settle();
    // Whole items deleted, as a knowledge base drops an item's chunks.
    const gone = new Set<number>();
    items.forEach((docs, i) => {
      if (i % 5 === 0) for (const x of docs) index.remove(x), gone.add(x);
    });
    const live = items.filter((_, i) => i % 5 !== 0);
    expect(index.groupCount).toBe(live.length);
    // n of a term = live items holding it, counted by hand.
    for (const term of ['w0', 'w1', 'w7', 'w50', 'w200']) {
      const holding = live.filter((docs) => docs.some((x) => index.scoreDocs([term], [x])[0]! > 0)).length;
      const n = index.explain([term], live[0]![0]!)?.terms.find((t) => t.term === term)?.docFreq ?? 0;
      expect(n).toBe(holding);
    }
    const all = Array.from({ length: d }, (_, x) => x);
    for (let q = 0; q < 100; q++) {
      const query = Array.from({ length: 1 + Math.floor(random() * 6) }, word);
      const scores = index.scoreDocs(query, all);
      for (const k of [1, 10, 100]) {
        const expected = all
          .filter((x) => scores[x]! > 0)
          .sort((a, b) => scores[b]! - scores[a]! || a - b)
          .slice(0, k)
          .map((x) => ({ doc: x, score: scores[x]! }));
        expect(index.search(query, k)).toEqual(expected);
      }
    }
    expect([...gone].every((x) => !index.has(x))).toBe(true);
  });

  test('document ids must increase', () => {
    const index = corpus();
    expect(() => index.add(1, doc(['x']))).toThrow();
  });
});
