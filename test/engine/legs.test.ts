// The full-text leg's item-aware scores (engine/search/legs.ts) and the BM25 pieces it and hybrid
// fusion use: items as BM25's collection (groups of chunk documents: idf over items, overlaps
// counted once), the query's maximum BM25, an item scored as one document.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { InvertedIndex } from '../../engine/bm25/inverted-index';
import { idf, termWeight, weightedTermScore } from '../../engine/bm25/scorer';
import { arrayItems, syncItems } from '../../engine/search/items';
import { fullTextCandidates, fullTextDepth, fullTextLegScores, fullTextScoresOf } from '../../engine/search/legs';

const params = { k1: 1.2, b: 0.75 };

function doc(words: string[]) {
  const counts = new Map<string, number>();
  for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
  return { terms: [...counts.keys()], tfs: [...counts.values()], length: words.length };
}

/** Items of chunks (word lists), indexed with consecutive document numbers as a knowledge base does, then grouped. */
function build(items: string[][][], sync = true) {
  const index = new InvertedIndex(params);
  const owner: number[] = [];
  const docs: number[][] = [];
  items.forEach((chunks, item) => {
    docs.push([]);
    for (const words of chunks) {
      docs[item]!.push(owner.length);
      index.add(owner.length, doc(words));
      owner.push(item);
    }
  });
  const view = arrayItems(
    owner,
    docs,
    items.map(() => ''),
  );
  if (sync) syncItems(index, view);
  return { index, owner, docs, view };
}

const K = (length: number, avg: number) => params.k1 * (1 - params.b + (params.b * length) / avg);

describe('BM25 over items (groups of chunk documents)', () => {
  test('idf counts items: N live items, n items holding the term, however many of their chunks do', () => {
    // Item 0: two chunks both say "solar"; item 1 one chunk with "solar"; items 2 and 3 without.
    const { index } = build([
      [
        ['solar', 'roof'],
        ['solar', 'output'],
      ],
      [['solar', 'heat']],
      [['bike']],
      [['heat', 'pump']],
    ]);
    expect(index.groupCount).toBe(4);
    const [score] = index.scoreDocs(['solar'], [2]);
    // Chunk 2 (item 1, "solar heat"): idf(4 items, 2 holding "solar"), its own length against the average chunk.
    expect(score).toBeCloseTo(weightedTermScore(termWeight(params, idf(4, 2), 1), 1, K(2, index.avgDocLength)), 12);
    expect(index.maxScore(['solar', 'kiwi'])).toBeCloseTo(termWeight(params, idf(4, 2), 1) + termWeight(params, idf(4, 0), 1), 12);
    expect(index.explain(['solar'], 2)).toMatchObject({ docCount: 4, terms: [{ term: 'solar', docFreq: 2 }] });
  });

  test('without items every document is one: the usual document counts', () => {
    const { index } = build(
      [
        [
          ['solar', 'roof'],
          ['solar', 'output'],
        ],
        [['solar', 'heat']],
        [['bike']],
      ],
      false,
    );
    expect(index.groupCount).toBe(4);
    expect(index.scoreDocs(['solar'], [2])[0]).toBeCloseTo(weightedTermScore(termWeight(params, idf(4, 3), 1), 1, K(2, index.avgDocLength)), 12);
  });

  test("removing an item's chunks one by one: the item holds a term until its last chunk holding it goes", () => {
    const { index } = build([
      [
        ['solar', 'roof'],
        ['solar', 'output'],
      ],
      [['solar', 'heat']],
      [['bike']],
    ]);
    const n = () => index.explain(['solar'], 2)!.terms[0]!.docFreq;
    expect(n()).toBe(2);
    index.remove(0);
    expect([index.groupCount, n()]).toEqual([3, 2]);
    index.remove(1);
    expect([index.groupCount, n()]).toEqual([2, 1]);
    // As if item 0 had never been added.
    const fresh = build([[['solar', 'heat']], [['bike']]]);
    expect(index.scoreDocs(['solar', 'bike'], [2, 3])).toEqual(fresh.index.scoreDocs(['solar', 'bike'], [0, 1]));
  });

  test('items of chunks added later are learned at the next sync; until then each chunk counts alone', () => {
    const { index, view } = build([
      [
        ['solar', 'roof'],
        ['solar', 'output'],
      ],
    ]);
    index.add(2, doc(['solar', 'heat']));
    index.add(3, doc(['solar', 'pump']));
    expect(index.groupCount).toBe(3);
    const later = arrayItems(
      [0, 0, 1, 1],
      [
        [0, 1],
        [2, 3],
      ],
      ['', ''],
    );
    syncItems(index, later);
    expect(index.groupCount).toBe(2);
    expect(index.explain(['solar'], 2)!.terms[0]!.docFreq).toBe(2);
    expect(index.unsettled()).toEqual([]);
    void view;
  });
});

describe('InvertedIndex.groupScores', () => {
  test('where every item is one chunk, an item scores exactly what scoreDocs gives its chunk', () => {
    const { index } = build([[['solar', 'panel', 'roof']], [['panel', 'output', 'june', 'panel']], [['heat', 'pump']], [['bike', 'rack']]]);
    const q = ['solar', 'panel', 'heat'];
    expect(index.groupScores(q, [0, 1, 2, 3])).toEqual(index.scoreDocs(q, [0, 1, 2, 3]));
  });

  test('an item scores as one document: frequencies and lengths summed over its chunks, against the average item', () => {
    const { index } = build([
      [
        ['solar', 'panel', 'roof'],
        ['panel', 'output', 'june', 'panel'],
      ],
      [
        ['heat', 'pump'],
        ['solar', 'heat'],
      ],
      [['bike', 'rack']],
    ]);
    const q = ['panel', 'solar'];
    const avg = (7 + 4 + 2) / 3;
    expect(index.avgGroupLength).toBeCloseTo(avg, 12);
    const [a, b] = index.groupScores(q, [0, 1]);
    const expected = weightedTermScore(termWeight(params, idf(3, 1), 1), 3, K(7, avg)) + weightedTermScore(termWeight(params, idf(3, 2), 1), 1, K(7, avg));
    expect(a).toBeCloseTo(expected, 12);
    expect(b).toBe(a!); // both chunks of the item: the item's score
  });

  test('text two neighbouring chunks share (the chunking overlap) counts once', () => {
    // "the roof panel output" chunked with overlap: chunk 0 = "solar roof panel", chunk 1 = "roof panel output".
    const text = 'solar roof panel output';
    const index = new InvertedIndex(params);
    index.add(0, { ...doc(['solar', 'roof', 'panel']), start: 0, end: 16 });
    index.add(1, { ...doc(['roof', 'panel', 'output']), start: 6, end: 23 });
    index.add(2, { ...doc(['bike', 'rack']), start: 0, end: 9 });
    syncItems(index, arrayItems([0, 0, 1], [[0, 1], [2]], [text, 'bike rack']));
    // Item 0 is its text once: solar, roof, panel, output (4 terms, panel once).
    expect(index.avgGroupLength).toBeCloseTo((4 + 2) / 2, 12);
    const [score] = index.groupScores(['panel', 'roof'], [0]);
    const w = termWeight(params, idf(2, 1), 1);
    expect(score).toBeCloseTo(2 * weightedTermScore(w, 1, K(4, 3)), 12);
  });
});

describe('full-text leg', () => {
  // Item 0: the title chunk names the topic, the body chunk has the details; item 1 one chunk.
  const corpus = build([
    [
      ['solar', 'roof', 'installation'],
      ['output', 'kilowatt', 'june', 'noon'],
    ],
    [['solar', 'output', 'report', 'kilowatt']],
    [['bike', 'rack', 'entrance']],
    [
      ['heat', 'pump', 'winter'],
      ['filter', 'service'],
      ['outdoor', 'fan'],
    ],
  ]);
  const { index } = corpus;
  const q = ['solar', 'output', 'kilowatt'];

  test('where every item is one chunk, the leg scores exactly BM25', () => {
    const single = build([[['solar', 'roof']], [['solar', 'output', 'kilowatt']], [['bike']], [['output', 'report', 'output']]]);
    const all = [0, 1, 2, 3];
    expect(fullTextScoresOf(single.index, q, all)).toEqual(single.index.scoreDocs(q, all));
  });

  test("an item's best chunk scores its whole item's BM25 when higher, its other chunks their own; no match scores 0", () => {
    const own = index.scoreDocs(q, [0, 1, 3, 5, 6]);
    const item0 = index.groupScores(q, [0])[0]!;
    const scores = fullTextLegScores(index, q, [0, 1, 3, 5, 6], own);
    // Chunk 1 (two query terms) is item 0's best; chunk 0 (one) keeps its own score.
    expect(own[1]).toBeGreaterThan(own[0]!);
    expect(item0).toBeGreaterThan(own[1]!);
    expect(scores[1]).toBe(item0);
    expect(scores[0]).toBe(own[0]!);
    expect(scores.slice(2)).toEqual([0, 0, 0]);
    // A long item whose whole scores below its best chunk leaves that chunk's BM25 as it is.
    const hq = ['heat'];
    expect(index.groupScores(hq, [4])[0]).toBeLessThan(index.scoreDocs(hq, [4])[0]!);
    expect(fullTextScoresOf(index, hq, [4])).toEqual(index.scoreDocs(hq, [4]));
  });

  test('the leg re-scores twice the limit, at least 20 chunks', () => {
    expect([1, 10, 50, 100, 600].map(fullTextDepth)).toEqual([20, 20, 100, 200, 1000]);
  });

  test('candidates: best first, the same scores as fullTextScoresOf, bit for bit', () => {
    const cands = fullTextCandidates(index, q, 100);
    expect(cands.map((c) => c.doc).sort()).toEqual([0, 1, 2]);
    for (let i = 1; i < cands.length; i++) expect(cands[i - 1]!.score >= cands[i]!.score).toBe(true);
    expect(cands.map((c) => c.score)).toEqual(
      fullTextScoresOf(
        index,
        q,
        cands.map((c) => c.doc),
      ),
    );
    // The body chunk holds two query terms of three and carries its item, which holds all three;
    // the title chunk keeps its own score, below.
    const at = (doc: number) => cands.findIndex((c) => c.doc === doc);
    expect(cands[at(1)]!.score).toBe(index.groupScores(q, [1])[0]!);
    expect(cands[at(1)]!.score).toBeGreaterThan(index.scoreDocs(q, [1])[0]!);
    expect(at(1)).toBeLessThan(at(0));
  });
});

describe('grouping items in runs (ItemSettler)', () => {
  test('settling in runs of any size scores exactly as settling at once, through later additions (300 random builds)', () => {
    const words = ['solar', 'roof', 'heat', 'pump', 'bike', 'rack', 'kiwi'];
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 }), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 0, max: 30 }),
        (items, run, cut) => {
          // The same items indexed twice; a second batch arrives after the first is settled.
          const once = build(items.slice(0, cut), false);
          const inRuns = build(items.slice(0, cut), false);
          const all = build(items);
          syncItems(once.index, all.view);
          while (!syncItems(inRuns.index, all.view, run));
          for (const [i, chunks] of items.slice(cut).entries()) {
            for (const [j, w] of chunks.entries()) {
              const d = all.docs[cut + i]![j]!;
              once.index.add(d, doc(w));
              inRuns.index.add(d, doc(w));
            }
          }
          syncItems(once.index, all.view);
          let turns = 0;
          while (!syncItems(inRuns.index, all.view, run)) turns++;
          expect(turns).toBeLessThanOrEqual(all.owner.length);
          expect(inRuns.index.unsettled()).toEqual([]);
          expect(inRuns.index.groupCount).toBe(once.index.groupCount);
          const docs = all.owner.map((_, d) => d);
          for (const w of words) expect(inRuns.index.scoreDocs([w], docs)).toEqual(once.index.scoreDocs([w], docs));
        },
      ),
      { numRuns: 300, seed: 20261126 },
    );
  });
});
