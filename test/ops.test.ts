// Operations surface: metrics, API docs (offline), readiness and request ids.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { addContent, createKb, InProcessServer } from './helpers/server';

let server: InProcessServer;
beforeAll(async () => {
  server = await InProcessServer.start({ env: { RATE_LIMIT_RPS: '5', RATE_LIMIT_BURST: '40' } });
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
});

test('/metrics exposes requests, ingestion and index gauges in Prometheus format', async () => {
  const kb = await createKb(server);
  await addContent(server, kb, 'Metrics make operators happy.');
  await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'operators' });
  const res = await fetch(`${server.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  const text = await res.text();
  expect(text).toMatch(/kb_http_requests_total\{method="POST",route="\/api\/v1\/knowledge-bases\/:id\/search\/full-text",status="200"\} 1/);
  expect(text).toMatch(/kb_http_request_duration_seconds_bucket\{.*route="\/api\/v1\/knowledge-bases"/);
  expect(text).toMatch(/kb_contents\{status="ready"\} 1/);
  expect(text).toMatch(/kb_chunks\{type="TEXT_HIGH_QUALITY"\} 1/);
  expect(text).toMatch(/kb_vectors\{type="TEXT_HIGH_QUALITY"\} 1/);
  expect(text).toMatch(/kb_ingestion_queue_depth 0/);
  expect(text).toMatch(/kb_ingestion_chunks_waiting 0\n/);
  expect(text).toMatch(/kb_ingestion_eta_seconds 0\n/);
  expect(Number(/^kb_ingestion_chunks_per_second (\S+)$/m.exec(text)?.[1])).toBeGreaterThan(0); // a chunk indexed within the last minute
  expect(text).toMatch(/kb_embedding_batch_duration_seconds_count\{model="Xenova\/all-MiniLM-L6-v2"\} 1/);
  expect(text).toMatch(/kb_wal_bytes \d+/);
  expect(Number(/^kb_text_store_bytes\{state="live"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
  expect(text).toMatch(/^kb_text_store_bytes\{state="dead"\} \d+$/m);
  expect(text).toMatch(/kb_process_resident_memory_bytes \d+/);
  // Labels never carry ids: path parameters are folded.
  expect(text).not.toContain(kb);
});

test('/metrics reads no default that walks the heap; the heap size gauges stay', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  // v8.getHeapSpaceStatistics walks every object in Bun: tens of ms of the main thread a scrape.
  expect(text).not.toContain('heap_space');
  expect(text).toMatch(/^kb_nodejs_heap_size_used_bytes \d+/m);
  expect(text).toMatch(/^kb_nodejs_eventloop_lag_seconds \S+/m);
});

test('a knowledge base read carries its ingestion progress', async () => {
  const kb = await createKb(server);
  const empty = (await server.api('GET', `/api/v1/knowledge-bases/${kb}`)).body.data.ingestion;
  expect(empty).toEqual({ contents: { pending: 0, processing: 0, ready: 0, failed: 0 }, chunksWaiting: 0, chunksPerSecond: 0, etaSeconds: 0 });
  await addContent(server, kb, 'Progress you can watch.');
  await addContent(server, kb, 'Another item, indexed as well.');
  const done = (await server.api('GET', `/api/v1/knowledge-bases/${kb}`)).body.data.ingestion;
  expect(done).toMatchObject({ contents: { pending: 0, processing: 0, ready: 2, failed: 0 }, chunksWaiting: 0, etaSeconds: 0 });
  expect(done.chunksPerSecond).toBeGreaterThan(0);
});

test('the docs page loads its UI from this server only, and the OpenAPI document covers every route', async () => {
  const html = await (await fetch(`${server.url}/docs`)).text();
  const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(refs.length).toBeGreaterThan(0);
  for (const ref of refs) {
    expect(ref.startsWith('/')).toBe(true); // no CDN
    const asset = await fetch(`${server.url}${ref}`);
    expect(asset.status).toBe(200);
    expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  }
  const spec = (await (await fetch(`${server.url}/openapi.json`)).json()) as any;
  expect(spec.openapi).toMatch(/^3\./);
  const paths = Object.keys(spec.paths);
  for (const p of [
    '/api/v1/knowledge-bases',
    '/api/v1/knowledge-bases/{id}',
    '/api/v1/knowledge-bases/{id}/configuration',
    '/api/v1/knowledge-bases/{id}/contents',
    '/api/v1/knowledge-bases/{id}/contents/file',
    '/api/v1/knowledge-bases/{id}/contents/{contentId}',
    '/api/v1/knowledge-bases/{id}/search/full-text',
    '/api/v1/knowledge-bases/{id}/search/semantic',
    '/api/v1/knowledge-bases/{id}/search/hybrid',
    '/health',
    '/ready',
    '/metrics',
  ]) {
    expect(paths).toContain(p);
  }
  const create = spec.paths['/api/v1/knowledge-bases'].post;
  expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '500']));
  expect(spec.paths['/api/v1/knowledge-bases/{id}/search/semantic'].post.responses['502']).toBeDefined();
  expect(spec.paths['/api/v1/knowledge-bases/{id}/contents/file'].post.requestBody.content['multipart/form-data']).toBeDefined();
  // Every JSON body is described with its schema and examples (the docs' "Try it out" can send it).
  for (const [path, operations] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!op.requestBody || path.endsWith('/contents/file')) continue;
      if (path.endsWith('/contents/import')) {
        // JSON Lines, not a JSON body: its type and an example are documented.
        expect(op.requestBody.content['application/x-ndjson']?.schema?.examples?.length).toBeGreaterThan(0);
        continue;
      }
      const json = op.requestBody.content['application/json'];
      expect({ operation: `${method} ${path}`, type: json?.schema?.type, properties: Object.keys(json?.schema?.properties ?? {}).length > 0 }).toEqual({
        operation: `${method} ${path}`,
        type: 'object',
        properties: true,
      });
    }
  }
  expect(spec.paths['/api/v1/knowledge-bases/{id}/search/hybrid'].post.requestBody.content['application/json'].schema.examples.length).toBeGreaterThan(0);
  expect(paths.some((p) => p.startsWith('/docs/assets'))).toBe(false);
});

test('every response carries a request id; a client-sent one is kept', async () => {
  const res = await server.api('GET', '/api/v1/knowledge-bases', undefined, undefined, { 'x-request-id': 'trace-123' });
  expect(res.headers.get('x-request-id')).toBe('trace-123');
  const unauth = await server.api('GET', '/api/v1/knowledge-bases', undefined, null);
  expect(unauth.status).toBe(401);
  expect(unauth.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
  const again = await server.api('GET', '/api/v1/knowledge-bases', undefined, null);
  expect(again.headers.get('x-request-id')).not.toBe(unauth.headers.get('x-request-id'));
  // Every kind of answer: a route's JSON, a validation error, an unknown route, the health check.
  const created = await server.api('POST', '/api/v1/knowledge-bases', { name: 'ids' }, undefined, { 'x-request-id': 'trace-456' });
  expect(created.status).toBe(400);
  expect(created.headers.get('x-request-id')).toBe('trace-456');
  for (const path of ['/api/v1/no-such-route', '/health']) {
    const res = await server.api('GET', path);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
  }
  // A client id that is not a plain token (spaces, or too long for a log line) is replaced.
  for (const bad of ['has spaces', 'x'.repeat(129)]) {
    const res = await server.api('GET', '/health', undefined, undefined, { 'x-request-id': bad });
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
  }
});

test('per-organization rate limit: 429 RATE_LIMITED with Retry-After, other organizations unaffected', async () => {
  let limited: { body: any; headers: Headers } | undefined;
  for (let i = 0; i < 60 && !limited; i++) {
    const res = await server.api('GET', '/api/v1/knowledge-bases');
    if (res.status === 429) limited = res;
  }
  expect(limited).toBeDefined();
  expect(limited!.body.error.code).toBe('RATE_LIMITED');
  expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  const other = await server.api('GET', '/api/v1/knowledge-bases', undefined, { org: 'org_other', key: 'other-key-9876543210' });
  expect(other.status).toBe(200);
  // Health and metrics are never limited.
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
});
