// Content endpoints (text only) over real HTTP: create, get, list with pagination, update, delete,
// validation, and the byte limits (a second server with small limits).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { addContent, createKb, InProcessServer } from '../helpers/server';
import { API, expectError, expectIsoMs, expectNamesField, expectValidation, unknownId } from './util';

let server: InProcessServer;
let small: InProcessServer; // MAX_TEXT_BYTES=1000, MAX_JSON_BODY_BYTES=2048

beforeAll(async () => {
  [server, small] = await Promise.all([InProcessServer.start(), InProcessServer.start({ env: { MAX_TEXT_BYTES: '1000', MAX_JSON_BODY_BYTES: '2048' } })]);
});

afterAll(async () => {
  await Promise.all([server?.stop(), small?.stop()]);
  server?.cleanup();
  small?.cleanup();
});

const contents = (kb: string) => `${API}/knowledge-bases/${kb}/contents`;

async function getContent(s: InProcessServer, kb: string, id: string) {
  const res = await s.api('GET', `${contents(kb)}/${id}`);
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  return res.body.data;
}

async function search(s: InProcessServer, kb: string, query: string, extra: Record<string, unknown> = {}) {
  const res = await s.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query, ...extra });
  expect(res.status).toBe(200);
  return res.body.data as any[];
}

async function total(s: InProcessServer, kb: string): Promise<number> {
  const res = await s.api('GET', contents(kb));
  expect(res.status).toBe(200);
  return res.body.total;
}

describe('POST /knowledge-bases/:id/contents', () => {
  test('201 with { success, data: { id } } and a ct_ id; the record is readable at once', async () => {
    const kb = await createKb(server, 'Create');
    const res = await server.api('POST', contents(kb), { text: 'Refunds are issued within 14 days.' });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data)).toEqual(['id']);
    expect(res.body.data.id).toMatch(/^ct_[0-9a-z]+$/);
    const item = await getContent(server, kb, res.body.data.id);
    expect(item.id).toBe(res.body.data.id);
    expect(item.contentChunk).toBe('Refunds are issued within 14 days.');
    expect(['pending', 'processing', 'ready']).toContain(item.status);
  });

  test('?wait=true answers once the item is ready', async () => {
    const kb = await createKb(server, 'Wait');
    const res = await server.api('POST', `${contents(kb)}?wait=true`, { text: 'waiting for the heron' });
    expect(res.status).toBe(201);
    expect(res.body.data.id).toMatch(/^ct_/);
    expect(res.body.data.status).toBe('ready');
    const item = await getContent(server, kb, res.body.data.id);
    expect(item.status).toBe('ready');
    expect(item.chunkCount).toBeGreaterThanOrEqual(1);
    expect((await search(server, kb, 'heron')).map((h) => h.contentId)).toEqual([res.body.data.id]);
  });

  test('?wait=maybe → 400 and nothing is created', async () => {
    const kb = await createKb(server, 'Wait bad');
    const res = await server.api('POST', `${contents(kb)}?wait=maybe`, { text: 'x' });
    expectValidation(res, 'wait');
    expect(await total(server, kb)).toBe(0);
  });

  test('get: contentChunk is the text, metadata {} when none given, status, chunkCount, source, timestamps', async () => {
    const kb = await createKb(server, 'Get');
    const text = 'Línea uno — with unicode ✓ and\nnewlines\tand tabs.  ';
    const id = await addContent(server, kb, text);
    const item = await getContent(server, kb, id);
    expect(item.id).toBe(id);
    expect(item.contentChunk).toBe(text);
    expect(item.metadata).toEqual({});
    expect(item.status).toBe('ready');
    expect(item.chunkCount).toBeGreaterThanOrEqual(1);
    expect(item.source).toBe('text');
    expectIsoMs(item.createdAt);
    expectIsoMs(item.updatedAt);
    expect(item).not.toHaveProperty('error');
  });

  test('metadata is stored and returned as given (strings, numbers, booleans, string arrays)', async () => {
    const kb = await createKb(server, 'Meta');
    const metadata = { team: 'billing', year: 2026, ratio: 0.5, negative: -3, public: true, hidden: false, tags: ['faq', 'refund'], none: [] as string[] };
    const id = await addContent(server, kb, 'metadata carrier', metadata);
    expect((await getContent(server, kb, id)).metadata).toEqual(metadata);
  });

  test('metadata limits at their edges are accepted: 64 keys, 64-character key, 1024-character value', async () => {
    const kb = await createKb(server, 'Meta edges');
    const metadata: Record<string, string> = {};
    for (let i = 0; i < 63; i++) metadata[`k${i}`] = 'v';
    metadata['K'.repeat(64)] = 'w'.repeat(1024);
    const id = await addContent(server, kb, 'edges', metadata);
    expect((await getContent(server, kb, id)).metadata).toEqual(metadata);
  });

  test('content in an unknown KB → 404 NOT_FOUND', async () => {
    for (const kb of [unknownId('kb'), 'garbage']) {
      expectError(await server.api('POST', contents(kb), { text: 'orphan' }), 404, 'NOT_FOUND');
      expectError(await server.api('GET', contents(kb)), 404, 'NOT_FOUND');
      expectError(await server.api('GET', `${contents(kb)}/${unknownId('ct')}`), 404, 'NOT_FOUND');
      expectError(await server.api('PUT', `${contents(kb)}/${unknownId('ct')}`, { text: 'x' }), 404, 'NOT_FOUND');
      expectError(await server.api('DELETE', `${contents(kb)}/${unknownId('ct')}`), 404, 'NOT_FOUND');
    }
  });

  test("unknown, malformed, or another KB's content id → 404 NOT_FOUND", async () => {
    const kbA = await createKb(server, 'A');
    const kbB = await createKb(server, 'B');
    const inA = await addContent(server, kbA, 'belongs to A');
    for (const id of [unknownId('ct'), 'ct_bad', 'x', kbA]) {
      expectError(await server.api('GET', `${contents(kbA)}/${id}`), 404, 'NOT_FOUND');
    }
    // The item of KB A is not reachable through KB B.
    expectError(await server.api('GET', `${contents(kbB)}/${inA}`), 404, 'NOT_FOUND');
    expectError(await server.api('PUT', `${contents(kbB)}/${inA}`, { text: 'hijack' }), 404, 'NOT_FOUND');
    expectError(await server.api('DELETE', `${contents(kbB)}/${inA}`), 404, 'NOT_FOUND');
    expect((await getContent(server, kbA, inA)).contentChunk).toBe('belongs to A');
  });
});

describe('POST contents validation → 400 VALIDATION_ERROR, nothing created', () => {
  const manyKeys: Record<string, string> = {};
  for (let i = 0; i < 65; i++) manyKeys[`key${i}`] = 'v';
  const rows: [string, unknown, string][] = [
    ['empty text', { text: '' }, 'text'],
    ['blank text', { text: ' \n\t ' }, 'text'],
    ['missing text', { metadata: { a: 'b' } }, 'text'],
    ['text that is a number', { text: 12 }, 'text'],
    ['text that is null', { text: null }, 'text'],
    ['unknown field', { text: 'ok', title: 'nope' }, 'title'],
    ['metadata not an object', { text: 'ok', metadata: 'flat' }, 'metadata'],
    ['metadata that is an array', { text: 'ok', metadata: ['a'] }, 'metadata'],
    ['metadata with a nested object', { text: 'ok', metadata: { nested: { a: 1 } } }, 'nested'],
    ['metadata value null', { text: 'ok', metadata: { n: null } }, 'metadata'],
    ['metadata value array of numbers', { text: 'ok', metadata: { nums: [1, 2, 3] } }, 'nums'],
    ['metadata value array of mixed values', { text: 'ok', metadata: { mixed: ['a', 1] } }, 'mixed'],
    ['metadata key of 65 characters', { text: 'ok', metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata'],
    ['metadata empty key', { text: 'ok', metadata: { '': 'v' } }, 'metadata'],
    ['more than 64 metadata keys', { text: 'ok', metadata: manyKeys }, 'metadata'],
    ['metadata string value of 1025 characters', { text: 'ok', metadata: { long: 'l'.repeat(1025) } }, 'long'],
    ['metadata array element of 1025 characters', { text: 'ok', metadata: { tags: ['l'.repeat(1025)] } }, 'tags'],
  ];
  for (const [label, body, field] of rows) {
    test(`${label} (names '${field}')`, async () => {
      const kb = await createKb(server, `Invalid ${label}`);
      const res = await server.api('POST', contents(kb), body);
      expectValidation(res, field);
      expect(await total(server, kb)).toBe(0);
    });
  }

  test('invalid JSON → 400 INVALID_JSON', async () => {
    const kb = await createKb(server, 'Bad json');
    expectError(await server.api('POST', contents(kb), '{"text": "unterminated'), 400, 'INVALID_JSON');
    expect(await total(server, kb)).toBe(0);
  });

  test('non-object JSON body → 400', async () => {
    const kb = await createKb(server, 'Array body');
    for (const raw of ['["text"]', '"text"', 'null']) {
      const res = await server.api('POST', contents(kb), raw);
      expect(res.status).toBe(400);
      expectError(res, 400, res.body.error.code);
    }
    expect(await total(server, kb)).toBe(0);
  });
});

describe('GET /knowledge-bases/:id/contents (list and pagination)', () => {
  let kb: string;
  const ids: string[] = [];
  const texts = ['first item', 'second item', 'third item', 'fourth item', 'fifth item'];

  beforeAll(async () => {
    kb = await createKb(server, 'Paged');
    for (let i = 0; i < texts.length; i++) ids.push(await addContent(server, kb, texts[i]!, { n: i }));
  });

  test('default page: all items oldest first, total, documented fields', async () => {
    const res = await server.api('GET', contents(kb));
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.total).toBe(5);
    const data = res.body.data as any[];
    expect(data.map((c) => c.id)).toEqual(ids);
    expect(data.map((c) => c.contentChunk)).toEqual(texts);
    expect(data.map((c) => c.metadata)).toEqual(texts.map((_, i) => ({ n: i })));
    for (let i = 0; i < data.length; i++) {
      expectIsoMs(data[i].createdAt);
      if (i > 0) expect(data[i - 1].createdAt <= data[i].createdAt).toBe(true);
      expect(data[i].status).toBe('ready');
    }
  });

  test('limit and page walk the list without gaps or repeats', async () => {
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const res = await server.api('GET', `${contents(kb)}?limit=2&page=${page}`);
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(5);
      expect(res.body.data.length).toBe(page < 3 ? 2 : 1);
      seen.push(...res.body.data.map((c: { id: string }) => c.id));
    }
    expect(seen).toEqual(ids);
  });

  test('limit=1 returns exactly one item; page selects which', async () => {
    const res = await server.api('GET', `${contents(kb)}?limit=1&page=4`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((c: { id: string }) => c.id)).toEqual([ids[3]]);
    expect(res.body.total).toBe(5);
  });

  test('limit=100 is accepted', async () => {
    const res = await server.api('GET', `${contents(kb)}?limit=100`);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBe(5);
  });

  test('a page beyond the end → 200 with empty data and the correct total', async () => {
    for (const q of ['?page=2', '?page=6&limit=1', '?page=1000000&limit=100']) {
      const res = await server.api('GET', `${contents(kb)}${q}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, data: [], total: 5 });
    }
  });

  for (const q of ['limit=101', 'limit=0', 'limit=-1', 'limit=1.5', 'limit=abc', 'limit=', 'limit=1e1', 'limit=99999999999']) {
    test(`${q} → 400 VALIDATION_ERROR naming limit`, async () => {
      expectValidation(await server.api('GET', `${contents(kb)}?${q}`), 'limit');
    });
  }

  for (const q of ['page=0', 'page=abc', 'page=-1', 'page=1.5', 'page=']) {
    test(`${q} → 400 VALIDATION_ERROR naming page`, async () => {
      expectValidation(await server.api('GET', `${contents(kb)}?${q}`), 'page');
    });
  }

  test('an empty KB lists [] with total 0', async () => {
    const empty = await createKb(server, 'Empty list');
    const res = await server.api('GET', contents(empty));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: [], total: 0 });
  });
});

describe('PUT /knowledge-bases/:id/contents/:contentId', () => {
  test('replaces the text; omitted metadata keeps the old metadata; search swaps old for new', async () => {
    const kb = await createKb(server, 'Update');
    const id = await addContent(server, kb, 'The aardvark digs burrows.', { team: 'zoo', year: 2024 });
    expect((await search(server, kb, 'aardvark')).length).toBe(1);

    const put = await server.api('PUT', `${contents(kb)}/${id}?wait=true`, { text: 'The pangolin eats ants.' });
    expect(put.status).toBe(200);
    expect(put.body.success).toBe(true);
    const item = await getContent(server, kb, id);
    expect(item.contentChunk).toBe('The pangolin eats ants.');
    expect(item.metadata).toEqual({ team: 'zoo', year: 2024 });
    expect(item.status).toBe('ready');
    expect(item.chunkCount).toBeGreaterThanOrEqual(1);
    expectIsoMs(item.updatedAt);
    expect(item.updatedAt >= item.createdAt).toBe(true);

    expect(await search(server, kb, 'aardvark')).toEqual([]);
    const hits = await search(server, kb, 'pangolin');
    expect(hits.length).toBe(1);
    expect(hits[0].contentId).toBe(id);
    expect(hits[0].contentChunk).toBe('The pangolin eats ants.');
    expect(hits[0].metadata).toEqual({ team: 'zoo', year: 2024 });
    expect(await total(server, kb)).toBe(1);
  });

  test('given metadata replaces the old metadata entirely (old keys gone) and search filters on it', async () => {
    const kb = await createKb(server, 'Update meta');
    const id = await addContent(server, kb, 'ocelot report', { team: 'old', keep: 'no' });
    const put = await server.api('PUT', `${contents(kb)}/${id}?wait=true`, { text: 'ocelot report v2', metadata: { team: 'new' } });
    expect(put.status).toBe(200);
    expect((await getContent(server, kb, id)).metadata).toEqual({ team: 'new' });
    expect((await search(server, kb, 'ocelot', { metadataFilter: { team: 'new' } })).length).toBe(1);
    expect(await search(server, kb, 'ocelot', { metadataFilter: { team: 'old' } })).toEqual([]);
    expect(await search(server, kb, 'ocelot', { metadataFilter: { keep: 'no' } })).toEqual([]);
  });

  test('metadata {} clears the metadata', async () => {
    const kb = await createKb(server, 'Clear meta');
    const id = await addContent(server, kb, 'clearing', { a: 'b' });
    expect((await server.api('PUT', `${contents(kb)}/${id}?wait=true`, { text: 'clearing', metadata: {} })).status).toBe(200);
    expect((await getContent(server, kb, id)).metadata).toEqual({});
  });

  test('PUT without wait answers { success } only', async () => {
    const kb = await createKb(server, 'Update nowait');
    const id = await addContent(server, kb, 'before');
    const put = await server.api('PUT', `${contents(kb)}/${id}`, { text: 'after' });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ success: true });
    expect((await getContent(server, kb, id)).contentChunk).toBe('after');
  });

  const rows: [string, unknown, string][] = [
    ['blank text', { text: '   ' }, 'text'],
    ['missing text', { metadata: { a: 'b' } }, 'text'],
    ['unknown field', { text: 'x', extra: true }, 'extra'],
    ['nested metadata', { text: 'x', metadata: { o: { p: 1 } } }, 'o'],
    ['metadata key of 65 characters', { text: 'x', metadata: { ['q'.repeat(65)]: 1 } }, 'metadata'],
  ];
  for (const [label, body, field] of rows) {
    test(`PUT ${label} → 400 VALIDATION_ERROR, nothing changes`, async () => {
      const kb = await createKb(server, `Put invalid ${label}`);
      const id = await addContent(server, kb, 'original quokka', { m: 'orig' });
      const before = await getContent(server, kb, id);
      const res = await server.api('PUT', `${contents(kb)}/${id}`, body);
      expectValidation(res, field);
      expect(await getContent(server, kb, id)).toEqual(before);
      expect((await search(server, kb, 'quokka')).length).toBe(1);
    });
  }
});

describe('DELETE /knowledge-bases/:id/contents/:contentId', () => {
  test('200 { success }; then 404; its chunks leave search immediately; others stay', async () => {
    const kb = await createKb(server, 'Delete');
    const keep = await addContent(server, kb, 'shared lemur words, kept');
    const drop = await addContent(server, kb, 'shared lemur words, dropped');
    expect((await search(server, kb, 'lemur')).length).toBe(2);
    expect(await total(server, kb)).toBe(2);

    const del = await server.api('DELETE', `${contents(kb)}/${drop}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });

    const hits = await search(server, kb, 'lemur');
    expect(hits.map((h) => h.contentId)).toEqual([keep]);
    expectError(await server.api('GET', `${contents(kb)}/${drop}`), 404, 'NOT_FOUND');
    expectError(await server.api('PUT', `${contents(kb)}/${drop}`, { text: 'revive' }), 404, 'NOT_FOUND');
    expectError(await server.api('DELETE', `${contents(kb)}/${drop}`), 404, 'NOT_FOUND');
    const list = await server.api('GET', contents(kb));
    expect(list.body.total).toBe(1);
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([keep]);
  });

  test('deleting content that is still being indexed never lets it surface in search', async () => {
    const kb = await createKb(server, 'Delete pending');
    const created = await server.api('POST', contents(kb), { text: 'transient narwhal' });
    expect(created.status).toBe(201);
    const del = await server.api('DELETE', `${contents(kb)}/${created.body.data.id}`);
    expect(del.status).toBe(200);
    expect(await search(server, kb, 'narwhal')).toEqual([]);
    // A later item, indexed after the deleted one would have been, proves the queue moved on.
    await addContent(server, kb, 'lasting narwhal');
    const hits = await search(server, kb, 'narwhal');
    expect(hits.map((h) => h.contentChunk)).toEqual(['lasting narwhal']);
  });
});

describe('size limits (MAX_TEXT_BYTES=1000, MAX_JSON_BODY_BYTES=2048)', () => {
  let kb: string;
  beforeAll(async () => {
    kb = await createKb(small, 'Limits');
  });

  test('text of exactly 1000 bytes is accepted', async () => {
    const res = await small.api('POST', contents(kb), { text: 'a'.repeat(1000) });
    expect(res.status).toBe(201);
  });

  test('text of 1001 bytes → 413 PAYLOAD_TOO_LARGE, nothing created', async () => {
    const before = await total(small, kb);
    const res = await small.api('POST', contents(kb), { text: 'a'.repeat(1001) });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(await total(small, kb)).toBe(before);
  });

  test('the limit counts UTF-8 bytes, not characters (501 × "é" = 1002 bytes → 413; 500 × "é" ok)', async () => {
    expectError(await small.api('POST', contents(kb), { text: 'é'.repeat(501) }), 413, 'PAYLOAD_TOO_LARGE');
    expect((await small.api('POST', contents(kb), { text: 'é'.repeat(500) })).status).toBe(201);
  });

  test('PUT with text over the limit → 413 and the item keeps its text', async () => {
    const id = await addContent(small, kb, 'small text');
    expectError(await small.api('PUT', `${contents(kb)}/${id}`, { text: 'b'.repeat(1001) }), 413, 'PAYLOAD_TOO_LARGE');
    expect((await getContent(small, kb, id)).contentChunk).toBe('small text');
  });

  test('a body over MAX_JSON_BODY_BYTES → 413 even when its text is small', async () => {
    const before = await total(small, kb);
    const metadata = { a: 'x'.repeat(1000), b: 'y'.repeat(1000), c: 'z'.repeat(1000) };
    const res = await small.api('POST', contents(kb), { text: 'tiny', metadata });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(await total(small, kb)).toBe(before);
    // The same metadata within the limit is fine: the 413 is about size, not content.
    expect((await small.api('POST', contents(kb), { text: 'tiny', metadata: { a: 'x'.repeat(1000) } })).status).toBe(201);
  });

  test('a body over MAX_JSON_BODY_BYTES sent without Content-Length (chunked) → 413', async () => {
    const before = await total(small, kb);
    const payload = new TextEncoder().encode(JSON.stringify({ text: 'tiny', metadata: { a: 'x'.repeat(1000), b: 'y'.repeat(1000), c: 'z'.repeat(1000) } }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < payload.length; i += 512) controller.enqueue(payload.subarray(i, i + 512));
        controller.close();
      },
    });
    const res = await fetch(`${small.url}${contents(kb)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-organization-id': 'org_test', 'x-service-api-key': 'test-key-0123456789' },
      body: stream,
    });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    expectError({ status: res.status, body, headers: res.headers }, 413, 'PAYLOAD_TOO_LARGE');
    expect(await total(small, kb)).toBe(before);
  });

  test('a search body over MAX_JSON_BODY_BYTES → 413', async () => {
    const res = await small.api('POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: 'q'.repeat(3000) });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  test('the 413 error names the limit', async () => {
    const res = await small.api('POST', contents(kb), { text: 'a'.repeat(1001) });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expectNamesField(res, '1000');
  });
});

describe('long text and concurrency', () => {
  test('a long text is split into several chunks; hits return the chunk, get returns the whole text', async () => {
    const kb = await createKb(server, 'Long');
    const filler = (word: string, n: number) => Array.from({ length: n }, (_, i) => `${word}${i % 7 === 0 ? '.' : ''}`).join(' ');
    const text = `${filler('lorem', 800)} The hidden marmoset lives here. ${filler('ipsum', 800)}`;
    const id = await addContent(server, kb, text);
    const item = await getContent(server, kb, id);
    expect(item.contentChunk).toBe(text);
    expect(item.chunkCount).toBeGreaterThan(1);
    const hits = await search(server, kb, 'marmoset');
    expect(hits.length).toBe(1);
    expect(hits[0].contentId).toBe(id);
    expect(hits[0].contentChunk).toContain('hidden marmoset');
    expect(hits[0].contentChunk.length).toBeLessThan(text.length);
    expect(text).toContain(hits[0].contentChunk);
    // Chunks of one content have distinct chunk ids.
    const all = await search(server, kb, 'lorem ipsum', { limit: 100 });
    expect(all.length).toBe(item.chunkCount);
    expect(new Set(all.map((h) => h.id)).size).toBe(all.length);
    expect(all.every((h) => h.contentId === id)).toBe(true);
  });

  test('concurrent creates: unique ids, exact total, list ordered by createdAt then id', async () => {
    const kb = await createKb(server, 'Concurrent');
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => server.api('POST', contents(kb), { text: `parallel item ${i}` })));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const created = results.map((r) => r.body.data.id as string);
    expect(new Set(created).size).toBe(20);
    const res = await server.api('GET', `${contents(kb)}?limit=100`);
    expect(res.body.total).toBe(20);
    const list = res.body.data as any[];
    expect(list.map((c) => c.id).sort()).toEqual([...created].sort());
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1], list[i]];
      expect(a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id)).toBe(true);
    }
    // Pages of 7 reassemble the same list.
    const paged: string[] = [];
    for (let page = 1; page <= 3; page++) {
      paged.push(...(await server.api('GET', `${contents(kb)}?limit=7&page=${page}`)).body.data.map((c: { id: string }) => c.id));
    }
    expect(paged).toEqual(list.map((c) => c.id));
  });
});
