import { expect, test } from 'bun:test';
import { TopK } from '../../engine/topk';

test('TopK equals a full sort by (score desc, doc asc)', () => {
  let seed = 42;
  const rand = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (const k of [1, 3, 10, 100]) {
    const items = Array.from({ length: 500 }, (_, doc) => ({ doc, score: Math.floor(rand() * 50) / 10 }));
    const top = new TopK(k);
    for (const i of [...items].sort(() => rand() - 0.5)) top.push(i.doc, i.score);
    const expected = [...items].sort((a, b) => b.score - a.score || a.doc - b.doc).slice(0, k);
    expect(top.sorted()).toEqual(expected);
  }
});

test('TopK of zero keeps nothing', () => {
  const top = new TopK(0);
  top.push(1, 1);
  expect(top.sorted()).toEqual([]);
});
