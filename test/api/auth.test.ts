// Authentication, organization isolation, operations routes and the error envelope, over real HTTP.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, KEY, ORG, OTHER_KEY, OTHER_ORG, InProcessServer } from '../helpers/server';
import { API, expectError, expectNoLeak } from './util';

let server: InProcessServer;
let kb: string; // of ORG
let content: string; // in kb
let foreignKb: string; // of OTHER_ORG
let foreignContent: string; // in foreignKb
const other = { org: OTHER_ORG, key: OTHER_KEY };

beforeAll(async () => {
  server = await InProcessServer.start();
  kb = await createKb(server, 'Mine');
  content = await addContent(server, kb, 'confidential falcon notes', { owner: 'me' });
  const res = await server.api('POST', `${API}/knowledge-bases`, { name: 'Theirs', description: 'foreign', type: 'TEXT_COST_EFFECTIVE' }, other);
  expect(res.status).toBe(201);
  foreignKb = res.body.data.id;
  const c = await server.api(
    'POST',
    `${API}/knowledge-bases/${foreignKb}/contents?wait=true`,
    { text: 'secret falcon plans', metadata: { owner: 'them' } },
    other,
  );
  expect(c.body.data.status).toBe('ready');
  foreignContent = c.body.data.id;
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

interface Route {
  name: string;
  method: string;
  path: () => string;
  body?: () => unknown;
}

const ROUTES: Route[] = [
  { name: 'list KBs', method: 'GET', path: () => `${API}/knowledge-bases` },
  { name: 'create KB', method: 'POST', path: () => `${API}/knowledge-bases`, body: () => ({ name: 'Intruder', type: 'TEXT_HIGH_QUALITY' }) },
  { name: 'get KB', method: 'GET', path: () => `${API}/knowledge-bases/${kb}` },
  { name: 'update KB', method: 'PUT', path: () => `${API}/knowledge-bases/${kb}`, body: () => ({ name: 'Hacked', type: 'TEXT_HIGH_QUALITY' }) },
  { name: 'delete KB', method: 'DELETE', path: () => `${API}/knowledge-bases/${kb}` },
  { name: 'configuration', method: 'GET', path: () => `${API}/knowledge-bases/${kb}/configuration` },
  { name: 'list contents', method: 'GET', path: () => `${API}/knowledge-bases/${kb}/contents` },
  { name: 'create content', method: 'POST', path: () => `${API}/knowledge-bases/${kb}/contents`, body: () => ({ text: 'injected' }) },
  { name: 'get content', method: 'GET', path: () => `${API}/knowledge-bases/${kb}/contents/${content}` },
  { name: 'update content', method: 'PUT', path: () => `${API}/knowledge-bases/${kb}/contents/${content}`, body: () => ({ text: 'overwritten' }) },
  { name: 'delete content', method: 'DELETE', path: () => `${API}/knowledge-bases/${kb}/contents/${content}` },
  { name: 'full-text search', method: 'POST', path: () => `${API}/knowledge-bases/${kb}/search/full-text`, body: () => ({ query: 'falcon' }) },
];

const BAD_AUTH: [string, { org?: string; key?: string } | null][] = [
  ['no headers', null],
  ['key header missing', { org: ORG }],
  ['organization header missing', { key: KEY }],
  ['wrong key', { org: ORG, key: 'not-the-key' }],
  ["another org's valid key with this org's id", { org: ORG, key: OTHER_KEY }],
  ["this org's key with another org's id", { org: OTHER_ORG, key: KEY }],
  ['unknown organization', { org: 'org_nobody', key: KEY }],
  ['empty header values', { org: '', key: '' }],
  ['key with a different case', { org: ORG, key: KEY.toUpperCase() }],
  ['key with a suffix', { org: ORG, key: `${KEY}x` }],
  ['key that is a prefix', { org: ORG, key: KEY.slice(0, -1) }],
];

/** The state every rejected request must leave untouched. */
async function snapshot() {
  const kbs = await server.api('GET', `${API}/knowledge-bases`);
  const item = await server.api('GET', `${API}/knowledge-bases/${kb}/contents/${content}`);
  const list = await server.api('GET', `${API}/knowledge-bases/${kb}/contents`);
  expect(item.status).toBe(200);
  return { kbs: kbs.body, item: item.body, total: list.body.total };
}

describe('401 UNAUTHORIZED on every /api/v1 route', () => {
  for (const route of ROUTES) {
    test(route.name, async () => {
      const before = await snapshot();
      for (const [label, auth] of BAD_AUTH) {
        const res = await server.api(route.method, route.path(), route.body?.(), auth);
        try {
          expectError(res, 401, 'UNAUTHORIZED');
        } catch (err) {
          throw new Error(`${route.method} ${route.name} with ${label}: ${res.status} ${JSON.stringify(res.body)}\n${err}`);
        }
        expect(res.body).not.toHaveProperty('data');
      }
      expect(await snapshot()).toEqual(before);
    });
  }

  test('a 401 wins over a bad body, an oversized body, a bad id and bad query parameters', async () => {
    const before = await snapshot();
    const cases: [string, string, unknown, Record<string, string>?][] = [
      ['POST', `${API}/knowledge-bases`, '{"name": '],
      ['POST', `${API}/knowledge-bases`, { name: '', type: 'NOPE', extra: 1 }],
      ['PUT', `${API}/knowledge-bases/${kb}`, '{not json'],
      ['PUT', `${API}/knowledge-bases/${kb}`, { name: 'x', type: 'TEXT_COST_EFFECTIVE' }],
      ['POST', `${API}/knowledge-bases/${kb}/contents`, { text: '' }],
      ['POST', `${API}/knowledge-bases/${kb}/contents`, { text: 'x'.repeat(13 * 1024 * 1024) }],
      ['POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: '', semanticWeight: 2 }],
      ['GET', `${API}/knowledge-bases/${kb}/contents?limit=1000&page=0`, undefined],
      ['GET', `${API}/knowledge-bases/not-an-id`, undefined],
      ['GET', `${API}/knowledge-bases/${foreignKb}`, undefined],
      ['GET', `${API}/no-such-route`, undefined],
    ];
    for (const [method, path, body] of cases) {
      for (const auth of [null, { org: ORG, key: 'wrong' }]) {
        const res = await server.api(method, path, body, auth);
        try {
          expectError(res, 401, 'UNAUTHORIZED');
        } catch (err) {
          throw new Error(`${method} ${path} with ${JSON.stringify(auth)}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}\n${err}`);
        }
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  test('the header names are case-insensitive (HTTP headers)', async () => {
    const res = await server.api('GET', `${API}/knowledge-bases/${kb}`, undefined, null, { 'X-Service-Api-Key': KEY, 'X-Service-Organization-Id': ORG });
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(kb);
  });
});

describe('organization isolation', () => {
  const kbPath = () => `${API}/knowledge-bases/${foreignKb}`;

  test("another org's KB is 404 on get, put, delete, configuration, contents and search — and stays intact", async () => {
    const theirsBefore = await server.api('GET', kbPath(), undefined, other);
    expect(theirsBefore.status).toBe(200);
    const calls: [string, string, unknown][] = [
      ['GET', kbPath(), undefined],
      ['PUT', kbPath(), { name: 'Hijacked', type: 'TEXT_COST_EFFECTIVE' }],
      ['DELETE', kbPath(), undefined],
      ['GET', `${kbPath()}/configuration`, undefined],
      ['GET', `${kbPath()}/contents`, undefined],
      ['POST', `${kbPath()}/contents`, { text: 'planted falcon' }],
      ['POST', `${kbPath()}/search/full-text`, { query: 'falcon' }],
    ];
    for (const [method, path, body] of calls) {
      const res = await server.api(method, path, body);
      try {
        expectError(res, 404, 'NOT_FOUND');
      } catch (err) {
        throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}\n${err}`);
      }
      expect(JSON.stringify(res.body)).not.toContain('Theirs');
    }
    const theirsAfter = await server.api('GET', kbPath(), undefined, other);
    expect(theirsAfter.body).toEqual(theirsBefore.body);
    const theirContents = await server.api('GET', `${kbPath()}/contents`, undefined, other);
    expect(theirContents.body.total).toBe(1);
  });

  test("a PUT with the wrong type on another org's KB is 404, not KB_TYPE_IMMUTABLE (existence is not revealed)", async () => {
    const res = await server.api('PUT', kbPath(), { name: 'x', type: 'TEXT_HIGH_QUALITY' });
    expectError(res, 404, 'NOT_FOUND');
  });

  test("the 404 for another org's KB is identical to the 404 for a KB that does not exist", async () => {
    const foreign = await server.api('GET', kbPath());
    const missing = await server.api('GET', `${API}/knowledge-bases/kb_${'0'.repeat(16)}${'b'.repeat(12)}`);
    expect(foreign.status).toBe(missing.status);
    expect(foreign.body).toEqual(missing.body);
  });

  test("another org's KB is not listed, and ours is not listed for them", async () => {
    const mine = await server.api('GET', `${API}/knowledge-bases`);
    expect(mine.body.data.map((k: { id: string }) => k.id)).not.toContain(foreignKb);
    expect(mine.body.data.map((k: { id: string }) => k.id)).toContain(kb);
    const theirs = await server.api('GET', `${API}/knowledge-bases`, undefined, other);
    expect(theirs.body.data.map((k: { id: string }) => k.id)).toContain(foreignKb);
    expect(theirs.body.data.map((k: { id: string }) => k.id)).not.toContain(kb);
  });

  test("content of another org's KB is 404 on get, put and delete, and stays intact", async () => {
    const p = `${API}/knowledge-bases/${foreignKb}/contents/${foreignContent}`;
    expectError(await server.api('GET', p), 404, 'NOT_FOUND');
    expectError(await server.api('PUT', p, { text: 'overwritten by ORG' }), 404, 'NOT_FOUND');
    expectError(await server.api('DELETE', p), 404, 'NOT_FOUND');
    // Pairing our KB id with their content id does not reach it either.
    expectError(await server.api('GET', `${API}/knowledge-bases/${kb}/contents/${foreignContent}`), 404, 'NOT_FOUND');
    expectError(await server.api('DELETE', `${API}/knowledge-bases/${kb}/contents/${foreignContent}`), 404, 'NOT_FOUND');
    const theirs = await server.api('GET', p, undefined, other);
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.contentChunk).toBe('secret falcon plans');
  });

  test('search never crosses organizations', async () => {
    const mine = await server.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: 'falcon' });
    expect(mine.body.data.map((h: { contentId: string }) => h.contentId)).toEqual([content]);
    const theirs = await server.api('POST', `${API}/knowledge-bases/${foreignKb}/search/full-text`, { query: 'falcon' }, other);
    expect(theirs.body.data.map((h: { contentId: string }) => h.contentId)).toEqual([foreignContent]);
  });
});

describe('operations routes and unknown routes', () => {
  test('/health answers 200 without auth', async () => {
    const res = await server.api('GET', '/health', undefined, null);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
  });

  test('/ready answers 200 without auth once recovered', async () => {
    const res = await server.api('GET', '/ready', undefined, null);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
  });

  test('/health and /ready ignore bad credentials', async () => {
    for (const path of ['/health', '/ready']) {
      const res = await server.api('GET', path, undefined, { org: ORG, key: 'wrong' });
      expect(res.status).toBe(200);
    }
  });

  test('unknown routes → 404 NOT_FOUND envelope', async () => {
    const cases: [string, string, ({ org?: string; key?: string } | null)?][] = [
      ['GET', '/nope', null],
      ['GET', '/api/v2/knowledge-bases', null],
      ['GET', `${API}/nope`],
      ['GET', `${API}/knowledge-bases/${kb}/contents/${content}/chunks`],
      ['POST', `${API}/knowledge-bases/${kb}/search/fuzzy`],
    ];
    for (const [method, path, auth] of cases) {
      const res = await server.api(method, path, method === 'GET' ? undefined : { query: 'x' }, auth === undefined ? { org: ORG, key: KEY } : auth);
      try {
        expectError(res, 404, 'NOT_FOUND');
      } catch (err) {
        throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}\n${err}`);
      }
    }
  });

  test('a known route with a wrong method → 405 METHOD_NOT_ALLOWED envelope with Allow', async () => {
    const res = await server.api('PATCH', `${API}/knowledge-bases/${kb}`, { name: 'x' });
    expectError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toBe('DELETE, GET, HEAD, PUT');
  });
});

describe('error bodies', () => {
  test('every error is the envelope, with no stack trace, file path or library internals', async () => {
    const responses = [
      await server.api('GET', `${API}/knowledge-bases`, undefined, null),
      await server.api('GET', `${API}/knowledge-bases/${foreignKb}`),
      await server.api('POST', `${API}/knowledge-bases`, '{"broken'),
      await server.api('POST', `${API}/knowledge-bases`, { name: 1, type: 2, extra: [3] }),
      await server.api('POST', `${API}/knowledge-bases`, 'name=x', undefined, { 'content-type': 'text/plain' }),
      await server.api('POST', `${API}/knowledge-bases`, '\u0000\u0001binary', undefined, { 'content-type': 'application/octet-stream' }),
      await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: 'x', metadata: { deep: { deeper: { deepest: 1 } } } }),
      await server.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: 'x', limit: 'many' }),
      await server.api('GET', `${API}/knowledge-bases/${kb}/contents?page=%ZZ`),
      await server.api('GET', `${API}/knowledge-bases/%E0%A4%A`),
      await server.api('PUT', `${API}/knowledge-bases/${kb}`, { name: 'Mine', type: 'TEXT_AND_MEDIA_HIGH_QUALITY' }),
      await server.api('GET', '/definitely/not/here', undefined, null),
    ];
    for (const res of responses) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(typeof res.body).toBe('object');
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toMatch(/^[A-Z][A-Z_]+$/);
      expect(typeof res.body.error.message).toBe('string');
      expectNoLeak(JSON.stringify(res.body));
      expect(res.headers.get('content-type') ?? '').toContain('application/json');
    }
    // The KB survived the rejected PUT unchanged.
    const mine = await server.api('GET', `${API}/knowledge-bases/${kb}`);
    expect(mine.body.data.name).toBe('Mine');
  });
});
