// An embedding endpoint that is down for a while: items wait and retry instead of failing at the
// first error; items that did fail are found by full-text search and can be re-indexed once the
// endpoint is back, and all of it survives a restart.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createKb, InProcessServer } from '../helpers/server';
import { API, expectError } from './util';

const DIMS = 8;

/** A deterministic unit vector per text (word hashes into 8 buckets). */
function embed(text: string): number[] {
  const v = new Array(DIMS).fill(0);
  for (const w of text.toLowerCase().split(/\W+/).filter(Boolean)) {
    let h = 0;
    for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % DIMS] += 1;
  }
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
}

/** An OpenAI-style /embeddings endpoint that answers 503 while `down`. */
function flakyEndpoint() {
  const state = { down: true, calls: 0 };
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      state.calls++;
      const body: any = await req.json().catch(() => undefined);
      if (state.down) return Response.json({ error: 'maintenance' }, { status: 503 });
      return Response.json({ object: 'list', data: (body.input as string[]).map((t, index) => ({ index, embedding: embed(t) })) });
    },
  });
  return { state, server, url: `http://127.0.0.1:${server.port}` };
}

const env = (url: string, attempts: number) => ({
  HIGH_QUALITY_MODEL: 'http:test-model',
  EMBEDDING_HTTP_URL: url,
  EMBEDDING_HTTP_DIMENSIONS: String(DIMS),
  EMBEDDING_HTTP_RETRIES: '0',
  EMBEDDING_HTTP_TIMEOUT_MS: '1000',
  EMBEDDING_RETRY_ATTEMPTS: String(attempts),
  EMBEDDING_RETRY_BASE_MS: '100',
  EMBEDDING_RETRY_MAX_MS: '300',
});

async function statusOf(server: InProcessServer, kb: string, id: string): Promise<any> {
  const res = await server.api('GET', `${API}/knowledge-bases/${kb}/contents/${id}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function waitFor(server: InProcessServer, kb: string, id: string, status: string, timeoutMs = 30_000): Promise<any> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const item = await statusOf(server, kb, id);
    if (item.status === status) return item;
    if (performance.now() > deadline) throw new Error(`item ${id} is ${item.status}, expected ${status}: ${JSON.stringify(item)}`);
    await Bun.sleep(50);
  }
}

async function ids(server: InProcessServer, kb: string, mode: string, query: string): Promise<string[]> {
  const res = await server.api('POST', `${API}/knowledge-bases/${kb}/search/${mode}`, { query });
  expect(res.status).toBe(200);
  return res.body.data.map((h: any) => h.contentId);
}

describe('embedding endpoint down for a while', () => {
  const endpoint = flakyEndpoint();
  let server: InProcessServer;

  beforeAll(async () => {
    server = await InProcessServer.start({ env: env(endpoint.url, 50) });
  });

  afterAll(async () => {
    await server?.stop();
    server?.cleanup();
    endpoint.server.stop(true);
  });

  test('items stay pending while it is down and become ready by themselves when it is back', async () => {
    const kb = await createKb(server, 'Flaky', 'TEXT_HIGH_QUALITY');
    const res = await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: 'Glaciers carve valleys over millennia.' });
    expect(res.status).toBe(201);
    const id = res.body.data.id;
    const callsBefore = endpoint.state.calls;
    await Bun.sleep(1000);
    const item = await statusOf(server, kb, id);
    expect(item.status).not.toBe('failed');
    expect(item.status).not.toBe('ready');
    expect(endpoint.state.calls - callsBefore).toBeGreaterThanOrEqual(2); // retried, not given up
    endpoint.state.down = false;
    const ready = await waitFor(server, kb, id, 'ready');
    expect(ready.error).toBeUndefined();
    expect(await ids(server, kb, 'semantic', 'glaciers valleys')).toEqual([id]);
  });
});

describe('re-indexing failed items', () => {
  const endpoint = flakyEndpoint();
  let server: InProcessServer;
  let kb: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    server = await InProcessServer.start({ env: env(endpoint.url, 2) });
  });

  afterAll(async () => {
    await server?.stop();
    server?.cleanup();
    endpoint.server.stop(true);
  });

  test('after its retries an item is failed, and full-text search finds it', async () => {
    kb = await createKb(server, 'Reindex', 'TEXT_HIGH_QUALITY');
    first = (await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: 'Volcanoes erupt molten rock.' })).body.data.id;
    second = (await server.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: 'Tides follow the moon.' })).body.data.id;
    const item = await waitFor(server, kb, first, 'failed');
    await waitFor(server, kb, second, 'failed');
    expect(item.error).toContain('embedding failed');
    expect(item.chunkCount).toBe(1);
    expect(await ids(server, kb, 'full-text', 'volcanoes')).toEqual([first]);
    // Still failed after a restart: the failure is in the log.
    await server.stop();
    server = await InProcessServer.start({ dataDir: server.dataDir, env: env(endpoint.url, 2) });
    expect((await statusOf(server, kb, first)).status).toBe('failed');
    expect(await ids(server, kb, 'full-text', 'volcanoes')).toEqual([first]);
  });

  test('POST …/contents/:id/reindex indexes one failed item again once the endpoint is back', async () => {
    endpoint.state.down = false;
    const res = await server.api('POST', `${API}/knowledge-bases/${kb}/contents/${first}/reindex`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, data: { id: first } });
    expect(['pending', 'processing']).toContain(res.body.data.status); // queued (a free worker takes it at once)
    await waitFor(server, kb, first, 'ready');
    expect(await ids(server, kb, 'semantic', 'volcanoes erupt')).toContain(first);
    // The other one was not touched.
    expect((await statusOf(server, kb, second)).status).toBe('failed');
    // A ready item: nothing to do, answered with its status.
    const again = await server.api('POST', `${API}/knowledge-bases/${kb}/contents/${first}/reindex`);
    expect(again.body).toEqual({ success: true, data: { id: first, status: 'ready' } });
  });

  test('POST …/reindex-failed re-queues every failed item; the outcome survives a restart', async () => {
    const res = await server.api('POST', `${API}/knowledge-bases/${kb}/reindex-failed`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { queued: 1 } });
    await waitFor(server, kb, second, 'ready');
    await server.stop();
    server = await InProcessServer.start({ dataDir: server.dataDir, env: env(endpoint.url, 2) });
    for (const id of [first, second]) expect((await statusOf(server, kb, id)).status).toBe('ready');
    expect(await ids(server, kb, 'semantic', 'tides moon')).toContain(second);
  });

  test('unknown item or knowledge base → 404; another organization → 404', async () => {
    expectError(await server.api('POST', `${API}/knowledge-bases/${kb}/contents/ct_nope/reindex`), 404, 'NOT_FOUND');
    expectError(await server.api('POST', `${API}/knowledge-bases/kb_nope/reindex-failed`), 404, 'NOT_FOUND');
    expectError(
      await server.api('POST', `${API}/knowledge-bases/${kb}/reindex-failed`, undefined, { org: 'org_other', key: 'other-key-9876543210' }),
      404,
      'NOT_FOUND',
    );
  });
});
