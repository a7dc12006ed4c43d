// Bulk import (POST …/contents/import, JSON Lines) over real HTTP: items become searchable; a bad
// line answers 400 naming it and writes nothing; the line and byte limits answer 413 and the
// content quota 403, writing nothing; authentication as every route; metadata caps as for single
// writes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createKb, InProcessServer, KEY, ORG, OTHER_KEY, OTHER_ORG } from '../helpers/server';

let server: InProcessServer;

beforeAll(async () => {
  server = await InProcessServer.start({ env: { MAX_IMPORT_LINES: '50', MAX_IMPORT_BYTES: String(64 * 1024) } });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  server?.cleanup();
});

const jsonl = (items: unknown[]) => `${items.map((i) => (typeof i === 'string' ? i : JSON.stringify(i))).join('\n')}\n`;

function importBody(s: InProcessServer, kb: string, body: string, query = '', auth: { org?: string; key?: string } | null = { org: ORG, key: KEY }) {
  return s.api('POST', `/api/v1/knowledge-bases/${kb}/contents/import${query}`, body, auth, { 'content-type': 'application/x-ndjson' });
}

const total = async (s: InProcessServer, kb: string) => (await s.api('GET', `/api/v1/knowledge-bases/${kb}/contents`)).body.total as number;

describe('JSONL import', () => {
  test('imports every line in order; the items are searchable with their metadata', async () => {
    const kb = await createKb(server, 'Import');
    const items = Array.from({ length: 30 }, (_, i) => ({
      text: `Imported note ${i} about ocelots number ${i}.`,
      metadata: { n: i, team: i % 2 ? 'odd' : 'even' },
    }));
    // Blank lines and CRLF line ends are fine.
    const body = `${jsonl(items.slice(0, 10))}\r\n\n${jsonl(items.slice(10)).replaceAll('\n', '\r\n')}`;
    const res = await importBody(server, kb, body, '?wait=true');
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ count: 30, ready: 30, failed: 0, pending: 0 });
    const ids = res.body.data.ids as string[];
    expect(new Set(ids).size).toBe(30);
    // In line order, as the list's order (createdAt, then id) shows.
    const list = await server.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=100`);
    expect(list.body.total).toBe(30);
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual(ids);
    expect((await server.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${ids[7]}`)).body.data).toMatchObject({
      contentChunk: items[7]!.text,
      metadata: { n: 7, team: 'odd' },
      status: 'ready',
    });
    const hits = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'ocelots', limit: 100, metadataFilter: { team: 'odd' } });
    expect(hits.status).toBe(200);
    expect(hits.body.data.length).toBe(15);
    expect(new Set(hits.body.data.map((h: { contentId: string }) => h.contentId))).toEqual(new Set(ids.filter((_, i) => i % 2 === 1)));
  });

  test('without wait it answers once durable, and indexing follows', async () => {
    const kb = await createKb(server, 'Import no wait');
    const res = await importBody(server, kb, jsonl([{ text: 'Lynxes hunt hares in the snow.' }, { text: 'Caracals leap to catch birds.' }]));
    expect(res.status).toBe(201);
    expect(res.body.data.count).toBe(2);
    expect(res.body.data.ready).toBeUndefined();
    for (;;) {
      const hits = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'caracals birds' });
      if (hits.body.data.length > 0) {
        expect(hits.body.data[0].contentId).toBe(res.body.data.ids[1]);
        break;
      }
      await Bun.sleep(20);
    }
  });

  test('a bad line answers 400 naming the line and the field, and nothing is written', async () => {
    const kb = await createKb(server, 'Import bad');
    const good = { text: 'A good line.' };
    const cases: { line: string; path: RegExp; code: string }[] = [
      { line: '{"text": ""}', path: /^\/lines\/3\/text$/, code: 'VALIDATION_ERROR' },
      { line: '{"text": "ok", "title": "extra"}', path: /^\/lines\/3\/title$/, code: 'VALIDATION_ERROR' },
      { line: '{"metadata": {}}', path: /^\/lines\/3\/text$/, code: 'VALIDATION_ERROR' },
      { line: '{"text": "ok", "metadata": {"n": {"deep": 1}}}', path: /^\/lines\/3\/metadata\/n/, code: 'VALIDATION_ERROR' },
      {
        line: `{"text": "ok", "metadata": ${JSON.stringify(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])))}}`,
        path: /^\/lines\/3\/metadata$/,
        code: 'VALIDATION_ERROR',
      },
      { line: '{"text": "control \\u0007 char"}', path: /^\/lines\/3\/text$/, code: 'VALIDATION_ERROR' },
      { line: '{"text": "unterminated', path: /^\/lines\/3$/, code: 'INVALID_JSON' },
      { line: '["text"]', path: /^\/lines\/3$/, code: 'VALIDATION_ERROR' },
    ];
    for (const c of cases) {
      const res = await importBody(server, kb, jsonl([good, good, c.line, good]));
      expect({ line: c.line, status: res.status, code: res.body.error?.code }).toEqual({ line: c.line, status: 400, code: c.code });
      expect(res.body.error.message).toStartWith('line 3');
      expect(res.body.error.details[0].path).toMatch(c.path);
    }
    expect(await total(server, kb)).toBe(0);
    // Nothing at all is a 400 too.
    const empty = await importBody(server, kb, '\n\n');
    expect(empty.status).toBe(400);
    expect(empty.body.error.details[0].path).toBe('/lines');
  });

  test('past the line or byte limit: 413, nothing written', async () => {
    const kb = await createKb(server, 'Import limits');
    const tooMany = await importBody(server, kb, jsonl(Array.from({ length: 51 }, (_, i) => ({ text: `line ${i}` }))));
    expect(tooMany.status).toBe(413);
    expect(tooMany.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(tooMany.body.error.message).toContain('MAX_IMPORT_LINES');
    expect(tooMany.body.error.details[0].path).toBe('/lines/51');
    // Over the byte limit, declared (refused before the body is read) or streamed without a length.
    const big = jsonl(Array.from({ length: 40 }, (_, i) => ({ text: `${i} ${'x'.repeat(2000)}` })));
    expect((await importBody(server, kb, big)).status).toBe(413);
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 40; i += 4) controller.enqueue(encoder.encode(big.slice(i * 2010, (i + 4) * 2010)));
        controller.enqueue(encoder.encode(big.slice(40 * 2010)));
        controller.close();
      },
    });
    const streamed = await fetch(`${server.url}/api/v1/knowledge-bases/${kb}/contents/import`, {
      method: 'POST',
      headers: { 'x-service-organization-id': ORG, 'x-service-api-key': KEY, 'content-type': 'application/x-ndjson' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(((await streamed.json()) as { error: { message: string } }).error.message).toContain('MAX_IMPORT_BYTES');
    expect(await total(server, kb)).toBe(0);
  });

  test('authentication as every route; another organization sees no such knowledge base', async () => {
    const kb = await createKb(server, 'Import auth');
    const body = jsonl([{ text: 'Secret text.' }]);
    expect((await importBody(server, kb, body, '', null)).status).toBe(401);
    expect((await importBody(server, kb, body, '', { org: ORG, key: 'wrong-key-0000000000' })).status).toBe(401);
    expect((await importBody(server, kb, body, '', { org: OTHER_ORG, key: OTHER_KEY })).status).toBe(404);
    expect((await importBody(server, 'kb_missing', body)).status).toBe(404);
    expect(await total(server, kb)).toBe(0);
  });
});

describe('JSONL import and the content quota', () => {
  test('a batch that would pass the quota is refused whole (403); one that fits is taken', async () => {
    const s = await InProcessServer.start({ env: { MAX_CONTENTS_PER_ORG: '5' } });
    try {
      const kb = await createKb(s, 'Quota');
      const six = jsonl(Array.from({ length: 6 }, (_, i) => ({ text: `Quota item ${i}.` })));
      const over = await importBody(s, kb, six);
      expect(over.status).toBe(403);
      expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
      expect(await total(s, kb)).toBe(0);
      const four = await importBody(s, kb, jsonl(Array.from({ length: 4 }, (_, i) => ({ text: `Quota item ${i}.` }))));
      expect(four.status).toBe(201);
      const two = await importBody(s, kb, jsonl([{ text: 'one more' }, { text: 'and another' }]));
      expect(two.status).toBe(403);
      expect(await total(s, kb)).toBe(4);
      expect((await importBody(s, kb, jsonl([{ text: 'the fifth' }]))).status).toBe(201);
      expect((await s.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: 'a sixth, single' })).status).toBe(403);
      expect(await total(s, kb)).toBe(5);
    } finally {
      await s.stop();
      s.cleanup();
    }
  }, 60_000);
});
