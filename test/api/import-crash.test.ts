// Bulk import is as durable as single writes: kill -9 the server in the middle of concurrent JSONL
// imports, start it again on the same data directory, and every acknowledged item is there, with
// its text, and gets indexed.
import { afterEach, expect, test } from 'bun:test';
import { createKb, KEY, ORG, TestServer } from '../helpers/server';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    if (s.proc.exitCode === null) await s.kill9();
    s.cleanup();
  }
});

test('kill -9 during bulk imports loses nothing acknowledged; indexing resumes', async () => {
  const a = await TestServer.start();
  servers.push(a);
  const kb = await createKb(a, 'Crash import');
  const acked = new Map<string, string>();
  let batch = 0;
  let stop = false;
  const writer = async () => {
    while (!stop) {
      const n = batch++;
      const texts = Array.from({ length: 100 }, (_, i) => `Batch ${n} line ${i} mentions wombats.`);
      try {
        const res = await fetch(`${a.url}/api/v1/knowledge-bases/${kb}/contents/import`, {
          method: 'POST',
          headers: { 'x-service-organization-id': ORG, 'x-service-api-key': KEY, 'content-type': 'application/x-ndjson' },
          body: texts.map((text) => JSON.stringify({ text })).join('\n'),
        });
        if (res.status !== 201) throw new Error(`status ${res.status}`);
        const { data } = (await res.json()) as { data: { ids: string[] } };
        expect(data.ids.length).toBe(100);
        data.ids.forEach((id, i) => acked.set(id, texts[i]!));
      } catch {
        // After the kill, an import in flight fails: it was never acknowledged.
        if (!stop) throw new Error('an import failed before the kill');
      }
    }
  };
  const writers = [writer(), writer(), writer()];
  while (acked.size < 1500) await Bun.sleep(5);
  stop = true;
  await a.kill9();
  await Promise.all(writers);
  expect(acked.size).toBeGreaterThanOrEqual(1500);

  const b = await TestServer.start({ dataDir: a.dataDir });
  servers.push(b);
  const held = new Map<string, { contentChunk: string }>();
  for (let page = 1; ; page++) {
    const res = await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents?page=${page}&limit=100`);
    for (const item of res.body.data) held.set(item.id, item);
    if (res.body.data.length < 100) break;
  }
  for (const [id, text] of acked) expect(held.get(id)?.contentChunk).toBe(text);
  // Unfinished indexing resumes by itself: every item (acknowledged or not) becomes ready.
  const started = Date.now();
  for (;;) {
    const kbInfo = await b.api('GET', `/api/v1/knowledge-bases/${kb}`);
    const { pending, processing, ready } = kbInfo.body.data.ingestion.contents;
    if (pending + processing === 0) {
      expect(ready).toBe(held.size);
      break;
    }
    if (Date.now() - started > 120_000) throw new Error('indexing did not resume');
    await Bun.sleep(100);
  }
  const hits = await b.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'wombats batch 3 line 7', limit: 5 });
  expect(hits.body.data.length).toBeGreaterThan(0);
}, 180_000);
