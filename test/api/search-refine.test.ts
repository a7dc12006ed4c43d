// Search body extensions over real HTTP, in every mode: `minScore`, `maxChunksPerContent` and
// `highlight` (highlights as offsets into contentChunk, plus a snippet), with their validation.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, InProcessServer } from '../helpers/server';
import { API, expectSearchAnswer, expectValidation } from './util';

let server: InProcessServer;
let kb: string;
let long: string;
const shortIds: string[] = [];

const MODES = ['full-text', 'semantic', 'hybrid'] as const;
type Mode = (typeof MODES)[number];

async function search(mode: Mode, body: Record<string, unknown>): Promise<any[]> {
  const res = await server.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  expectSearchAnswer(res.body, mode);
  return res.body.data;
}

const paragraph = (i: number) =>
  `Section ${i}. Refund requests are handled by the billing team; a refund is issued to the original payment method within fourteen days of the request. `.repeat(
    3,
  );

beforeAll(async () => {
  server = await InProcessServer.start();
  kb = await createKb(server, 'Refinements');
  // One long item: many chunks, each about refunds. Then short items that mention refunds once.
  long = await addContent(server, kb, Array.from({ length: 12 }, (_, i) => paragraph(i)).join('\n\n'), { kind: 'handbook' });
  for (const [i, text] of [
    'Refunds for damaged goods: send a photo and we refund you.',
    'Shipping is free above fifty euros; a refund of shipping costs is not possible.',
    'The office dog Biscuit greets visitors at the door.',
    'Gift cards cannot be exchanged for cash or refunded.',
  ].entries()) {
    shortIds.push(await addContent(server, kb, text, { kind: 'short', n: i }));
  }
}, 120_000);

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

describe('maxChunksPerContent', () => {
  for (const mode of MODES) {
    test(`${mode}: at most n hits of one item, and the page is filled with other items`, async () => {
      const all = await search(mode, { query: 'refund request', limit: 10 });
      const fromLong = all.filter((h) => h.contentId === long).length;
      expect(fromLong).toBeGreaterThan(2);
      for (const n of [1, 2]) {
        const hits = await search(mode, { query: 'refund request', limit: 5, maxChunksPerContent: n });
        const perItem = new Map<string, number>();
        for (const h of hits) perItem.set(h.contentId, (perItem.get(h.contentId) ?? 0) + 1);
        expect(Math.max(...perItem.values())).toBe(n);
        // Every other item in the full ranking fills the page (one hit each: they are one chunk),
        // beside up to n of the long one.
        const deep = await search(mode, { query: 'refund request', limit: 100 });
        const others = new Set(deep.filter((h) => h.contentId !== long).map((h) => h.contentId)).size;
        expect(others).toBeGreaterThan(2);
        expect(hits.length).toBe(Math.min(5, n + others));
        // The kept hits keep the order and scores the full ranking gives them.
        const order = deep.map((h) => h.id);
        const positions = hits.map((h) => order.indexOf(h.id));
        expect(positions.every((p) => p >= 0)).toBe(true);
        expect([...positions].sort((a, b) => a - b)).toEqual(positions);
        for (const h of hits) expect(h.score).toBe(deep.find((d) => d.id === h.id).score);
      }
    });
  }
});

describe('minScore', () => {
  for (const mode of MODES) {
    test(`${mode}: hits below the minimum are left out, the rest unchanged`, async () => {
      const all = await search(mode, { query: 'refund request', limit: 100 });
      expect(all.length).toBeGreaterThan(3);
      const threshold = all[2].score;
      const hits = await search(mode, { query: 'refund request', limit: 100, minScore: threshold });
      expect(hits).toEqual(all.filter((h) => h.score >= threshold));
      expect(await search(mode, { query: 'refund request', minScore: all[0].score + 1 })).toEqual([]);
      // With a per-item cap too: the minimum still holds on every hit.
      const both = await search(mode, { query: 'refund request', limit: 100, minScore: threshold, maxChunksPerContent: 1 });
      expect(both.every((h) => h.score >= threshold)).toBe(true);
      expect(new Set(both.map((h) => h.contentId)).size).toBe(both.length);
    });
  }
});

describe('highlight', () => {
  for (const mode of MODES) {
    test(`${mode}: offsets of the matched words (stems included) and a snippet that is a slice of the chunk`, async () => {
      const hits = await search(mode, { query: 'refunds', limit: 10, highlight: true });
      expect(hits.length).toBeGreaterThan(0);
      for (const h of hits) {
        expect(Array.isArray(h.highlights)).toBe(true);
        for (const { start, end } of h.highlights) {
          expect(h.contentChunk.slice(start, end).toLowerCase()).toMatch(/^refund(s|ed)?$/);
        }
        // Every occurrence of the word is marked.
        const occurrences = [...h.contentChunk.matchAll(/\brefund(s|ed)?\b/gi)].length;
        expect(h.highlights.length).toBe(occurrences);
        expect(h.snippet.text).toBe(h.contentChunk.slice(h.snippet.start, h.snippet.end));
        expect(h.snippet.text.length).toBeLessThanOrEqual(260);
        if (h.highlights.length > 0) {
          const inside = h.highlights.filter((x: any) => x.start >= h.snippet.start && x.end <= h.snippet.end);
          expect(inside.length).toBeGreaterThan(0);
        }
      }
      const plain = await search(mode, { query: 'refunds', limit: 10 });
      expect(plain[0].highlights).toBeUndefined();
      expect(plain[0].snippet).toBeUndefined();
    });
  }

  test('stop words are never highlighted; a hit without a matching word has none (semantic)', async () => {
    const hits = await search('semantic', { query: 'the dog', limit: 10, highlight: true });
    const dog = hits.find((h) => h.contentId === shortIds[2]);
    expect(dog.highlights.map((x: any) => dog.contentChunk.slice(x.start, x.end))).toEqual(['dog']);
    const handbook = hits.find((h) => h.contentId === long);
    if (handbook) expect(handbook.highlights).toEqual([]);
  });
});

describe('context', () => {
  const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliett'];
  let item: string;
  let text: string;
  beforeAll(async () => {
    text = WORDS.map((w) => `Part ${w}: ${`the ${w} paragraph talks about ${w} and nothing else. `.repeat(8)}`).join('\n\n');
    item = await addContent(server, kb, text, { kind: 'alphabet' });
  });

  /** Where a chunk's text sits in the item's text. */
  const at = (chunk: string) => {
    const i = text.indexOf(chunk);
    expect(i).toBeGreaterThanOrEqual(0);
    return i;
  };

  for (const mode of MODES) {
    test(`${mode}: up to k chunks before and after, from the same item, in its order`, async () => {
      const [hit] = (await search(mode, {
        query: 'hotel paragraph',
        limit: 1,
        metadataFilter: { kind: 'alphabet' },
        context: { before: 2, after: 1 },
      })) as any[];
      expect(hit.contentId).toBe(item);
      const { before, after } = hit.context;
      expect(before.length).toBeGreaterThan(0);
      expect(before.length).toBeLessThanOrEqual(2);
      expect(after.length).toBeLessThanOrEqual(1);
      const positions = [...before, { contentChunk: hit.contentChunk }, ...after].map((c: any) => at(c.contentChunk));
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      for (const c of [...before, ...after]) {
        expect(c.id).toMatch(/^ch_/);
        expect(c.id).not.toBe(hit.id);
      }
      // Only one side asked for: the other is empty; the item's first chunk has nothing before it.
      const [first] = (await search(mode, { query: 'alpha paragraph', limit: 1, metadataFilter: { kind: 'alphabet' }, context: { before: 3 } })) as any[];
      expect(at(first.contentChunk)).toBe(0);
      expect(first.context).toEqual({ before: [], after: [] });
      const [plain] = await search(mode, { query: 'hotel paragraph', limit: 1, metadataFilter: { kind: 'alphabet' } });
      expect(plain.context).toBeUndefined();
    });
  }
});

describe('query syntax (full-text and hybrid)', () => {
  let phraseKb: string;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    phraseKb = await createKb(server, 'Syntax');
    for (const [name, text] of Object.entries({
      exact: 'You get your money back within ten days.',
      apart: 'Money is sent back to the bank; the money arrives in days.',
      voucher: 'Instead of money back we offer a voucher for the shop.',
      gift: 'A gift card cannot be exchanged for money.',
    })) {
      ids[name] = await addContent(server, phraseKb, text);
    }
  });
  const ask = async (mode: 'full-text' | 'hybrid', query: string) => {
    const res = await server.api('POST', `${API}/knowledge-bases/${phraseKb}/search/${mode}`, mode === 'hybrid' ? { query, semanticWeight: 0.3 } : { query });
    expect(res.status).toBe(200);
    expectSearchAnswer(res.body, mode);
    return (res.body.data as { contentId: string }[]).map((h) => h.contentId);
  };

  for (const mode of ['full-text', 'hybrid'] as const) {
    test(`${mode}: "…" requires the phrase, -word and -"…" leave chunks out`, async () => {
      expect((await ask(mode, 'money back')).length).toBeGreaterThan(2);
      expect((await ask(mode, '"money back"')).sort()).toEqual([ids.exact!, ids.voucher!].sort());
      expect(await ask(mode, '"money back" -voucher')).toEqual([ids.exact!]);
      const noGift = await ask(mode, 'money -"gift card"');
      expect(noGift).not.toContain(ids.gift);
      expect(noGift.length).toBeGreaterThan(1);
    });

    test(`${mode}: exclusions only, a phrase of stop words or an excluded stop word → 400 naming the query`, async () => {
      for (const query of ['-money', '-"gift card" -voucher', '"to be or not"', 'money -the']) {
        const res = await server.api('POST', `${API}/knowledge-bases/${phraseKb}/search/${mode}`, { query });
        expectValidation(res, 'query');
        expect(res.body.error.message).toStartWith('Invalid query: ');
      }
    });
  }

  test('semantic search reads the query as written: no syntax, no 400', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases/${phraseKb}/search/semantic`, { query: '-money' });
    expect(res.status).toBe(200);
  });
});

describe('metadataFilter operators and compounds', () => {
  let filterKb: string;
  const byYear: Record<number, string> = {};
  beforeAll(async () => {
    filterKb = await createKb(server, 'Filters');
    for (const [year, team, tags, date] of [
      [2019, 'billing', ['faq'], '2019-05-01'],
      [2021, 'support', ['howto', 'faq'], '2021-01-15'],
      [2023, 'billing', [], '2023-12-31'],
      [2025, 'legal', ['policy'], '2025-07-04'],
    ] as const) {
      byYear[year] = await addContent(server, filterKb, `Refund rules written in ${year} by the ${team} team.`, { year, team, tags: [...tags], date });
    }
    await addContent(server, filterKb, 'Refund rules without any metadata at all.');
  });
  const years = async (mode: Mode, metadataFilter: unknown) => {
    const res = await server.api('POST', `${API}/knowledge-bases/${filterKb}/search/${mode}`, { query: 'refund rules', limit: 100, metadataFilter });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    const ids = new Set((res.body.data as { contentId: string }[]).map((h) => h.contentId));
    return Object.entries(byYear)
      .filter(([, id]) => ids.has(id))
      .map(([y]) => Number(y));
  };
  for (const mode of MODES) {
    test(`${mode}: ranges, sets, negations, existence, $and / $or — inside the leg, before ranking`, async () => {
      expect(await years(mode, { year: { $gte: 2021, $lt: 2025 } })).toEqual([2021, 2023]);
      expect(await years(mode, { date: { $gt: '2021-01-15' } })).toEqual([2023, 2025]);
      expect(await years(mode, { team: { $in: ['legal', 'support'] } })).toEqual([2021, 2025]);
      expect(await years(mode, { team: { $nin: ['billing'] }, year: { $exists: true } })).toEqual([2021, 2025]);
      expect(await years(mode, { team: { $ne: 'billing' }, tags: 'faq' })).toEqual([2021]);
      expect(await years(mode, { tags: { $exists: true }, year: { $lte: 2023 } })).toEqual([2019, 2021, 2023]);
      expect(await years(mode, { $or: [{ year: { $lt: 2020 } }, { team: 'legal' }] })).toEqual([2019, 2025]);
      expect(await years(mode, { $and: [{ team: 'billing' }, { $or: [{ tags: 'faq' }, { year: 2023 }] }] })).toEqual([2019, 2023]);
      // The item without metadata: matched by negations only.
      const res = await server.api('POST', `${API}/knowledge-bases/${filterKb}/search/${mode}`, {
        query: 'refund rules',
        limit: 100,
        metadataFilter: { year: { $exists: false } },
      });
      expect(res.body.data.map((h: { contentChunk: string }) => h.contentChunk)).toEqual(['Refund rules without any metadata at all.']);
    });
  }

  // Compiled before anything is searched (src/schemas/common.ts checkFilter, engine/filter/expression.ts).
  const meaningless: [string, unknown, string][] = [
    ['an unknown operator', { year: { $after: 2020 } }, '/metadataFilter/year/$after'],
    ['an operator at the top level other than $and / $or', { $not: { team: 'a' } }, '/metadataFilter/$not'],
    ['a range bound that is an array', { year: { $gt: [2020] } }, '/metadataFilter/year/$gt'],
    ['a range bound that is a boolean', { year: { $lte: true } }, '/metadataFilter/year/$lte'],
    ['a range of a number and a string', { year: { $gt: 1, $lt: 'z' } }, '/metadataFilter/year'],
    ['an empty $in inside $or', { $or: [{ team: 'a' }, { team: { $in: [] } }] }, '/metadataFilter/$or/1/team/$in'],
    ['$in of a string', { team: { $in: 'billing' } }, '/metadataFilter/team/$in'],
    ['$nin holding an object', { team: { $nin: ['a', { b: 1 }] } }, '/metadataFilter/team/$nin/1'],
    ['$eq of an array', { team: { $eq: ['a'] } }, '/metadataFilter/team/$eq'],
    ['$ne of null', { team: { $ne: null } }, '/metadataFilter/team/$ne'],
    ['$exists of a string', { year: { $exists: 'yes' } }, '/metadataFilter/year/$exists'],
    ['an empty operator object', { team: {} }, '/metadataFilter/team'],
    ['a null value', { team: null }, '/metadataFilter/team'],
    ['$and of an object', { $and: { team: 'a' } }, '/metadataFilter/$and'],
    ['an empty $or', { $or: [] }, '/metadataFilter/$or'],
    ['$and holding a string', { $and: [{ team: 'a' }, 'team=b'] }, '/metadataFilter/$and/1'],
  ];
  for (const mode of MODES) {
    test(`${mode}: operators that mean nothing → 400 VALIDATION_ERROR with the path of the problem; nothing changes`, async () => {
      const state = async () => ({
        hits: await years(mode, { year: { $gte: 2021 } }),
        kb: (await server.api('GET', `${API}/knowledge-bases/${filterKb}`)).body.data.ingestion,
      });
      const before = await state();
      expect(before).toMatchObject({ hits: [2021, 2023, 2025], kb: { contents: { ready: 5 } } });
      for (const [name, metadataFilter, path] of meaningless) {
        const res = await server.api('POST', `${API}/knowledge-bases/${filterKb}/search/${mode}`, { query: 'refund', metadataFilter });
        expectValidation(res, 'metadataFilter');
        expect({ name, path: res.body.error.details[0].path }).toEqual({ name, path });
      }
      expect(await state()).toEqual(before);
    });
  }
});

describe('validation', () => {
  const bad: [string, Record<string, unknown>, string][] = [
    ['minScore as a string', { query: 'refund', minScore: 'high' }, 'minScore'],
    ['maxChunksPerContent 0', { query: 'refund', maxChunksPerContent: 0 }, 'maxChunksPerContent'],
    ['maxChunksPerContent 1.5', { query: 'refund', maxChunksPerContent: 1.5 }, 'maxChunksPerContent'],
    ['maxChunksPerContent above the search limit', { query: 'refund', maxChunksPerContent: 101 }, 'maxChunksPerContent'],
    ['highlight as a string', { query: 'refund', highlight: 'yes' }, 'highlight'],
    ['typoTolerance as a string', { query: 'refund', typoTolerance: 'yes' }, 'typoTolerance'],
    ["typo_tolerance (another service's name)", { query: 'refund', typo_tolerance: false }, 'typoTolerance'],
    ['context before -1', { query: 'refund', context: { before: -1 } }, 'context'],
    ['context after 11', { query: 'refund', context: { after: 11 } }, 'context'],
    ['context with an unknown field', { query: 'refund', context: { around: 2 } }, 'context'],
  ];
  for (const mode of MODES) {
    for (const [name, body, field] of bad) {
      test(`${mode}: ${name} → 400 naming the field`, async () => {
        const res = await server.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, body);
        expectValidation(res, field);
      });
    }
  }
});
