// POST /knowledge-bases/:id/search/hybrid over real HTTP: the weight's end points equal the pure
// legs, the blend `w·semantic + (1−w)·full-text / (the query's maximum BM25)` recomputed
// from the legs' own scores, the leg scores carried on each hit, filters inside both legs,
// validation and the rrf extension. Every text here is one chunk, so the leg scores are the
// chunks' plain BM25 and cosine (item-aware scoring: test/api/hybrid-scoring.test.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { analyze } from '../../engine';
import { addContent, createKb, OTHER_KEY, OTHER_ORG, InProcessServer } from '../helpers/server';
import { API, expectError, expectSearchAnswer, expectValidation, unknownId } from './util';

let server: InProcessServer;

beforeAll(async () => {
  server = await InProcessServer.start();
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

type Mode = 'full-text' | 'semantic' | 'hybrid';
const searchPath = (kb: string, mode: Mode) => `${API}/knowledge-bases/${kb}/search/${mode}`;

async function search(kb: string, mode: Mode, body: Record<string, unknown>): Promise<any[]> {
  const res = await server.api('POST', searchPath(kb, mode), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  expect(Array.isArray(res.body.data)).toBe(true);
  expectSearchAnswer(res.body, mode);
  return res.body.data;
}

const hybrid = (kb: string, body: Record<string, unknown>) => search(kb, 'hybrid', body);

/** The knowledge base's BM25 k1 (its recorded configuration). */
async function k1Of(kb: string): Promise<number> {
  const res = await server.api('GET', `${API}/knowledge-bases/${kb}/configuration`);
  expect(res.status).toBe(200);
  return res.body.data.bm25.k1;
}

/**
 * The query's maximum BM25 by hand: Σ over its unique terms of qtf · idf · (k1 + 1), Lucene's idf
 * ln(1 + (N − df + 0.5) / (df + 0.5)) over the texts (one chunk each), a term no text holds at df 0.
 */
function maxBm25(query: string, texts: Set<string>[], k1: number): number {
  const counts = new Map<string, number>();
  for (const t of analyze(query)) counts.set(t, (counts.get(t) ?? 0) + 1);
  let max = 0;
  for (const [term, qtf] of counts) {
    const df = texts.filter((t) => t.has(term)).length;
    max += qtf * Math.log(1 + (texts.length - df + 0.5) / (df + 0.5)) * (k1 + 1);
  }
  return max;
}

/** Score descending, chunk id ascending on equal scores. */
function expectRanked(hits: any[]): void {
  for (let i = 1; i < hits.length; i++) {
    const [a, b] = [hits[i - 1], hits[i]];
    expect(a.score > b.score || (a.score === b.score && a.id < b.id)).toBe(true);
  }
}

/** Every key of the filter matches the hit's metadata (scalar equality, array containment, any-of). */
function matchesFilter(metadata: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([key, want]) => {
    const have = metadata[key];
    const wanted = Array.isArray(want) ? want : [want];
    const had = Array.isArray(have) ? have : have === undefined ? [] : [have];
    return wanted.some((w) => had.includes(w));
  });
}

// --- a knowledge base mixing texts found by keyword and texts found by meaning ------------------

const DOCS = {
  refund: {
    text: 'Refunds: purchases can be returned within 30 days for reimbursement to the original payment method.',
    metadata: { topic: 'refund', group: 'a', tags: ['billing'] },
  },
  money: { text: 'Money back guarantee applies to electronics only.', metadata: { topic: 'money', group: 'b', tags: ['billing', 'legal'] } },
  cat: { text: 'A cat sat on the mat.', metadata: { topic: 'cat', group: 'a', tags: ['pets'] } },
  rugsale: { text: 'Handmade rugs are on sale this week at half price.', metadata: { topic: 'rugsale', group: 'b', tags: ['shop'] } },
  car: { text: 'Our garage repairs cars: oil changes, brake replacement and engine tune-ups.', metadata: { topic: 'car', group: 'a', tags: ['auto'] } },
  building: { text: 'Building maintenance is scheduled for Sunday night.', metadata: { topic: 'building', group: 'b', tags: [] as string[] } },
  bikeracks: { text: 'Bike racks are located behind the main entrance.', metadata: { topic: 'bikeracks', group: 'a', tags: [] as string[] } },
  bikecode: { text: 'Bicycle inventory code 4471, warehouse shelf B.', metadata: { topic: 'bikecode', group: 'b', tags: ['shop'] } },
  rugclean: { text: 'Rug cleaning service: we wash rugs and carpets.', metadata: { topic: 'rugclean', group: 'a', tags: ['shop', 'cleaning'] } },
  hours: { text: 'The office is open Monday to Friday from 9am to 5pm.', metadata: { topic: 'hours', group: 'b', tags: [] as string[] } },
} as const;
type DocKey = keyof typeof DOCS;

let kb: string;
const ids = {} as Record<DocKey, string>;

const QUERIES = [
  'how do I get my money back',
  'automobile maintenance',
  'kitten resting on a rug',
  'where can I park my bicycle',
  'rug cleaning',
  'refund policy',
  'office hours',
  'xylophone concert', // no keyword match at all
];
const FILTERS: (Record<string, unknown> | undefined)[] = [undefined, { group: 'a' }, { tags: ['shop', 'billing'] }, { group: 'b', tags: 'shop' }];

beforeAll(async () => {
  kb = await createKb(server, 'Blend');
  for (const [key, doc] of Object.entries(DOCS)) ids[key as DocKey] = await addContent(server, kb, doc.text, doc.metadata);
});

describe('the weight end points are the pure legs', () => {
  test('semanticWeight 0 returns exactly the full-text ranking (ids and order), with and without filters', async () => {
    let nonEmpty = 0;
    for (const query of QUERIES) {
      for (const metadataFilter of FILTERS) {
        for (const limit of [undefined, 2]) {
          const body = { query, ...(metadataFilter ? { metadataFilter } : {}), ...(limit ? { limit } : {}) };
          const ft = await search(kb, 'full-text', body);
          const hy = await hybrid(kb, { ...body, semanticWeight: 0 });
          expect({ query, metadataFilter, limit, ids: hy.map((h) => h.id) }).toEqual({ query, metadataFilter, limit, ids: ft.map((h) => h.id) });
          if (ft.length > 0) nonEmpty++;
        }
      }
    }
    expect(nonEmpty).toBeGreaterThan(10);
  });

  test('semanticWeight 1 returns exactly the semantic ranking (ids and order), with and without filters', async () => {
    for (const query of QUERIES) {
      for (const metadataFilter of FILTERS) {
        for (const limit of [undefined, 3]) {
          const body = { query, ...(metadataFilter ? { metadataFilter } : {}), ...(limit ? { limit } : {}) };
          const sem = await search(kb, 'semantic', body);
          expect(sem.length).toBeGreaterThan(0);
          const hy = await hybrid(kb, { ...body, semanticWeight: 1 });
          expect({ query, metadataFilter, limit, ids: hy.map((h) => h.id) }).toEqual({ query, metadataFilter, limit, ids: sem.map((h) => h.id) });
        }
      }
    }
  });

  test('the end points differ from each other, and 0.5 differs from both (the weight is used)', async () => {
    const query = 'automobile maintenance';
    const [ft, sem, mid] = await Promise.all([hybrid(kb, { query, semanticWeight: 0 }), hybrid(kb, { query, semanticWeight: 1 }), hybrid(kb, { query })]);
    expect(ft[0].contentId).toBe(ids.building);
    expect(sem[0].contentId).toBe(ids.car);
    expect(ft.map((h) => h.id)).not.toEqual(sem.map((h) => h.id));
    // At 0.5 both the keyword match and the meaning match lead.
    expect(mid.slice(0, 2).map((h) => h.contentId)).toEqual([ids.building, ids.car]);
  });
});

describe('scores', () => {
  test('the default weight is 0.5: omitting it equals sending 0.5', async () => {
    for (const query of QUERIES) {
      const omitted = await hybrid(kb, { query, limit: 100 });
      const explicit = await hybrid(kb, { query, limit: 100, semanticWeight: 0.5 });
      expect(omitted.map((h) => [h.id, h.score])).toEqual(explicit.map((h) => [h.id, h.score]));
    }
    // …and not 0.3 or 0.7: the top meaning-only match scores exactly w · its cosine (full-text 0).
    for (const w of [0.3, 0.5, 0.7]) {
      const hits = await hybrid(kb, { query: 'automobile maintenance', limit: 100, ...(w === 0.5 ? {} : { semanticWeight: w }) });
      const car = hits.find((h) => h.contentId === ids.car);
      expect(car.semanticScore).toBeGreaterThan(0);
      expect(car.score).toBeCloseTo(w * car.semanticScore, 9);
    }
  });

  test('scores lie in [−w, 1] (cosines may be negative), descending, chunk id ascending on ties, at every weight', async () => {
    for (const query of QUERIES) {
      for (const semanticWeight of [0, 0.25, 0.5, 0.75, 1]) {
        const hits = await hybrid(kb, { query, semanticWeight, limit: 100 });
        for (const h of hits) {
          expect(h.id).toMatch(/^ch_/);
          expect(h.contentId).toMatch(/^ct_/);
          expect(typeof h.contentChunk).toBe('string');
          expect(typeof h.metadata).toBe('object');
          expect(Number.isFinite(h.score)).toBe(true);
          expect(h.score).toBeGreaterThanOrEqual(-semanticWeight - 1e-12);
          expect(h.score).toBeLessThanOrEqual(1 + 1e-12);
          expect(typeof h.fullTextScore).toBe('number');
          // At weight 0 no query embedding is made, so no semantic score is reported.
          expect(typeof h.semanticScore).toBe(semanticWeight === 0 ? 'undefined' : 'number');
        }
        expectRanked(hits);
      }
    }
  });

  test('fullTextScore and semanticScore equal the scores the full-text and semantic routes give the chunk', async () => {
    let both = 0;
    for (const query of QUERIES) {
      for (const metadataFilter of [undefined, { group: 'a' }]) {
        const f = metadataFilter ? { metadataFilter } : {};
        const ft = new Map((await search(kb, 'full-text', { query, limit: 100, ...f })).map((h) => [h.id, h.score]));
        const sem = new Map((await search(kb, 'semantic', { query, limit: 100, ...f })).map((h) => [h.id, h.score]));
        for (const semanticWeight of [0.5, 0.2, 1]) {
          const hits = await hybrid(kb, { query, limit: 100, semanticWeight, ...f });
          expect(hits.length).toBeGreaterThan(0);
          for (const h of hits) {
            expect(sem.has(h.id)).toBe(true);
            expect(h.semanticScore).toBeCloseTo(sem.get(h.id)!, 9);
            if (ft.has(h.id)) {
              expect(h.fullTextScore).toBeCloseTo(ft.get(h.id)!, 9);
              both++;
            } else {
              expect(h.fullTextScore).toBe(0);
            }
          }
        }
      }
    }
    expect(both).toBeGreaterThan(10);
  });

  test('a doc found only by meaning and a doc found only by keyword both appear at 0.5', async () => {
    const query = 'automobile maintenance';
    const ft = await search(kb, 'full-text', { query, limit: 100 });
    const sem = await search(kb, 'semantic', { query, limit: 2 });
    // Preconditions: the car text has no keyword of the query and is the nearest by meaning; the
    // building text holds the only keyword.
    expect(ft.map((h) => h.contentId)).toEqual([ids.building]);
    expect(sem[0].contentId).toBe(ids.car);
    const hits = await hybrid(kb, { query, limit: 2 });
    expect(hits.map((h) => h.contentId).sort()).toEqual([ids.building, ids.car].sort());
    const car = hits.find((h) => h.contentId === ids.car);
    expect(car.fullTextScore).toBe(0);
    expect(car.score).toBeCloseTo(0.5 * car.semanticScore, 9);
    // The other end points drop one of them.
    expect((await hybrid(kb, { query, limit: 2, semanticWeight: 0 })).map((h) => h.contentId)).not.toContain(ids.car);
    // …and w = 1 is the semantic ranking (the building text stays only where it is also second by
    // meaning, as "maintenance" makes it for all-MiniLM-L6-v2).
    expect((await hybrid(kb, { query, limit: 2, semanticWeight: 1 })).map((h) => h.contentId)).toEqual(sem.map((h) => h.contentId));
  });

  test("the keyword-only match is not lifted to 1 by being the only one: (1 − w)·BM25 / the query's maximum BM25 + w·cosine", async () => {
    const query = 'automobile maintenance';
    // Only the building text matches a keyword ("maintenance"); "automobile" occurs nowhere.
    const ft = await search(kb, 'full-text', { query, limit: 100 });
    expect(ft.map((h) => h.contentId)).toEqual([ids.building]);
    const texts = Object.values(DOCS).map((d) => new Set(analyze(d.text)));
    const scale = maxBm25(query, texts, await k1Of(kb));
    const building = (await search(kb, 'semantic', { query, limit: 100 })).find((h) => h.contentId === ids.building);
    for (const w of [0.25, 0.5, 0.9]) {
      const hits = await hybrid(kb, { query, limit: 100, semanticWeight: w });
      const hit = hits.find((h) => h.contentId === ids.building);
      expect(hit.score).toBeCloseTo((1 - w) * (ft[0].score / scale) + w * building.score, 9);
      // Half the query (its rarer word) is missing, so the keyword side stays well below 1 − w.
      expect(hit.score - w * building.score).toBeLessThan(0.5 * (1 - w));
    }
  });
});

describe('fusion recomputed from the legs', () => {
  let coffee: string;
  const TEXTS = [
    'Coffee beans are roasted in small batches every morning.',
    'The coffee machine on the third floor is broken again.',
    'Coffee, coffee and more coffee: the team runs on caffeine.',
    'Tea drinkers may also enjoy our decaf coffee selection.',
    'The quarterly budget review lists coffee among many other office expenses.',
  ];

  beforeAll(async () => {
    coffee = await createKb(server, 'Coffee');
    for (const [i, text] of TEXTS.entries()) await addContent(server, coffee, text, { n: i, even: i % 2 === 0 });
  });

  for (const query of ['coffee', 'broken coffee machine', 'morning coffee roast', 'what do people drink at work']) {
    test(`"${query}": order and scores equal w·semantic + (1 − w)·full-text / max BM25`, async () => {
      const ft = await search(coffee, 'full-text', { query, limit: 100 });
      const sem = await search(coffee, 'semantic', { query, limit: 100 });
      expect(sem.length).toBe(TEXTS.length);
      if (query === 'what do people drink at work') {
        // No keyword: the full-text leg is empty, so the blend is w·norm(semantic).
        expect(ft).toEqual([]);
      } else {
        // Both legs return every chunk: the candidates are the whole knowledge base.
        expect(ft.length).toBe(TEXTS.length);
      }
      const ftScore = new Map(ft.map((h) => [h.id, h.score]));
      const chunks = sem.map((h) => h.id);
      const scale = maxBm25(
        query,
        TEXTS.map((t) => new Set(analyze(t))),
        await k1Of(coffee),
      );
      const normSem = sem.map((h) => h.score);
      const normFt = chunks.map((id) => (ftScore.get(id) ?? 0) / scale);
      for (const v of normFt) expect(v).toBeLessThan(1);
      for (const w of [0.2, 0.5, 0.8]) {
        const expected = chunks
          .map((id, i) => ({ id, score: w * normSem[i]! + (1 - w) * normFt[i]! }))
          .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
        const hits = await hybrid(coffee, { query, limit: 100, ...(w === 0.5 ? {} : { semanticWeight: w }) });
        expect(hits.map((h) => h.id)).toEqual(expected.map((e) => e.id));
        hits.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i]!.score, 9));
        expect(hits[0].score).toBeCloseTo(expected[0]!.score, 9);
        // A limit cuts the same list.
        const top2 = await hybrid(coffee, { query, limit: 2, semanticWeight: w });
        expect(top2.map((h) => h.id)).toEqual(expected.slice(0, 2).map((e) => e.id));
      }
    });
  }
});

describe('metadataFilter in both legs', () => {
  test('no hit violates the filter at any weight or fusion', async () => {
    let hitsSeen = 0;
    for (const query of QUERIES) {
      for (const metadataFilter of FILTERS.slice(1) as Record<string, unknown>[]) {
        for (const semanticWeight of [0, 0.3, 0.5, 0.7, 1]) {
          for (const fusion of ['weighted', 'rrf']) {
            const hits = await hybrid(kb, { query, metadataFilter, semanticWeight, fusion, limit: 100 });
            for (const h of hits)
              expect({ filter: metadataFilter, metadata: h.metadata, ok: matchesFilter(h.metadata, metadataFilter) }).toMatchObject({ ok: true });
            hitsSeen += hits.length;
          }
        }
      }
    }
    expect(hitsSeen).toBeGreaterThan(100);
  });

  test('filtered hybrid keeps the unfiltered relative order of the allowed chunks when one leg decides (w = 0, w = 1)', async () => {
    for (const semanticWeight of [0, 1]) {
      const all = await hybrid(kb, { query: 'kitten resting on a rug', semanticWeight, limit: 100 });
      const filtered = await hybrid(kb, { query: 'kitten resting on a rug', semanticWeight, limit: 100, metadataFilter: { group: 'a' } });
      expect(filtered.map((h) => h.id)).toEqual(all.filter((h) => h.metadata.group === 'a').map((h) => h.id));
    }
  });

  test('the filter applies before truncation: limit 1 finds the only matching, least relevant text', async () => {
    const sem = await search(kb, 'semantic', { query: 'kitten resting on a rug', limit: 100 });
    const last = sem[sem.length - 1];
    for (const semanticWeight of [0.5, 1]) {
      const hits = await hybrid(kb, { query: 'kitten resting on a rug', limit: 1, semanticWeight, metadataFilter: { topic: last.metadata.topic } });
      expect(hits.map((h) => h.id)).toEqual([last.id]);
    }
    // Keyword side: only the rug shop's text among group b matches "rug".
    const kw = await hybrid(kb, { query: 'rug cleaning', limit: 1, semanticWeight: 0, metadataFilter: { group: 'b' } });
    expect(kw.map((h) => h.contentId)).toEqual([ids.rugsale]);
  });

  test('a filter nothing matches → 200 []', async () => {
    expect(await hybrid(kb, { query: 'rug cleaning', metadataFilter: { topic: 'unicorns' } })).toEqual([]);
  });
});

describe('fusion "rrf" (extension)', () => {
  test('accepted: 200, scores positive and descending', async () => {
    for (const query of QUERIES) {
      const hits = await hybrid(kb, { query, fusion: 'rrf', limit: 100 });
      expect(hits.length).toBeGreaterThan(0);
      for (const h of hits) expect(h.score).toBeGreaterThan(0);
      expectRanked(hits);
    }
  });

  test('at the end points it follows the one leg that carries weight', async () => {
    for (const query of QUERIES.slice(0, 4)) {
      const ft = await search(kb, 'full-text', { query });
      const sem = await search(kb, 'semantic', { query });
      expect((await hybrid(kb, { query, fusion: 'rrf', semanticWeight: 0 })).map((h) => h.id)).toEqual(ft.map((h) => h.id));
      expect((await hybrid(kb, { query, fusion: 'rrf', semanticWeight: 1 })).map((h) => h.id)).toEqual(sem.map((h) => h.id));
    }
  });

  test('"weighted" is the default fusion', async () => {
    const a = await hybrid(kb, { query: 'kitten resting on a rug', fusion: 'weighted' });
    const b = await hybrid(kb, { query: 'kitten resting on a rug' });
    expect(a.map((h) => [h.id, h.score])).toEqual(b.map((h) => [h.id, h.score]));
  });
});

describe('validation, tenancy and authentication', () => {
  for (const semanticWeight of [-0.1, 1.1, '0.5', null, true, [0.5], { w: 0.5 }]) {
    test(`semanticWeight ${JSON.stringify(semanticWeight)} → 400 naming semanticWeight`, async () => {
      expectValidation(await server.api('POST', searchPath(kb, 'hybrid'), { query: 'rugs', semanticWeight }), 'semanticWeight');
    });
  }

  test('semanticWeight 0 and 1 (integers) are accepted', async () => {
    for (const semanticWeight of [0, 1]) expect((await hybrid(kb, { query: 'rugs', semanticWeight })).length).toBeGreaterThan(0);
  });

  for (const fusion of ['foo', 'RRF', '', 1, null]) {
    test(`fusion ${JSON.stringify(fusion)} → 400 naming fusion`, async () => {
      expectValidation(await server.api('POST', searchPath(kb, 'hybrid'), { query: 'rugs', fusion }), 'fusion');
    });
  }

  const cases: [string, unknown, string][] = [
    ['an unknown field', { query: 'rugs', weight: 0.5 }, 'weight'],
    ['an empty query', { query: '', semanticWeight: 0.5 }, 'query'],
    ['a whitespace-only query', { query: '   ', semanticWeight: 0 }, 'query'],
    ['a missing query', { semanticWeight: 0.5 }, 'query'],
    ['limit 0', { query: 'rugs', limit: 0 }, 'limit'],
    ['limit 101', { query: 'rugs', limit: 101 }, 'limit'],
    ['a numeric-string limit', { query: 'rugs', limit: '5' }, 'limit'],
    ['a fractional limit', { query: 'rugs', limit: 2.5 }, 'limit'],
  ];
  for (const [label, body, field] of cases) {
    test(`${label} → 400 naming '${field}'`, async () => {
      expectValidation(await server.api('POST', searchPath(kb, 'hybrid'), body), field);
    });
  }

  test('limit is honoured and defaults to 10', async () => {
    expect((await hybrid(kb, { query: 'rugs' })).length).toBe(10);
    expect((await hybrid(kb, { query: 'rugs', limit: 4 })).length).toBe(4);
    expect((await hybrid(kb, { query: 'rugs', limit: 100 })).length).toBe(Object.keys(DOCS).length);
  });

  test('unknown, malformed or foreign knowledge base → 404; no credentials → 401', async () => {
    expectError(await server.api('POST', searchPath(unknownId('kb'), 'hybrid'), { query: 'rugs' }), 404, 'NOT_FOUND');
    expectError(await server.api('POST', searchPath('nope', 'hybrid'), { query: 'rugs' }), 404, 'NOT_FOUND');
    expectError(await server.api('POST', searchPath(kb, 'hybrid'), { query: 'rugs' }, { org: OTHER_ORG, key: OTHER_KEY }), 404, 'NOT_FOUND');
    expectError(await server.api('POST', searchPath(kb, 'hybrid'), { query: 'rugs' }, null), 401, 'UNAUTHORIZED');
  });

  test('an empty knowledge base → 200 [] at any weight', async () => {
    const empty = await createKb(server, 'Empty hybrid');
    for (const semanticWeight of [0, 0.5, 1]) expect(await hybrid(empty, { query: 'rugs', semanticWeight })).toEqual([]);
  });
});
