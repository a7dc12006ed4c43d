// A burst of writes far beyond what the workers embed at once: every create is acknowledged (the
// log holds it), and indexing catches up by itself.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { createKb, InProcessServer } from './helpers/server';

let server: InProcessServer;
beforeAll(async () => {
  server = await InProcessServer.start({ env: { INGEST_WORKERS: '2' } });
});
afterAll(async () => {
  await server.stop();
  server.cleanup();
});

test('300 concurrent creates are all acknowledged, then all become searchable', async () => {
  const kb = await createKb(server);
  const topics = ['volcano', 'glacier', 'desert', 'rainforest', 'coral reef'];
  const responses = await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      server.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: `Field note ${i}: observations near the ${topics[i % 5]}.`, metadata: { i } }),
    ),
  );
  expect(responses.every((r) => r.status === 201)).toBe(true);
  const ids = responses.map((r) => r.body.data.id);
  expect(new Set(ids).size).toBe(300);

  let ready = 0;
  for (let attempt = 0; attempt < 600 && ready < 300; attempt++) {
    const statuses = await Promise.all([1, 2, 3].map((page) => server.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=100&page=${page}`)));
    ready = statuses.flatMap((s) => s.body.data).filter((c: { status: string }) => c.status === 'ready').length;
    if (ready < 300) await Bun.sleep(100);
  }
  expect(ready).toBe(300);
  const glacier = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'glacier', limit: 100 });
  expect(glacier.body.data.length).toBe(60);
  const semantic = await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/semantic`, { query: 'ice field', limit: 5, metadataFilter: { i: 1 } });
  expect(semantic.body.data.map((h: { contentId: string }) => h.contentId)).toEqual([ids[1]]);
}, 120_000);
