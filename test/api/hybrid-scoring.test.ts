// Hybrid scoring with a real sentence-transformer (all-MiniLM-L6-v2) over real HTTP:
// - a lone weak keyword match is not lifted above the page the meaning points to just because it
//   is the only keyword match (decisions.md, Search);
// - with items of several chunks (item-aware full-text scores), semanticWeight 0 and 1 still rank
//   exactly as the full-text and semantic endpoints, and each hit's leg scores are the endpoints'.
// The model comes from ../shared/models (EMBEDDING_MODEL_DIR) until the shipped int8 export
// serves by default; either way TEXT_HIGH_QUALITY is served by MiniLM.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { addContent, createKb, InProcessServer } from '../helpers/server';
import { API, expectSearchAnswer } from './util';

const MODELS = join(import.meta.dir, '..', '..', '..', 'shared', 'models');

let server: InProcessServer;

beforeAll(async () => {
  server = await InProcessServer.start({ env: { EMBEDDING_MODEL_DIR: MODELS, HIGH_QUALITY_MODEL: 'auto' } });
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

type Mode = 'full-text' | 'semantic' | 'hybrid';

async function search(kb: string, mode: Mode, body: Record<string, unknown>): Promise<any[]> {
  const res = await server.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  expectSearchAnswer(res.body, mode);
  return res.body.data;
}

test('the knowledge bases are served by all-MiniLM-L6-v2', async () => {
  const kb = await createKb(server, 'Model check');
  const res = await server.api('GET', `${API}/knowledge-bases/${kb}/configuration`);
  expect(res.status).toBe(200);
  expect(JSON.stringify(res.body)).toContain('all-MiniLM-L6-v2');
});

describe('a lone weak keyword match is not lifted by being the only one', () => {
  const PAGES = {
    refunds: 'Refunds: if a product arrives damaged, contact support and you get your money back within 30 days.',
    expenses: 'Expense claims for travel: employees submit hotel, flight and meal receipts through the finance portal and are paid back with the next salary.',
    vacation: 'Vacation policy: full-time staff have 25 days of paid leave per year; requests go to your manager two weeks ahead.',
    password: "Password reset: open the login page, choose 'Forgot password' and follow the link sent to your email.",
    hours: 'Office hours: the office is open Monday to Friday from 9am to 5pm.',
    shipping: 'Shipping: orders leave the warehouse within two working days; tracking numbers arrive by email.',
    security: 'Security: report suspicious emails to the security team and never share your password with anyone.',
  };
  const ids = {} as Record<keyof typeof PAGES, string>;
  let kb: string;
  const query = 'getting reimbursed for a business trip';

  beforeAll(async () => {
    kb = await createKb(server, 'Handbook');
    for (const [key, text] of Object.entries(PAGES)) ids[key as keyof typeof PAGES] = await addContent(server, kb, text);
  });

  test('preconditions: "get" in the refund page is the only keyword match; by meaning the expense-claims page comes first', async () => {
    expect((await search(kb, 'full-text', { query })).map((h) => h.contentId)).toEqual([ids.refunds]);
    expect((await search(kb, 'semantic', { query }))[0].contentId).toBe(ids.expenses);
  });

  test('hybrid at the default weight puts the expense-claims page first, above the refund page', async () => {
    const hits = await search(kb, 'hybrid', { query });
    const order = hits.map((h) => h.contentId);
    expect(order[0]).toBe(ids.expenses);
    expect(order.indexOf(ids.refunds)).toBeGreaterThan(0);
    // The refund page's keyword evidence stays small: one common word of a four-word query.
    const refund = hits.find((h) => h.contentId === ids.refunds);
    expect(refund.score - 0.5 * refund.semanticScore).toBeLessThan(0.1);
  });

  test('the endpoints still win at the extremes: weight 0 is the full-text answer, 1 the semantic one', async () => {
    expect((await search(kb, 'hybrid', { query, semanticWeight: 0 })).map((h) => h.id)).toEqual((await search(kb, 'full-text', { query })).map((h) => h.id));
    expect((await search(kb, 'hybrid', { query, semanticWeight: 1 })).map((h) => h.id)).toEqual((await search(kb, 'semantic', { query })).map((h) => h.id));
  });
});

describe('items of several chunks (item-aware full-text scores)', () => {
  let kb: string;
  let small: InProcessServer;
  // Paragraphs of about 150 characters; with 150-character chunks each item has several chunks.
  const ITEMS = [
    'Solar panels on the warehouse roof. The installation covers four thousand square metres and was finished last spring.\n\nOutput peaks at noon in June, when the panels deliver about eight hundred kilowatts to the grid.\n\nMaintenance crews clean the glass twice a year and replace damaged cells.',
    'Heat pumps in the office building. Two air-source units replaced the old gas boiler in the winter of the renovation.\n\nThey heat the floors in winter and cool the meeting rooms in summer, using a third of the energy.\n\nA service contract covers filters, refrigerant checks and the outdoor fans.',
    'Bicycle parking. Covered racks for sixty bicycles stand behind the main entrance, next to the showers.\n\nStaff who cycle to work receive a yearly allowance for repairs, lights and rain gear.\n\nThe racks are cleared of abandoned bicycles every autumn.',
    'Canteen menu. Lunch is served from noon until two; the menu changes weekly and always includes a vegetarian dish.\n\nCoffee, tea and fruit are free all day on every floor.\n\nFeedback about the food goes to the facilities team.',
  ];

  beforeAll(async () => {
    small = await InProcessServer.start({ env: { EMBEDDING_MODEL_DIR: MODELS, HIGH_QUALITY_MODEL: 'auto', CHUNK_SIZE: '150', CHUNK_OVERLAP: '15' } });
    const res = await small.api('POST', '/api/v1/knowledge-bases', { name: 'Facilities', type: 'TEXT_HIGH_QUALITY' });
    kb = res.body.data.id;
    for (const text of ITEMS) {
      const add = await small.api('POST', `${API}/knowledge-bases/${kb}/contents?wait=true`, { text });
      expect(add.body.data.status).toBe('ready');
    }
  });

  afterAll(async () => {
    await small?.stop();
    small?.cleanup();
  });

  async function on(mode: Mode, body: Record<string, unknown>): Promise<any[]> {
    const res = await small.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, body);
    expect(res.status).toBe(200);
    return res.body.data;
  }

  const QUERIES = ['how much energy do the solar panels deliver', 'heating and cooling', 'where do bicycles park', 'free coffee', 'cleaning twice a year'];

  test('every item has several chunks', async () => {
    const hits = await on('semantic', { query: 'building', limit: 100 });
    const perItem = new Map<string, number>();
    for (const h of hits) perItem.set(h.contentId, (perItem.get(h.contentId) ?? 0) + 1);
    expect(perItem.size).toBe(ITEMS.length);
    for (const n of perItem.values()) expect(n).toBeGreaterThanOrEqual(2);
  });

  test('semanticWeight 0 and 1 rank exactly as full-text and semantic, at several limits', async () => {
    for (const query of QUERIES) {
      for (const limit of [1, 3, 10, 100]) {
        const ft = await on('full-text', { query, limit });
        const sem = await on('semantic', { query, limit });
        expect(ft.length).toBeGreaterThan(0);
        expect((await on('hybrid', { query, limit, semanticWeight: 0 })).map((h) => h.id)).toEqual(ft.map((h) => h.id));
        expect((await on('hybrid', { query, limit, semanticWeight: 1 })).map((h) => h.id)).toEqual(sem.map((h) => h.id));
      }
    }
  });

  test("each hybrid hit's leg scores are the scores the endpoints give the chunk", async () => {
    for (const query of QUERIES) {
      const ft = new Map((await on('full-text', { query, limit: 100 })).map((h) => [h.id, h.score]));
      const sem = new Map((await on('semantic', { query, limit: 100 })).map((h) => [h.id, h.score]));
      for (const semanticWeight of [0.3, 0.5, 0.8]) {
        for (const h of await on('hybrid', { query, limit: 100, semanticWeight })) {
          expect(h.semanticScore).toBe(sem.get(h.id));
          expect(h.fullTextScore).toBe(ft.get(h.id) ?? 0);
        }
      }
    }
  });
});
