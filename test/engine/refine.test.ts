// The search refinements as pure functions (engine/search/refine.ts, highlight.ts).
import { expect, test } from 'bun:test';
import { highlightsOf, rankRefined, refine, snippetOf } from '../../engine';

const ranked = [
  { contentId: 'a', score: 9, text: '' },
  { contentId: 'a', score: 8, text: '' },
  { contentId: 'a', score: 7, text: '' },
  { contentId: 'b', score: 6, text: '' },
  { contentId: 'a', score: 5, text: '' },
  { contentId: 'c', score: 4, text: '' },
  { contentId: 'b', score: 3, text: '' },
  { contentId: 'd', score: 2, text: '' },
];

test('refine keeps rank order: at most n per content item, none below the minimum, at most limit', () => {
  expect(refine(ranked, { maxChunksPerContent: 1 }, 10).map((h) => h.score)).toEqual([9, 6, 4, 2]);
  expect(refine(ranked, { maxChunksPerContent: 2 }, 3).map((h) => h.score)).toEqual([9, 8, 6]);
  expect(refine(ranked, { minScore: 5 }, 10).map((h) => h.score)).toEqual([9, 8, 7, 6, 5]);
  expect(refine(ranked, { minScore: 5, maxChunksPerContent: 1 }, 10).map((h) => h.score)).toEqual([9, 6]);
  expect(refine(ranked, {}, 3)).toEqual(ranked.slice(0, 3));
});

test('rankRefined searches deeper until the page is full or the ranking runs out', () => {
  const depths: number[] = [];
  const rank = (depth: number) => {
    depths.push(depth);
    return ranked.slice(0, depth);
  };
  expect(rankRefined(rank, 3, { maxChunksPerContent: 1 }, ranked.length).map((h) => h.score)).toEqual([9, 6, 4]);
  expect(depths).toEqual([3, 8]);
  depths.length = 0;
  // Without refinements one ranking of `limit` is enough.
  expect(rankRefined(rank, 2, {}, ranked.length)).toEqual(ranked.slice(0, 2));
  expect(depths).toEqual([2]);
  depths.length = 0;
  // A minimum: no deeper once the last ranked hit is below it.
  expect(rankRefined(rank, 4, { minScore: 8.5, maxChunksPerContent: 1 }, ranked.length).map((h) => h.score)).toEqual([9]);
  expect(depths).toEqual([4]);
});

test('highlights mark every word whose analyzed form is a query term, stems included, stop words never', () => {
  const text = "The refunds were refunded; REFUND's policy isn't a refundable thing.";
  const marks = highlightsOf(text, new Set(['refund']));
  expect(marks.map(({ start, end }) => text.slice(start, end))).toEqual(['refunds', 'refunded', "REFUND's", 'refundable']);
  expect(highlightsOf(text, new Set(['the']))).toEqual([]);
  expect(highlightsOf(text, new Set())).toEqual([]);
});

test('the snippet is a slice of the text around the densest run of matches, cut at spaces', () => {
  const filler = 'lorem ipsum dolor sit amet '.repeat(20);
  const text = `${filler}refund once. ${filler}refund and refund and refund again. ${filler}`;
  const marks = highlightsOf(text, new Set(['refund']));
  expect(marks).toHaveLength(4);
  const s = snippetOf(text, marks);
  expect(s.text).toBe(text.slice(s.start, s.end));
  expect(s.text).toContain('refund and refund and refund again');
  expect(s.text.length).toBeLessThanOrEqual(250);
  expect(text[s.start - 1]).toBe(' ');
  // Nothing matched: the chunk's start; a short text: all of it.
  expect(snippetOf(text, []).start).toBe(0);
  expect(snippetOf('short text', [])).toEqual({ start: 0, end: 10, text: 'short text' });
});
