// Bounded answers and tenants: content lists cut long texts, the knowledge-base list is paginated,
// and per-organization quotas refuse writes past them with 403 QUOTA_EXCEEDED, changing nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { orgContext } from '../../src/http/auth';
import { createKb, OTHER_KEY, OTHER_ORG, InProcessServer } from '../helpers/server';
import { API, expectError, expectValidation } from './util';

let server: InProcessServer;
// Search bounds below the defaults (4096 characters, 100 hits).
const QUERY_CHARS = 64;
const SEARCH_LIMIT = 20;

beforeAll(async () => {
  server = await InProcessServer.start({
    env: {
      MAX_QUERY_CHARS: String(QUERY_CHARS),
      MAX_SEARCH_LIMIT: String(SEARCH_LIMIT),
      LIST_TEXT_CHARS: '50',
      MAX_KNOWLEDGE_BASES_PER_ORG: '3',
      MAX_CONTENTS_PER_ORG: '4',
    },
  });
});

afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

describe('bounded lists', () => {
  test('content lists cut texts to LIST_TEXT_CHARS with truncated: true; GET returns the whole text', async () => {
    const kb = await createKb(server, 'Lists');
    const long = '😀'.repeat(20) + 'x'.repeat(100); // 40 code units of pairs, then plain letters
    const short = 'short text';
    const a = (await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: long })).body.data.id;
    const b = (await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: short })).body.data.id;
    const list = await server.api('GET', `${API}/knowledge-bases/${kb}/contents`);
    expect(list.status).toBe(200);
    const [la, lb] = list.body.data;
    expect(la.id).toBe(a);
    expect(la.truncated).toBe(true);
    expect(la.contentChunk).toBe(long.slice(0, 50));
    expect(lb).toMatchObject({ id: b, contentChunk: short, truncated: false });
    // "a" then pairs: code unit 49 is a high surrogate, so a cut at 50 would split a pair.
    const c = (await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: `a${'😀'.repeat(30)}` })).body.data.id;
    const cut = (await server.api('GET', `${API}/knowledge-bases/${kb}/contents?page=2&limit=1`)).body.data[0];
    expect(cut.id).toBe(b);
    const third = (await server.api('GET', `${API}/knowledge-bases/${kb}/contents?page=3&limit=1`)).body.data[0];
    expect(third.id).toBe(c);
    // The cut keeps 49 code units, never half a pair.
    expect(third.contentChunk).toBe(`a${'😀'.repeat(24)}`);
    expect(third.truncated).toBe(true);
    const got = await server.api('GET', `${API}/knowledge-bases/${kb}/contents/${a}`);
    expect(got.body.data.contentChunk).toBe(long);
    expect(got.body.data.truncated).toBeUndefined();
    for (const id of [a, b, c]) expect((await server.api('DELETE', `${API}/knowledge-bases/${kb}/contents/${id}`)).status).toBe(200);
    expect((await server.api('DELETE', `${API}/knowledge-bases/${kb}`)).status).toBe(200);
  });

  test('the knowledge-base list is paginated like the content list, with total', async () => {
    const ids = [await createKb(server, 'P1'), await createKb(server, 'P2'), await createKb(server, 'P3')];
    const all = await server.api('GET', `${API}/knowledge-bases`);
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.data.map((k: any) => k.id)).toEqual(ids);
    const page2 = await server.api('GET', `${API}/knowledge-bases?page=2&limit=2`);
    expect(page2.body).toMatchObject({ success: true, total: 3 });
    expect(page2.body.data.map((k: any) => k.id)).toEqual([ids[2]]);
    expect((await server.api('GET', `${API}/knowledge-bases?page=9&limit=2`)).body.data).toEqual([]);
    for (const bad of ['limit=0', 'limit=101', 'page=0', 'page=x', 'limit=1.5']) {
      expectValidation(await server.api('GET', `${API}/knowledge-bases?${bad}`), bad.split('=')[0]);
    }
    for (const id of ids) await server.api('DELETE', `${API}/knowledge-bases/${id}`);
  });

  test('searches are bounded by MAX_QUERY_CHARS and MAX_SEARCH_LIMIT: 200 at the bound, 400 past it, and the OpenAPI document says so', async () => {
    const kb = await createKb(server, 'Bounds', 'TEXT_COST_EFFECTIVE');
    const added = await server.api('POST', `${API}/knowledge-bases/${kb}/contents?wait=true`, { text: 'alpha beta gamma' });
    expect(added.status).toBe(201);
    for (const mode of ['full-text', 'semantic', 'hybrid']) {
      const search = (body: object) => server.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, body);
      const atQuery = await search({ query: `${'alpha '.repeat(10)}abcd` }); // 64 characters
      expect({ mode, status: atQuery.status }).toEqual({ mode, status: 200 });
      expectValidation(await search({ query: 'a'.repeat(QUERY_CHARS + 1) }), 'query');
      expect({ mode, status: (await search({ query: 'alpha', limit: SEARCH_LIMIT })).status }).toEqual({ mode, status: 200 });
      expectValidation(await search({ query: 'alpha', limit: SEARCH_LIMIT + 1 }), 'limit');
    }
    // With the default bounds (4096, 100) these would pass: the server's own bounds are in force.
    expectValidation(await server.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: 'alpha', limit: 50 }), 'limit');
    const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as any;
    const deref = (node: any): any =>
      typeof node?.$ref === 'string'
        ? node.$ref
            .slice(2)
            .split('/')
            .reduce((at: any, key: string) => at[key], spec)
        : node;
    for (const mode of ['full-text', 'semantic', 'hybrid']) {
      const body = deref(spec.paths[`${API}/knowledge-bases/{id}/search/${mode}`].post.requestBody.content['application/json'].schema);
      const [query, limit] = [deref(body.properties.query), deref(body.properties.limit)];
      expect({ mode, maxLength: query.maxLength, maximum: limit.maximum }).toEqual({ mode, maxLength: QUERY_CHARS, maximum: SEARCH_LIMIT });
      expect(query.description).toContain(`at most ${QUERY_CHARS} characters`);
      expect(limit.description).toContain(`1–${SEARCH_LIMIT} (default 10)`);
    }
    expect((await server.api('DELETE', `${API}/knowledge-bases/${kb}`)).status).toBe(200);
  });
});

describe('per-organization quotas', () => {
  test('knowledge bases past MAX_KNOWLEDGE_BASES_PER_ORG → 403 QUOTA_EXCEEDED, nothing created; other organizations unaffected', async () => {
    const ids = [await createKb(server, 'Q1'), await createKb(server, 'Q2'), await createKb(server, 'Q3')];
    const over = await server.api('POST', `${API}/knowledge-bases`, { name: 'Q4', type: 'TEXT_HIGH_QUALITY' });
    expectError(over, 403, 'QUOTA_EXCEEDED');
    expect(over.body.error.message).toContain('3 knowledge bases');
    expect((await server.api('GET', `${API}/knowledge-bases`)).body.total).toBe(3);
    const other = await server.api('POST', `${API}/knowledge-bases`, { name: 'Theirs', type: 'TEXT_HIGH_QUALITY' }, { org: OTHER_ORG, key: OTHER_KEY });
    expect(other.status).toBe(201);
    // Deleting one frees a place.
    await server.api('DELETE', `${API}/knowledge-bases/${ids[2]}`);
    const again = await server.api('POST', `${API}/knowledge-bases`, { name: 'Q3b', type: 'TEXT_HIGH_QUALITY' });
    expect(again.status).toBe(201);
    for (const id of [ids[0], ids[1], again.body.data.id]) await server.api('DELETE', `${API}/knowledge-bases/${id}`);
  });

  test('content items past MAX_CONTENTS_PER_ORG (across its knowledge bases) → 403, for text and file uploads alike', async () => {
    const [k1, k2] = [await createKb(server, 'C1'), await createKb(server, 'C2')];
    for (const [kb, text] of [
      [k1, 'one'],
      [k1, 'two'],
      [k2, 'three'],
      [k2, 'four'],
    ] as const) {
      expect((await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text })).status).toBe(201);
    }
    expectError(await server.api('POST', `${API}/knowledge-bases/${k1}/contents`, { text: 'five' }), 403, 'QUOTA_EXCEEDED');
    const form = new FormData();
    form.append('file', new File(['five as a file'], 'five.txt', { type: 'text/plain' }));
    const upload = await fetch(`${server.url}${API}/knowledge-bases/${k2}/contents/file`, {
      method: 'POST',
      headers: { 'x-service-organization-id': 'org_test', 'x-service-api-key': 'test-key-0123456789' },
      body: form,
    });
    expect(upload.status).toBe(403);
    expect(((await upload.json()) as any).error.code).toBe('QUOTA_EXCEEDED');
    const totals = await Promise.all([k1, k2].map(async (kb) => (await server.api('GET', `${API}/knowledge-bases/${kb}/contents`)).body.total));
    expect(totals).toEqual([2, 2]);
    // Updates are not new items: still allowed at the quota.
    const first = (await server.api('GET', `${API}/knowledge-bases/${k1}/contents`)).body.data[0].id;
    expect((await server.api('PUT', `${API}/knowledge-bases/${k1}/contents/${first}`, { text: 'one, revised' })).status).toBe(200);
    for (const kb of [k1, k2]) await server.api('DELETE', `${API}/knowledge-bases/${kb}`);
  });
});

test('orgContext: a route never runs for a request whose credentials were not verified (whatever its path)', async () => {
  let ran = false;
  const app = new Elysia().use(orgContext).get('/api/v1/probe', ({ org }) => {
    ran = true;
    return org;
  });
  const res = await app.handle(
    new Request('http://localhost/api/v1/probe', { headers: { 'x-service-organization-id': 'org_any', 'x-service-api-key': 'anything' } }),
  );
  expect(res.status).toBe(401);
  expect(ran).toBe(false);
});
