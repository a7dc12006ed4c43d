import { describe, expect, test } from 'bun:test';
import { candidatePool, normalized, reciprocalRankFusion, weightedFusion, type Candidate } from '../../engine/search/fusion';

describe('normalized: fixed scales', () => {
  test('full-text as a share of the scale, semantic as the cosine itself', () => {
    expect(normalized({ doc: 0, fullText: 2, semantic: 0.4 }, 8)).toEqual({ fullText: 0.25, semantic: 0.4 });
    expect(normalized({ doc: 0, fullText: 0, semantic: -0.3 }, 8)).toEqual({ fullText: 0, semantic: -0.3 });
    expect(normalized({ doc: 0, fullText: 0, semantic: 0.1 }, 0)).toEqual({ fullText: 0, semantic: 0.1 });
  });
  test('a candidate keeps its normalized score whatever the other candidates score', () => {
    const lone: Candidate = { doc: 1, fullText: 1, semantic: 0.2 };
    const others: Candidate[] = [
      { doc: 2, fullText: 0, semantic: 0.6 },
      { doc: 3, fullText: 0, semantic: 0.5 },
    ];
    const alone = weightedFusion([lone], 0.5, 10, 10)[0]!.score;
    const among = weightedFusion([lone, ...others], 0.5, 10, 10).find((c) => c.doc === 1)!.score;
    expect(among).toBe(alone);
    expect(alone).toBeCloseTo(0.5 * 0.2 + 0.5 * 0.1, 12);
  });
});

describe('weightedFusion', () => {
  const cands: Candidate[] = [
    { doc: 1, fullText: 10, semantic: 0.1 },
    { doc: 2, fullText: 5, semantic: 0.9 },
    { doc: 3, fullText: 0, semantic: 0.5 },
    { doc: 4, fullText: 5, semantic: 0.2 },
  ];

  test('by hand at w = 0.5 (full-text scale 20)', () => {
    // norm ft: .5, .25, 0, .25   sem: .1, .9, .5, .2
    const out = weightedFusion(cands, 0.5, 10, 20);
    expect(out.map((c) => c.doc)).toEqual([2, 1, 3, 4]);
    expect(out.map((c) => c.score)).toEqual([0.575, 0.3, 0.25, 0.225]);
  });

  test('w = 0 is the full-text order, w = 1 the semantic order (ties by doc)', () => {
    expect(weightedFusion(cands, 0, 10, 20).map((c) => c.doc)).toEqual([1, 2, 4, 3]);
    expect(weightedFusion(cands, 1, 10, 20).map((c) => c.doc)).toEqual([2, 3, 4, 1]);
  });

  test('at w = 1, negative cosines keep the semantic order', () => {
    const neg: Candidate[] = [
      { doc: 1, fullText: 3, semantic: -0.3 },
      { doc: 2, fullText: 0, semantic: -0.1 },
      { doc: 3, fullText: 9, semantic: -0.2 },
    ];
    const out = weightedFusion(neg, 1, 10, 10);
    expect(out.map((c) => c.doc)).toEqual([2, 3, 1]);
    expect(out.map((c) => c.score)).toEqual([-0.1, -0.2, -0.3]);
  });

  test('equal blends: the heavier leg decides, then the other, then the document', () => {
    const tied: Candidate[] = [
      { doc: 1, fullText: 2, semantic: 0.4 }, // 0.5·0.4 + 0.5·0.2 = 0.3
      { doc: 2, fullText: 4, semantic: 0.2 }, // 0.5·0.2 + 0.5·0.4 = 0.3
      { doc: 0, fullText: 2, semantic: 0.4 },
    ];
    expect(weightedFusion(tied, 0.5, 10, 10).map((c) => c.doc)).toEqual([0, 1, 2]);
  });

  test('at w = 0, full-text scores that round together once scaled keep the full-text order', () => {
    // Two neighbouring doubles that divide by 3 to the same double.
    const a = 1.5 + 2 ** -52;
    const b = 1.5 + 2 ** -51;
    expect(b).toBeGreaterThan(a);
    expect(a / 3).toBe(b / 3);
    const out = weightedFusion(
      [
        { doc: 1, fullText: a, semantic: 0.9 },
        { doc: 2, fullText: b, semantic: 0.1 },
      ],
      0,
      10,
      3,
    );
    expect(out.map((c) => c.doc)).toEqual([2, 1]);
  });

  test('limit truncates after ranking', () => {
    expect(weightedFusion(cands, 0.5, 2, 20).map((c) => c.doc)).toEqual([2, 1]);
  });
});

describe('weightedFusion: candidates of one content item', () => {
  // Item 7: a title chunk (keywords) and a body chunk (meaning); item 8 one chunk; item 9 two weak chunks.
  const cands: Candidate[] = [
    { doc: 1, fullText: 8, semantic: 0.2, item: 7 },
    { doc: 2, fullText: 1, semantic: 0.7, item: 7 },
    { doc: 3, fullText: 6, semantic: 0.6, item: 8 },
    { doc: 4, fullText: 0, semantic: 0.3, item: 9 },
    { doc: 5, fullText: 3, semantic: 0.1, item: 9 },
  ];

  test("the item's best candidate in the blend scores with the item's best of each leg; the others their own blend", () => {
    // Scale 10, w = 0.5. Own blends: 1: .5, 2: .4, 3: .6, 4: .15, 5: .2.
    const out = weightedFusion(cands, 0.5, 10, 10);
    // Doc 1 is item 7's best in the blend and scores .5 · .7 + .5 · .8 = .75; doc 2 keeps .4; in
    // item 9 doc 5 is the best and scores .5 · .3 + .5 · .3, doc 4 keeps .15.
    expect(out.map((c) => c.doc)).toEqual([1, 3, 2, 5, 4]);
    expect(out.map((c) => c.score)).toEqual([0.5 * 0.7 + 0.5 * 0.8, 0.5 * 0.6 + 0.5 * 0.6, 0.5 * 0.7 + 0.5 * 0.1, 0.5 * 0.3 + 0.5 * 0.3, 0.5 * 0.3 + 0.5 * 0]);
    // Leg scores stay each candidate's own.
    expect(out[0]).toMatchObject({ doc: 1, fullText: 8, semantic: 0.2 });
  });

  test('w = 0 and w = 1 rank and score exactly as without items', () => {
    const plain = cands.map(({ item: _, ...c }) => c);
    for (const w of [0, 1]) {
      const withItems = weightedFusion(cands, w, 10, 10);
      const without = weightedFusion(plain, w, 10, 10);
      expect(withItems.map((c) => [c.doc, c.score])).toEqual(without.map((c) => [c.doc, c.score]));
    }
  });

  test('a lone candidate of its item is scored as before', () => {
    const out = weightedFusion([{ doc: 3, fullText: 6, semantic: 0.6, item: 8 }], 0.3, 10, 10);
    expect(out[0]!.score).toBe(0.3 * 0.6 + 0.7 * 0.6);
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
