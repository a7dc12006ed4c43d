import { expect, test } from 'bun:test';
import { matchesFilter, MetadataIndex, type Metadata, type MetadataFilter } from '../../engine/filter/metadata';

test('filter rules', () => {
  const m: Metadata = { team: 'a', tags: ['x', 'y'], year: 2024, draft: false };
  expect(matchesFilter(m, { team: 'a' })).toBe(true);
  expect(matchesFilter(m, { team: 'b' })).toBe(false);
  expect(matchesFilter(m, { tags: 'x' })).toBe(true);
  expect(matchesFilter(m, { tags: ['z', 'y'] })).toBe(true);
  expect(matchesFilter(m, { team: ['b', 'c'] })).toBe(false);
  expect(matchesFilter(m, { year: 2024, draft: false })).toBe(true);
  expect(matchesFilter(m, { year: '2024' })).toBe(false); // types are not coerced
  expect(matchesFilter(m, { missing: 'x' })).toBe(false);
  expect(matchesFilter(m, {})).toBe(true);
});

test('MetadataIndex agrees with matchesFilter', () => {
  let seed = 3;
  const rand = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
  const docs: Metadata[] = [];
  const index = new MetadataIndex();
  for (let d = 0; d < 300; d++) {
    const m: Metadata = { team: `t${rand(4)}`, tags: [`g${rand(5)}`, `g${rand(5)}`], n: rand(3), flag: rand(2) === 1 };
    docs.push(m);
    index.add(d, m);
  }
  for (let d = 0; d < 300; d += 4) index.remove(d, docs[d]!);
  const filters: MetadataFilter[] = [
    { team: 't1' },
    { tags: 'g2' },
    { tags: ['g0', 'g4'], n: 1 },
    { flag: true, team: ['t0', 't3'] },
    { n: 2, tags: 'g1', flag: false },
    { nothing: 1 },
  ];
  for (const f of filters) {
    const expected = docs.map((_m, d) => d).filter((d) => d % 4 !== 0 && matchesFilter(docs[d]!, f));
    expect(index.matching(f)).toEqual(expected);
  }
});
