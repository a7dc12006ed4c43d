import { describe, expect, test } from 'bun:test';
import { candidatePool, minMax, reciprocalRankFusion, weightedFusion, type Candidate } from '../../engine/search/fusion';

describe('minMax', () => {
  test('scales to 0..1', () => {
    expect(minMax([2, 4, 6])).toEqual([0, 0.5, 1]);
  });
  test('a constant leg maps to 1, or to 0 when it is all zeros', () => {
    expect(minMax([3, 3])).toEqual([1, 1]);
    expect(minMax([0, 0])).toEqual([0, 0]);
    expect(minMax([])).toEqual([]);
  });
});

describe('weightedFusion', () => {
  const cands: Candidate[] = [
    { doc: 1, fullText: 10, semantic: 0.1 },
    { doc: 2, fullText: 5, semantic: 0.9 },
    { doc: 3, fullText: 0, semantic: 0.5 },
    { doc: 4, fullText: 5, semantic: 0.2 },
  ];

  test('by hand at w = 0.5', () => {
    // norm ft: 1, .5, 0, .5   norm sem: 0, 1, .5, .125
    const out = weightedFusion(cands, 0.5, 10);
    expect(out.map((c) => c.doc)).toEqual([2, 1, 4, 3]);
    expect(out.map((c) => c.score)).toEqual([0.75, 0.5, 0.3125, 0.25]);
  });

  test('w = 0 is the full-text order, w = 1 the semantic order (ties by doc)', () => {
    expect(weightedFusion(cands, 0, 10).map((c) => c.doc)).toEqual([1, 2, 4, 3]);
    expect(weightedFusion(cands, 1, 10).map((c) => c.doc)).toEqual([2, 3, 4, 1]);
  });

  test('limit truncates after ranking', () => {
    expect(weightedFusion(cands, 0.5, 2).map((c) => c.doc)).toEqual([2, 1]);
  });
});

describe('candidatePool', () => {
  test('a leg with weight 0 brings no candidates of its own', () => {
    expect(candidatePool([1, 2], [3, 2], 0).sort()).toEqual([1, 2]);
    expect(candidatePool([1, 2], [3, 2], 1).sort()).toEqual([2, 3]);
    expect(candidatePool([1, 2], [3, 2], 0.5).sort()).toEqual([1, 2, 3]);
  });
});

describe('reciprocalRankFusion', () => {
  test('by hand with k = 60', () => {
    const out = reciprocalRankFusion([1, 2, 3], [3, 1], 0.5, 10);
    // doc1: .5/61 + .5/62; doc3: .5/63 + .5/61; doc2: .5/62
    expect(out.map((o) => o.doc)).toEqual([1, 3, 2]);
    expect(out[0]!.score).toBeCloseTo(0.5 / 61 + 0.5 / 62, 12);
  });
  test('weight 0 ignores the semantic ranking', () => {
    expect(reciprocalRankFusion([1, 2], [9, 8], 0, 10).map((o) => o.doc)).toEqual([1, 2]);
  });
});
