// POST /knowledge-bases/:id/search/full-text over real HTTP: ranking, hit shape, limits,
// validation, metadata filters, determinism and text analysis.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, InProcessServer } from '../helpers/server';
import { API, expectError, expectSearchAnswer, expectValidation, unknownId } from './util';

let server: InProcessServer;

beforeAll(async () => {
  server = await InProcessServer.start();
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

const searchPath = (kb: string) => `${API}/knowledge-bases/${kb}/search/full-text`;

async function search(kb: string, body: Record<string, unknown>): Promise<any[]> {
  const res = await server.api('POST', searchPath(kb), body);
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  expect(Array.isArray(res.body.data)).toBe(true);
  expectSearchAnswer(res.body, 'full-text');
  return res.body.data;
}

function expectRanked(hits: any[]): void {
  for (let i = 1; i < hits.length; i++) {
    const [a, b] = [hits[i - 1], hits[i]];
    expect(a.score > b.score || (a.score === b.score && a.id < b.id)).toBe(true);
  }
}

describe('ranking and hit shape', () => {
  let kb: string;
  let strong: string;
  let weak: string;
  let unrelated: string;

  beforeAll(async () => {
    kb = await createKb(server, 'Ranking');
    weak = await addContent(server, kb, 'Shipping takes five business days. A refund is possible in rare cases, and shipping is tracked.', {
      kind: 'shipping',
    });
    strong = await addContent(server, kb, 'Refund policy: refunds are issued within 14 days. Refund requests go to billing.', {
      kind: 'refund',
      tags: ['billing'],
    });
    unrelated = await addContent(server, kb, 'Our office dog is named Biscuit.');
  });

  test('the more relevant chunk ranks first; unrelated content is not returned', async () => {
    const hits = await search(kb, { query: 'refund' });
    expect(hits.map((h) => h.contentId)).toEqual([strong, weak]);
    expect(hits.map((h) => h.contentId)).not.toContain(unrelated);
    expect(hits[0].score).toBeGreaterThan(hits[1].score);
    expectRanked(hits);
  });

  test('hits carry id (ch_), contentChunk, score > 0, contentId and metadata', async () => {
    const hits = await search(kb, { query: 'refund billing' });
    expect(hits.length).toBe(2);
    for (const h of hits) {
      expect(h.id).toMatch(/^ch_[0-9a-z]+$/);
      expect(h.id).not.toBe(h.contentId);
      expect(typeof h.contentChunk).toBe('string');
      expect(typeof h.score).toBe('number');
      expect(Number.isFinite(h.score)).toBe(true);
      expect(h.score).toBeGreaterThan(0);
      expect(h.contentId).toMatch(/^ct_/);
      expect(typeof h.metadata).toBe('object');
    }
    const top = hits[0];
    expect(top.contentId).toBe(strong);
    expect(top.contentChunk).toBe('Refund policy: refunds are issued within 14 days. Refund requests go to billing.');
    expect(top.metadata).toEqual({ kind: 'refund', tags: ['billing'] });
    // Content without metadata comes back with {}.
    const dog = await search(kb, { query: 'biscuit' });
    expect(dog.map((h) => h.contentId)).toEqual([unrelated]);
    expect(dog[0].metadata).toEqual({});
  });

  test('a query with no matching term → 200 []', async () => {
    expect(await search(kb, { query: 'xylophone' })).toEqual([]);
  });

  test('a query made only of stop words → 200 []', async () => {
    // Every document contains "is", "the"/"a"/"and"; a stop-word query must still find nothing.
    expect(await search(kb, { query: 'the and is a of' })).toEqual([]);
  });

  test('punctuation-only query → 200 []', async () => {
    expect(await search(kb, { query: '?!... ---' })).toEqual([]);
  });

  test('the same search twice gives the same answer', async () => {
    const a = await search(kb, { query: 'refund shipping days' });
    const b = await search(kb, { query: 'refund shipping days' });
    expect(a.length).toBeGreaterThan(0);
    expect(b).toEqual(a);
  });
});

describe('limit', () => {
  let kb: string;
  beforeAll(async () => {
    kb = await createKb(server, 'Limit');
    for (let i = 0; i < 12; i++) await addContent(server, kb, `apple number ${i} ${'apple '.repeat(i % 4)}`);
  });

  test('defaults to 10', async () => {
    const hits = await search(kb, { query: 'apple' });
    expect(hits.length).toBe(10);
    expectRanked(hits);
  });

  test('is honoured, and a smaller limit is a prefix of a larger one', async () => {
    const all = await search(kb, { query: 'apple', limit: 100 });
    expect(all.length).toBe(12);
    expectRanked(all);
    expect(new Set(all.map((h) => h.id)).size).toBe(12);
    const three = await search(kb, { query: 'apple', limit: 3 });
    expect(three).toEqual(all.slice(0, 3));
    const one = await search(kb, { query: 'apple', limit: 1 });
    expect(one).toEqual(all.slice(0, 1));
    expect(await search(kb, { query: 'apple', limit: 12 })).toEqual(all);
  });

  for (const limit of [0, 101, 1.5, -1, null, true, '5', '0x5']) {
    test(`limit ${JSON.stringify(limit)} → 400 naming limit`, async () => {
      expectValidation(await server.api('POST', searchPath(kb), { query: 'apple', limit }), 'limit');
    });
  }
});

describe('validation', () => {
  let kb: string;
  beforeAll(async () => {
    kb = await createKb(server, 'Validation');
    await addContent(server, kb, 'validation text');
  });

  const rows: [string, unknown, string][] = [
    ['empty query', { query: '' }, 'query'],
    ['blank query', { query: '  \t ' }, 'query'],
    ['missing query', { limit: 5 }, 'query'],
    ['query that is a number', { query: 7 }, 'query'],
    ['query of 4097 characters', { query: 'q'.repeat(4097) }, 'query'],
    ['semanticWeight sent to full-text', { query: 'text', semanticWeight: 0.5 }, 'semanticWeight'],
    ['unknown field', { query: 'text', sort: 'asc' }, 'sort'],
    ['metadataFilter not an object', { query: 'text', metadataFilter: 'team' }, 'metadataFilter'],
    ['metadataFilter with a nested object', { query: 'text', metadataFilter: { team: { eq: 'a' } } }, 'team'],
    ['metadataFilter value null', { query: 'text', metadataFilter: { team: null } }, 'metadataFilter'],
    ['metadataFilter key of 65 characters', { query: 'text', metadataFilter: { ['f'.repeat(65)]: 'a' } }, 'metadataFilter'],
  ];
  for (const [label, body, field] of rows) {
    test(`${label} → 400 VALIDATION_ERROR naming '${field}'`, async () => {
      expectValidation(await server.api('POST', searchPath(kb), body), field);
    });
  }

  test('query of exactly 4096 characters is accepted', async () => {
    expect(await search(kb, { query: `${'validation '.repeat(372)}text`.slice(0, 4096) })).toHaveLength(1);
  });

  test('invalid JSON → 400 INVALID_JSON', async () => {
    expectError(await server.api('POST', searchPath(kb), '{"query":'), 400, 'INVALID_JSON');
  });

  test('non-object body → 400', async () => {
    const res = await server.api('POST', searchPath(kb), '["validation"]');
    expect(res.status).toBe(400);
    expectError(res, 400, res.body.error.code);
  });

  test('unknown or malformed KB → 404 NOT_FOUND', async () => {
    for (const id of [unknownId('kb'), 'kb_nope']) {
      expectError(await server.api('POST', searchPath(id), { query: 'validation' }), 404, 'NOT_FOUND');
    }
  });
});

describe('empty knowledge base', () => {
  test('→ 200 data []', async () => {
    const kb = await createKb(server, 'Empty');
    const res = await server.api('POST', searchPath(kb), { query: 'anything at all' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: [] });
  });

  test('a KB whose only content was deleted → 200 data []', async () => {
    const kb = await createKb(server, 'Emptied');
    const id = await addContent(server, kb, 'vanishing tapir');
    expect((await server.api('DELETE', `${API}/knowledge-bases/${kb}/contents/${id}`)).status).toBe(200);
    expect(await search(kb, { query: 'tapir' })).toEqual([]);
  });
});

describe('metadataFilter', () => {
  let kb: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    kb = await createKb(server, 'Filters');
    ids.d1 = await addContent(server, kb, 'widget alpha', { team: 'billing', tags: ['faq', 'refund'], year: 2024, public: true });
    ids.d2 = await addContent(server, kb, 'widget beta', { team: 'support', tags: ['howto'], year: 2025, public: false });
    ids.d3 = await addContent(server, kb, 'widget gamma', { team: 'billing', tags: ['howto'], year: 2025, public: true });
    ids.d4 = await addContent(server, kb, 'widget delta');
  });

  async function matching(metadataFilter: unknown): Promise<string[]> {
    const hits = await search(kb, { query: 'widget', metadataFilter });
    const byId = Object.fromEntries(Object.entries(ids).map(([k, v]) => [v, k]));
    return hits.map((h) => byId[h.contentId]!).sort();
  }

  test('no filter returns everything matching the query', async () => {
    expect(await matching(undefined)).toEqual(['d1', 'd2', 'd3', 'd4']);
  });

  test('an empty filter {} restricts nothing', async () => {
    expect(await matching({})).toEqual(['d1', 'd2', 'd3', 'd4']);
  });

  test('scalar equality', async () => {
    expect(await matching({ team: 'billing' })).toEqual(['d1', 'd3']);
    expect(await matching({ team: 'support' })).toEqual(['d2']);
    expect(await matching({ team: 'Billing' })).toEqual([]);
  });

  test('a scalar matches inside an array value', async () => {
    expect(await matching({ tags: 'faq' })).toEqual(['d1']);
    expect(await matching({ tags: 'howto' })).toEqual(['d2', 'd3']);
  });

  test('an array in the filter matches any of its values', async () => {
    expect(await matching({ team: ['support', 'sales'] })).toEqual(['d2']);
    expect(await matching({ team: ['support', 'billing'] })).toEqual(['d1', 'd2', 'd3']);
    expect(await matching({ tags: ['refund', 'nothing'] })).toEqual(['d1']);
  });

  test('several keys must all match', async () => {
    expect(await matching({ team: 'billing', year: 2025 })).toEqual(['d3']);
    expect(await matching({ team: 'billing', tags: 'howto', public: true })).toEqual(['d3']);
    expect(await matching({ team: 'support', public: true })).toEqual([]);
  });

  test('number and boolean values', async () => {
    expect(await matching({ year: 2024 })).toEqual(['d1']);
    expect(await matching({ year: [2024, 2025] })).toEqual(['d1', 'd2', 'd3']);
    expect(await matching({ public: false })).toEqual(['d2']);
    expect(await matching({ public: true })).toEqual(['d1', 'd3']);
    expect(await matching({ year: 1999 })).toEqual([]);
  });

  test('keys named like Object.prototype members are plain keys', async () => {
    const protoKb = await createKb(server, 'Proto keys');
    const id = await server.api(
      'POST',
      `${API}/knowledge-bases/${protoKb}/contents?wait=true`,
      '{"text":"kiwi fruit","metadata":{"constructor":"a","__proto__":"b"}}',
    );
    expect(id.status).toBe(201);
    await addContent(server, protoKb, 'kiwi bird');
    for (const metadataFilter of [{ constructor: 'a' }, JSON.parse('{"__proto__":"b"}')]) {
      const hits = await search(protoKb, { query: 'kiwi', metadataFilter });
      expect(hits.map((h) => h.contentId)).toEqual([id.body.data.id]);
      expect(hits[0].metadata).toEqual(JSON.parse('{"constructor":"a","__proto__":"b"}'));
    }
    expect(await search(protoKb, { query: 'kiwi', metadataFilter: { toString: 'a' } })).toEqual([]);
  });

  test('a key no content has matches nothing', async () => {
    expect(await matching({ missing: 'x' })).toEqual([]);
  });

  test('hits of a filtered search carry the matching metadata', async () => {
    const hits = await search(kb, { query: 'widget', metadataFilter: { year: 2024 } });
    expect(hits.map((h) => h.metadata)).toEqual([{ team: 'billing', tags: ['faq', 'refund'], year: 2024, public: true }]);
  });

  test('the filter applies before truncation to limit', async () => {
    const big = await createKb(server, 'Filter before limit');
    // 30 strong matches outside the filter, then 2 weak matches inside it.
    for (let i = 0; i < 30; i++) await addContent(server, big, `gadget gadget gadget ${i}`, { group: 'noise' });
    const weak1 = await addContent(server, big, 'a gadget mentioned once among many other unrelated words about weather and tides', { group: 'target' });
    const weak2 = await addContent(server, big, 'another gadget mentioned once among many other words about mountains and rivers', { group: 'target' });
    const unfiltered = await search(big, { query: 'gadget', limit: 2 });
    expect(unfiltered.every((h) => h.metadata.group === 'noise')).toBe(true);
    const filtered = await search(big, { query: 'gadget', limit: 2, metadataFilter: { group: 'target' } });
    expect(filtered.map((h) => h.contentId).sort()).toEqual([weak1, weak2].sort());
    expectRanked(filtered);
    const one = await search(big, { query: 'gadget', limit: 1, metadataFilter: { group: 'target' } });
    expect(one).toEqual(filtered.slice(0, 1));
  });
});

describe('deterministic order', () => {
  test('ties are broken by chunk id ascending, the same on every call', async () => {
    const kb = await createKb(server, 'Ties');
    for (let i = 0; i < 6; i++) await addContent(server, kb, 'identical zebra crossing text');
    const hits = await search(kb, { query: 'zebra' });
    expect(hits.length).toBe(6);
    expect(new Set(hits.map((h) => h.score)).size).toBe(1);
    const chunkIds = hits.map((h) => h.id);
    expect(chunkIds).toEqual([...chunkIds].sort());
    expect(new Set(chunkIds).size).toBe(6);
    for (let i = 0; i < 3; i++) expect(await search(kb, { query: 'zebra' })).toEqual(hits);
    // A limit cuts the same ordered list.
    expect(await search(kb, { query: 'zebra', limit: 4 })).toEqual(hits.slice(0, 4));
  });
});

describe('text analysis', () => {
  let kb: string;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    kb = await createKb(server, 'Analysis');
    ids.runs = await addContent(server, kb, 'She runs along the river every morning.');
    ids.resume = await addContent(server, kb, 'Send your résumé to the hiring manager.');
    ids.upper = await addContent(server, kb, 'THE QUARTERLY BUDGET IS FINAL.');
  });

  const cases: [string, string][] = [
    ['Running', 'runs'],
    ['run', 'runs'],
    ['RIVERS', 'runs'],
    ['resume', 'resume'],
    ['Résumé', 'resume'],
    ['RESUMES', 'resume'],
    ['quarterly budgets', 'upper'],
    ['Budget', 'upper'],
  ];
  for (const [query, key] of cases) {
    test(`"${query}" finds the "${key}" text`, async () => {
      const hits = await search(kb, { query });
      expect(hits.map((h) => h.contentId)).toEqual([ids[key]!]);
    });
  }

  test('surrounding whitespace in the query is ignored', async () => {
    expect((await search(kb, { query: '   budget   ' })).map((h) => h.contentId)).toEqual([ids.upper!]);
  });
});

describe('index statistics follow deletes and updates', () => {
  test('scores after a delete or an update equal those of a KB that never held the old text', async () => {
    const q = async (kb: string) => (await search(kb, { query: 'otter river' })).map((h) => [h.contentChunk, h.score]);
    const fresh = await createKb(server, 'Stats fresh');
    await addContent(server, fresh, 'otter river swim');
    await addContent(server, fresh, 'otter den');
    const expected = await q(fresh);
    expect(expected.length).toBe(2);

    const deleted = await createKb(server, 'Stats delete');
    await addContent(server, deleted, 'otter river swim');
    await addContent(server, deleted, 'otter den');
    const gone = await addContent(server, deleted, 'beaver dam river river otter otter otter with many other words in it');
    expect((await server.api('DELETE', `${API}/knowledge-bases/${deleted}/contents/${gone}`)).status).toBe(200);
    expect(await q(deleted)).toEqual(expected);

    const updated = await createKb(server, 'Stats update');
    await addContent(server, updated, 'otter river swim');
    const changing = await addContent(server, updated, 'river river river otter something else entirely');
    expect((await server.api('PUT', `${API}/knowledge-bases/${updated}/contents/${changing}?wait=true`, { text: 'otter den' })).status).toBe(200);
    expect(await q(updated)).toEqual(expected);
  });
});
