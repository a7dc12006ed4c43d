// POST /knowledge-bases/:id/search/semantic over real HTTP: paraphrases that keyword search misses,
// hit shape and order, limits, metadata filters inside the leg, validation and tenancy, updates and
// deletes, vectors kept across restarts (graceful and kill -9), and the HTTP embedding provider
// (a failing endpoint → 502 EMBEDDING_FAILED / failed content; a fake endpoint → end to end).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, OTHER_KEY, OTHER_ORG, InProcessServer, type RunningServer, TestServer } from '../helpers/server';
import { API, expectError, expectNoLeak, expectSearchAnswer, expectValidation, unknownId } from './util';

let server: RunningServer;

beforeAll(async () => {
  server = await InProcessServer.start();
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

const searchPath = (kb: string, mode = 'semantic') => `${API}/knowledge-bases/${kb}/search/${mode}`;

async function search(kb: string, body: Record<string, unknown>, mode = 'semantic', on: RunningServer = server): Promise<any[]> {
  const res = await on.api('POST', searchPath(kb, mode), body);
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { success: true } });
  expect(Array.isArray(res.body.data)).toBe(true);
  expectSearchAnswer(res.body, mode as 'semantic' | 'full-text' | 'hybrid');
  return res.body.data;
}

const semantic = (kb: string, body: Record<string, unknown>) => search(kb, body, 'semantic');
const fullText = (kb: string, body: Record<string, unknown>) => search(kb, body, 'full-text');

/** Score descending, chunk id ascending on equal scores. */
function expectRanked(hits: any[]): void {
  for (let i = 1; i < hits.length; i++) {
    const [a, b] = [hits[i - 1], hits[i]];
    expect(a.score > b.score || (a.score === b.score && a.id < b.id)).toBe(true);
  }
}

/** A comparable picture of a result list: chunk, content, text and score of every hit. */
const snapshot = (hits: any[]) => hits.map((h) => ({ id: h.id, contentId: h.contentId, contentChunk: h.contentChunk, score: h.score, metadata: h.metadata }));

// --- the main knowledge base: short texts about different things, plus keyword distractors --------

const DOCS = {
  refund: {
    text: 'Refunds: purchases can be returned within 30 days for reimbursement to the original payment method.',
    metadata: { topic: 'refund', group: 'a', tags: ['billing'] },
  },
  hours: { text: 'The office is open Monday to Friday from 9am to 5pm.', metadata: { topic: 'hours', group: 'b', tags: ['office'] } },
  cat: { text: 'A cat sat on the mat.', metadata: { topic: 'cat', group: 'a', tags: ['pets'] } },
  car: { text: 'Our garage repairs cars: oil changes, brake replacement and engine tune-ups.', metadata: { topic: 'car', group: 'a', tags: ['auto'] } },
  building: { text: 'Building maintenance is scheduled for Sunday night.', metadata: { topic: 'building', group: 'b', tags: ['office'] } },
  rugsale: { text: 'Handmade rugs are on sale, resting prices at half.', metadata: { topic: 'rugsale', group: 'b', tags: ['shop'] } },
  rugclean: { text: 'Rug cleaning service: we wash rugs and carpets.', metadata: { topic: 'rugclean', group: 'a', tags: ['shop', 'cleaning'] } },
  money: { text: 'Money back guarantee applies to electronics only.', metadata: { topic: 'money', group: 'b', tags: ['billing', 'legal'] } },
  weather: { text: 'Heavy rain and thunderstorms are expected tomorrow afternoon.', metadata: { topic: 'weather', group: 'b', tags: [] as string[] } },
} as const;
type DocKey = keyof typeof DOCS;

let kb: string;
const ids = {} as Record<DocKey, string>;

beforeAll(async () => {
  kb = await createKb(server, 'Meaning');
  for (const [key, doc] of Object.entries(DOCS)) ids[key as DocKey] = await addContent(server, kb, doc.text, doc.metadata);
});

// Queries that share no (or only misleading) keywords with the document they mean.
const PARAPHRASES: { query: string; expected: DocKey }[] = [
  { query: 'how do I get my money back', expected: 'refund' }, // keywords point at the guarantee
  { query: 'automobile maintenance', expected: 'car' }, // keywords point at the building
  { query: 'kitten resting on a rug', expected: 'cat' }, // keywords point at the rug shops
  { query: 'feline sleeping on a carpet', expected: 'cat' },
  { query: 'vehicle servicing', expected: 'car' },
  { query: 'is a storm coming', expected: 'weather' }, // no keyword at all
];

describe('paraphrases and synonyms', () => {
  for (const { query, expected } of PARAPHRASES) {
    test(`"${query}": full-text misses the ${expected} text, semantic ranks it first`, async () => {
      const ft = await fullText(kb, { query });
      // Either nothing at all or a different text first.
      expect(ft[0]?.contentId).not.toBe(ids[expected]);
      const hits = await semantic(kb, { query });
      expect(hits.length).toBeGreaterThan(0);
      expect(hits[0].contentId).toBe(ids[expected]);
      expect(hits[0].contentChunk).toBe(DOCS[expected].text);
      expect(hits[0].metadata).toEqual(DOCS[expected].metadata);
      expectRanked(hits);
    });
  }

  test('full-text returns nothing for a query without a shared keyword while semantic does', async () => {
    expect(await fullText(kb, { query: 'is a storm coming' })).toEqual([]);
    const hits = await semantic(kb, { query: 'is a storm coming', limit: 1 });
    expect(hits.map((h) => h.contentId)).toEqual([ids.weather]);
  });

  test('surrounding whitespace in the query does not change the answer', async () => {
    const plain = await semantic(kb, { query: 'automobile maintenance' });
    const padded = await semantic(kb, { query: '   automobile maintenance \n\t' });
    expect(snapshot(padded)).toEqual(snapshot(plain));
  });
});

describe('hit shape and order', () => {
  test('hits carry id (ch_), contentChunk, cosine score in (−1, 1], contentId (ct_) and metadata', async () => {
    const hits = await semantic(kb, { query: 'how do I get my money back', limit: 100 });
    // Every content item here is one short chunk; all of them are candidates of a vector search.
    expect(hits.length).toBe(Object.keys(DOCS).length);
    const byContent = new Map(Object.entries(ids).map(([k, id]) => [id, k as DocKey]));
    const chunkIds = new Set<string>();
    for (const h of hits) {
      expect(h.id).toMatch(/^ch_[0-9a-z]+$/);
      expect(h.id).not.toBe(h.contentId);
      expect(h.contentId).toMatch(/^ct_/);
      expect(typeof h.score).toBe('number');
      expect(Number.isFinite(h.score)).toBe(true);
      expect(h.score).toBeGreaterThan(-1);
      expect(h.score).toBeLessThanOrEqual(1 + 1e-6);
      const key = byContent.get(h.contentId);
      expect(key).toBeDefined();
      expect(h.contentChunk).toBe(DOCS[key!].text);
      expect(h.metadata).toEqual(DOCS[key!].metadata);
      chunkIds.add(h.id);
    }
    expect(chunkIds.size).toBe(hits.length);
    expectRanked(hits);
    // Related text scores clearly above unrelated text.
    expect(hits[0].score).toBeGreaterThan(hits[hits.length - 1].score);
  });

  test('a query equal to a document text scores ≈ 1 for that document', async () => {
    const hits = await semantic(kb, { query: DOCS.cat.text, limit: 1 });
    expect(hits[0].contentId).toBe(ids.cat);
    expect(hits[0].score).toBeCloseTo(1, 4);
  });

  test('the same search twice gives the same answer', async () => {
    const a = await semantic(kb, { query: 'kitten resting on a rug', limit: 100 });
    const b = await semantic(kb, { query: 'kitten resting on a rug', limit: 100 });
    expect(snapshot(b)).toEqual(snapshot(a));
  });

  test('an empty knowledge base answers 200 []', async () => {
    const empty = await createKb(server, 'Empty');
    expect(await semantic(empty, { query: 'anything at all' })).toEqual([]);
  });
});

describe('limit and ties', () => {
  const TWIN = 'Gardening tips: water tomato plants early in the morning.';
  let ties: string;
  const twins: string[] = [];

  beforeAll(async () => {
    ties = await createKb(server, 'Ties');
    const others = [
      'The library closes at eight.',
      'Invoices are sent on the first of the month.',
      'Pack an umbrella for the trip.',
      'Our mascot is a friendly owl.',
      'Passwords must be twelve characters long.',
      'The canteen serves soup on Fridays.',
      'Printer toner is in the supply room.',
      'Team photos are taken in spring.',
      'Parking permits renew every January.',
    ];
    twins.push(await addContent(server, ties, TWIN, { twin: true }));
    for (const text of others.slice(0, 4)) await addContent(server, ties, text);
    twins.push(await addContent(server, ties, TWIN, { twin: true }));
    for (const text of others.slice(4)) await addContent(server, ties, text);
    twins.push(await addContent(server, ties, TWIN, { twin: true }));
  });

  test('defaults to 10', async () => {
    const hits = await semantic(ties, { query: 'office information' });
    expect(hits.length).toBe(10);
    expectRanked(hits);
    expect((await semantic(ties, { query: 'office information', limit: 100 })).length).toBe(12);
  });

  test('is honoured, and a smaller limit is a prefix of a larger one', async () => {
    const all = await semantic(ties, { query: 'library opening times', limit: 100 });
    expect(all.length).toBe(12);
    for (const limit of [1, 3, 7, 12]) {
      const hits = await semantic(ties, { query: 'library opening times', limit });
      expect(hits.length).toBe(limit);
      expect(snapshot(hits)).toEqual(snapshot(all.slice(0, limit)));
    }
  });

  test('equal scores are ordered by chunk id ascending, the same on every call', async () => {
    const hits = await semantic(ties, { query: 'how to care for vegetables in a garden', limit: 5 });
    const top = hits.slice(0, 3);
    expect(top.map((h) => h.contentId).sort()).toEqual([...twins].sort());
    // Identical texts embed to identical vectors: an exact tie.
    expect(top[1].score).toBe(top[0].score);
    expect(top[2].score).toBe(top[0].score);
    const sortedIds = top.map((h) => h.id).sort();
    expect(top.map((h) => h.id)).toEqual(sortedIds);
    expectRanked(hits);
    // A limit that cuts through the tie keeps the lowest chunk ids.
    const cut = await semantic(ties, { query: 'how to care for vegetables in a garden', limit: 2 });
    expect(cut.map((h) => h.id)).toEqual(sortedIds.slice(0, 2));
    const again = await semantic(ties, { query: 'how to care for vegetables in a garden', limit: 5 });
    expect(snapshot(again)).toEqual(snapshot(hits));
  });

  test('limit 100 is accepted', async () => {
    expect((await semantic(ties, { query: 'owl', limit: 100 })).length).toBe(12);
  });

  for (const limit of [0, -1, 101, 1.5, '5', null, true]) {
    test(`limit ${JSON.stringify(limit)} → 400 naming limit`, async () => {
      const res = await server.api('POST', searchPath(ties), { query: 'owl', limit });
      expectValidation(res, 'limit');
    });
  }
});

describe('metadataFilter inside the semantic leg', () => {
  const QUERY = 'kitten resting on a rug';

  test('a filter that excludes the best match returns the best allowed one, in the unfiltered order', async () => {
    const all = await semantic(kb, { query: QUERY, limit: 100 });
    expect(all[0].contentId).toBe(ids.cat);
    const filtered = await semantic(kb, { query: QUERY, limit: 100, metadataFilter: { group: 'b' } });
    const expected = all.filter((h) => h.metadata.group === 'b');
    expect(expected.length).toBeGreaterThan(0);
    expect(snapshot(filtered)).toEqual(snapshot(expected));
    expect(filtered.map((h) => h.contentId)).not.toContain(ids.cat);
    const best = await semantic(kb, { query: QUERY, limit: 1, metadataFilter: { group: 'b' } });
    expect(best.map((h) => h.id)).toEqual([expected[0].id]);
  });

  test('the filter applies before truncation: limit 1 finds the only matching, least similar text', async () => {
    const all = await semantic(kb, { query: QUERY, limit: 100 });
    // The least similar text of all (which one depends on the model), alone under its topic.
    const last = all[all.length - 1];
    expect(last.contentId).not.toBe(all[0].contentId);
    const hits = await semantic(kb, { query: QUERY, limit: 1, metadataFilter: { topic: last.metadata.topic } });
    expect(hits.map((h) => h.contentId)).toEqual([last.contentId]);
    expect(hits[0].score).toBe(last.score);
  });

  test('array values, array filters and several keys', async () => {
    const inArray = await semantic(kb, { query: QUERY, limit: 100, metadataFilter: { tags: 'billing' } });
    expect(inArray.map((h) => h.contentId).sort()).toEqual([ids.refund, ids.money].sort());
    const anyOf = await semantic(kb, { query: QUERY, limit: 100, metadataFilter: { topic: ['car', 'weather', 'nope'] } });
    expect(anyOf.map((h) => h.contentId).sort()).toEqual([ids.car, ids.weather].sort());
    expectRanked(anyOf);
    const both = await semantic(kb, { query: QUERY, limit: 100, metadataFilter: { group: 'a', tags: 'shop' } });
    expect(both.map((h) => h.contentId)).toEqual([ids.rugclean]);
  });

  test('a filter nothing matches → 200 []', async () => {
    expect(await semantic(kb, { query: QUERY, metadataFilter: { topic: 'unicorns' } })).toEqual([]);
    expect(await semantic(kb, { query: QUERY, metadataFilter: { missingKey: 'x' } })).toEqual([]);
  });

  test('an empty filter restricts nothing', async () => {
    const all = await semantic(kb, { query: QUERY, limit: 100 });
    expect(snapshot(await semantic(kb, { query: QUERY, limit: 100, metadataFilter: {} }))).toEqual(snapshot(all));
  });
});

describe('validation, tenancy and authentication', () => {
  const cases: [string, unknown, string][] = [
    ['semanticWeight (a hybrid-only field)', { query: 'cats', semanticWeight: 0.5 }, 'semanticWeight'],
    ['semanticWeight 0', { query: 'cats', semanticWeight: 0 }, 'semanticWeight'],
    ['fusion (a hybrid-only field)', { query: 'cats', fusion: 'rrf' }, 'fusion'],
    ['an unknown field', { query: 'cats', colour: 'blue' }, 'colour'],
    ['an empty query', { query: '' }, 'query'],
    ['a whitespace-only query', { query: '  \n\t ' }, 'query'],
    ['a missing query', { limit: 3 }, 'query'],
    ['a non-string query', { query: 42 }, 'query'],
    ['a query over 4096 characters', { query: 'a'.repeat(4097) }, 'query'],
    ['a non-object metadataFilter', { query: 'cats', metadataFilter: 'topic=cat' }, 'metadataFilter'],
    ['an unknown filter operator', { query: 'cats', metadataFilter: { topic: { $equals: 'cat' } } }, 'metadataFilter'],
  ];
  for (const [label, body, field] of cases) {
    test(`${label} → 400 VALIDATION_ERROR naming '${field}'`, async () => {
      expectValidation(await server.api('POST', searchPath(kb), body), field);
    });
  }

  test('invalid JSON → 400 INVALID_JSON', async () => {
    expectError(await server.api('POST', searchPath(kb), '{"query": '), 400, 'INVALID_JSON');
  });

  test('unknown or malformed knowledge base → 404 NOT_FOUND', async () => {
    expectError(await server.api('POST', searchPath(unknownId('kb')), { query: 'cats' }), 404, 'NOT_FOUND');
    expectError(await server.api('POST', searchPath('not-an-id'), { query: 'cats' }), 404, 'NOT_FOUND');
  });

  test("another organization's knowledge base → 404 NOT_FOUND", async () => {
    const res = await server.api('POST', searchPath(kb), { query: 'cats' }, { org: OTHER_ORG, key: OTHER_KEY });
    expectError(res, 404, 'NOT_FOUND');
  });

  test('without credentials, or with a key of another organization → 401', async () => {
    expectError(await server.api('POST', searchPath(kb), { query: 'cats' }, null), 401, 'UNAUTHORIZED');
    expectError(await server.api('POST', searchPath(kb), { query: 'cats' }, { org: 'org_test' }), 401, 'UNAUTHORIZED');
    expectError(await server.api('POST', searchPath(kb), { query: 'cats' }, { org: 'org_test', key: OTHER_KEY }), 401, 'UNAUTHORIZED');
  });
});

describe('updates and deletes', () => {
  const OLD = 'Refunds are paid back to your card within 30 days.';
  const NEW = 'Penguins live in Antarctica and eat fish.';
  let upd: string;
  let changing: string;
  let museum: string;
  let bakery: string;

  beforeAll(async () => {
    upd = await createKb(server, 'Updates');
    changing = await addContent(server, upd, OLD, { state: 'old' });
    museum = await addContent(server, upd, 'The museum opens at ten in the morning.', { state: 'fixed' });
    bakery = await addContent(server, upd, 'Fresh bread and croissants from the bakery.', { state: 'fixed' });
  });

  test('after PUT ?wait=true the old meaning is gone and the new one is found', async () => {
    const before = await semantic(upd, { query: 'how do I get my money back', limit: 100 });
    expect(before[0].contentId).toBe(changing);
    expect(before[0].contentChunk).toBe(OLD);
    const oldChunk = before[0].id;
    const oldScore = before[0].score;
    const birdsBefore = await semantic(upd, { query: 'arctic seabirds', limit: 100 });
    const birdsBeforeScore = birdsBefore.find((h) => h.contentId === changing).score;

    const res = await server.api('PUT', `${API}/knowledge-bases/${upd}/contents/${changing}?wait=true`, { text: NEW, metadata: { state: 'new' } });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);

    const money = await semantic(upd, { query: 'how do I get my money back', limit: 100 });
    // Exactly one chunk per item: no stale chunk of the old text is left behind.
    expect(money.length).toBe(3);
    expect(money.map((h) => h.id)).not.toContain(oldChunk);
    expect(money.map((h) => h.contentChunk)).not.toContain(OLD);
    const changed = money.find((h) => h.contentId === changing);
    expect(changed.contentChunk).toBe(NEW);
    expect(changed.metadata).toEqual({ state: 'new' });
    expect(changed.score).toBeLessThan(oldScore - 0.1);

    const birds = await semantic(upd, { query: 'arctic seabirds', limit: 100 });
    expect(birds[0].contentId).toBe(changing);
    expect(birds[0].contentChunk).toBe(NEW);
    expect(birds[0].id).not.toBe(oldChunk);
    expect(birds[0].score).toBeGreaterThan(birdsBeforeScore + 0.1);

    // The new metadata is what the filter sees.
    expect(await semantic(upd, { query: 'penguins', metadataFilter: { state: 'old' } })).toEqual([]);
    expect((await semantic(upd, { query: 'penguins', metadataFilter: { state: 'new' } })).map((h) => h.contentId)).toEqual([changing]);
  });

  test('a deleted item is gone from semantic search at once', async () => {
    const before = await semantic(upd, { query: 'where can I buy a baguette', limit: 100 });
    expect(before[0].contentId).toBe(bakery);
    const bakeryChunk = before[0].id;
    const res = await server.api('DELETE', `${API}/knowledge-bases/${upd}/contents/${bakery}`);
    expect(res.status).toBe(200);
    const after = await semantic(upd, { query: 'where can I buy a baguette', limit: 100 });
    expect(after.map((h) => h.contentId)).not.toContain(bakery);
    expect(after.map((h) => h.id)).not.toContain(bakeryChunk);
    expect(after.map((h) => h.contentId).sort()).toEqual([changing, museum].sort());
    // The remaining hits keep their scores.
    for (const h of after) expect(h.score).toBe(before.find((b) => b.id === h.id).score);
  });
});

describe('restart keeps the vectors without re-embedding', () => {
  const QUERIES = ['how do I get my money back', 'kitten resting on a rug', 'automobile maintenance', 'is a storm coming'];

  async function picture(): Promise<unknown> {
    const out: Record<string, unknown> = {};
    for (const query of QUERIES) out[query] = snapshot(await semantic(kb, { query, limit: 100 }));
    out.filtered = snapshot(await semantic(kb, { query: 'kitten resting on a rug', limit: 3, metadataFilter: { group: 'b' } }));
    return out;
  }

  async function expectAllReadyNow(): Promise<void> {
    // The server reports ready: every item is ready already, nothing is re-processed.
    const ready = await server.api('GET', '/ready', undefined, null);
    expect(ready.status).toBe(200);
    if (ready.body.recovery && 'requeued' in ready.body.recovery) expect(ready.body.recovery.requeued).toBe(0);
    for (const [key, id] of Object.entries(ids)) {
      const res = await server.api('GET', `${API}/knowledge-bases/${kb}/contents/${id}`);
      expect(res.status).toBe(200);
      expect({ key, status: res.body.data.status, chunkCount: res.body.data.chunkCount }).toEqual({ key, status: 'ready', chunkCount: 1 });
    }
  }

  test('graceful stop (SIGTERM) and start on the same data directory: identical hits and scores', async () => {
    const before = await picture();
    const dataDir = server.dataDir;
    expect(await server.stop()).toBe(0);
    // Back as a process: the next test crashes it (kill -9).
    server = await TestServer.start({ dataDir });
    await expectAllReadyNow();
    expect(await picture()).toEqual(before);
  });

  test('kill -9 and start on the same data directory: identical hits and scores', async () => {
    const before = await picture();
    const dataDir = server.dataDir;
    if (!(server instanceof TestServer)) throw new Error('kill -9 takes the server process the previous test started');
    await server.kill9();
    server = await TestServer.start({ dataDir });
    await expectAllReadyNow();
    expect(await picture()).toEqual(before);
  });
});

// --- the HTTP embedding provider ------------------------------------------------------------------

const HTTP_DIMS = 8;

/** FNV-1a of a word, for the fake embedding model. */
function fnv(word: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    h ^= word.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Bag of hashed words: texts sharing words point the same way. */
function fakeEmbedding(text: string): number[] {
  const v: number[] = Array.from({ length: HTTP_DIMS }, () => 0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) v[fnv(word) % HTTP_DIMS]! += 1;
  if (!v.some((x) => x !== 0)) v[2] = 1;
  return v;
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

/** A port where nothing listens: bind an ephemeral port, then release it. */
function deadPort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

const httpEnv = (url: string) => ({
  HIGH_QUALITY_MODEL: 'http:test-model',
  EMBEDDING_HTTP_URL: url,
  EMBEDDING_HTTP_DIMENSIONS: String(HTTP_DIMS),
  EMBEDDING_HTTP_RETRIES: '1',
  EMBEDDING_HTTP_TIMEOUT_MS: '500',
});

describe('HTTP embedding provider', () => {
  let port: number;
  let failing: InProcessServer;
  let fake: ReturnType<typeof Bun.serve>;
  const requests: { method: string; path: string; body: any }[] = [];
  let working: InProcessServer;

  beforeAll(async () => {
    port = deadPort();
    fake = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const url = new URL(req.url);
        const body: any = await req.json().catch(() => undefined);
        requests.push({ method: req.method, path: url.pathname, body });
        if (req.method !== 'POST' || url.pathname !== '/embeddings' || !Array.isArray(body?.input)) {
          return Response.json({ error: 'bad request' }, { status: 400 });
        }
        // Reversed on purpose: `index` says which input each vector belongs to.
        const data = (body.input as string[]).map((text, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(text) })).reverse();
        return Response.json({ object: 'list', model: body.model, data });
      },
    });
    // Embedding retries short, so an unreachable endpoint ends in `failed` within the test.
    const failingEnv = { ...httpEnv(`http://127.0.0.1:${port}`), EMBEDDING_RETRY_ATTEMPTS: '2', EMBEDDING_RETRY_BASE_MS: '100' };
    [failing, working] = await Promise.all([
      InProcessServer.start({ env: failingEnv }),
      InProcessServer.start({ env: httpEnv(`http://127.0.0.1:${fake.port}`) }),
    ]);
  });

  afterAll(async () => {
    fake?.stop(true);
    await Promise.all([failing?.stop(), working?.stop()]);
    failing?.cleanup();
    working?.cleanup();
  });

  test('the high-quality type is configured with the HTTP model', async () => {
    const id = await createKb(failing, 'HTTP config', 'TEXT_HIGH_QUALITY');
    const res = await failing.api('GET', `${API}/knowledge-bases/${id}/configuration`);
    expect(res.status).toBe(200);
    expect(res.body.data.embedding).toMatchObject({ provider: 'http', model: 'test-model', dimensions: HTTP_DIMS });
  });

  test('unreachable endpoint: semantic and hybrid search → 502 EMBEDDING_FAILED without internals', async () => {
    const id = await createKb(failing, 'Unreachable', 'TEXT_HIGH_QUALITY');
    for (const [mode, body] of [
      ['semantic', { query: 'anything' }],
      ['hybrid', { query: 'anything' }],
      ['hybrid', { query: 'anything', semanticWeight: 1 }],
    ] as const) {
      const res = await failing.api('POST', searchPath(id, mode), body);
      expectError(res, 502, 'EMBEDDING_FAILED');
      const raw = JSON.stringify(res.body);
      // The deployment's endpoint address is not the client's business.
      expect(raw).not.toContain('127.0.0.1');
      expect(raw).not.toContain(String(port));
      expect(raw).not.toContain('EMBEDDING_HTTP');
    }
  });

  test('unreachable endpoint: full-text (and hybrid at weight 0) still answer', async () => {
    const id = await createKb(failing, 'Unreachable FT', 'TEXT_HIGH_QUALITY');
    expect(await search(id, { query: 'anything' }, 'full-text', failing)).toEqual([]);
    expect(await search(id, { query: 'anything', semanticWeight: 0 }, 'hybrid', failing)).toEqual([]);
    // The other type's model is unaffected: its knowledge bases ingest and search normally.
    const cheap = await createKb(failing, 'Cheap', 'TEXT_COST_EFFECTIVE');
    const item = await addContent(failing, cheap, 'The office is open Monday to Friday from 9am to 5pm.');
    expect((await search(cheap, { query: 'office open' }, 'full-text', failing)).map((h) => h.contentId)).toEqual([item]);
    expect((await search(cheap, { query: 'when can I visit the workplace' }, 'semantic', failing)).map((h) => h.contentId)).toEqual([item]);
  });

  test('unreachable endpoint: added content ends failed (after its retries) with a readable error, found by full-text', async () => {
    const id = await createKb(failing, 'Unreachable ingest', 'TEXT_HIGH_QUALITY');
    const created = await failing.api('POST', `${API}/knowledge-bases/${id}/contents`, { text: 'Penguins live in Antarctica.' });
    expect(created.status).toBe(201);
    const contentId = created.body.data.id;
    let item: any;
    const deadline = performance.now() + 15_000;
    for (;;) {
      const res = await failing.api('GET', `${API}/knowledge-bases/${id}/contents/${contentId}`);
      expect(res.status).toBe(200);
      item = res.body.data;
      if (item.status === 'failed' || item.status === 'ready' || performance.now() > deadline) break;
      await Bun.sleep(50);
    }
    expect(item.status).toBe('failed');
    expect(typeof item.error).toBe('string');
    expect(item.error.length).toBeGreaterThan(0);
    expect(item.error.toLowerCase()).toContain('embed');
    expectNoLeak(JSON.stringify(item));
    expect(item.contentChunk).toBe('Penguins live in Antarctica.');
    // Its chunks were indexed for full-text search all the same (no vectors): found by keyword.
    expect(item.chunkCount).toBe(1);
    expect(item.error).toContain('full-text');
    expect((await search(id, { query: 'penguins' }, 'full-text', failing)).map((h) => h.contentId)).toEqual([contentId]);
  });

  test('fake OpenAI-format endpoint: content becomes ready and semantic search ranks by its vectors', async () => {
    const id = await createKb(working, 'HTTP model', 'TEXT_HIGH_QUALITY');
    // Words in distinct hash buckets: banana/date, orange/lime, fig/peach.
    const texts = { bd: 'banana date', ol: 'orange lime', fp: 'fig peach' };
    const items: Record<string, string> = {};
    for (const [k, text] of Object.entries(texts)) items[k] = await addContent(working, id, text, { k });
    for (const contentId of Object.values(items)) {
      const res = await working.api('GET', `${API}/knowledge-bases/${id}/contents/${contentId}`);
      expect(res.body.data).toMatchObject({ status: 'ready', chunkCount: 1 });
    }
    // The provider spoke the OpenAI format to the configured model.
    const posts = requests.filter((r) => r.method === 'POST' && r.path === '/embeddings');
    expect(posts.length).toBeGreaterThan(0);
    for (const r of posts) expect(r.body.model).toBe('test-model');
    expect(posts.flatMap((r) => r.body.input)).toEqual(expect.arrayContaining(Object.values(texts)));

    for (const [query, first] of [
      ['orange', 'ol'],
      ['lime', 'ol'],
      ['date', 'bd'],
      ['peach', 'fp'],
    ] as const) {
      const hits = await search(id, { query, limit: 100 }, 'semantic', working);
      expect(hits.length).toBe(3);
      expect(hits[0].contentId).toBe(items[first]);
      expectRanked(hits);
      // Scores are the cosine of the model's vectors.
      for (const h of hits) {
        const text = h.contentChunk as string;
        expect(h.score).toBeCloseTo(cosine(fakeEmbedding(query), fakeEmbedding(text)), 5);
      }
    }
    // Queries go through the endpoint too.
    expect(requests.at(-1)!.body.input).toEqual(['peach']);

    // "banana fig" shares one word with "banana date" and one with "fig peach": an exact tie,
    // ordered by chunk id.
    const tie = await search(id, { query: 'banana fig' }, 'semantic', working);
    expect(tie.length).toBe(3);
    expect([tie[0].contentId, tie[1].contentId].sort()).toEqual([items.bd, items.fp].sort());
    expect(tie[1].score).toBe(tie[0].score);
    expect(tie[0].id < tie[1].id).toBe(true);
    expect(tie[2].contentId).toBe(items.ol);
  });
});
