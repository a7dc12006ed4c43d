// Crash safety over real HTTP: kill -9 the server and start it again on the same data directory.
import { afterEach, describe, expect, test } from 'bun:test';
import { appendFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { addContent, createKb, TestServer } from './helpers/server';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    if (s.proc.exitCode === null) await s.kill9();
    s.cleanup();
  }
});

async function start(dataDir?: string) {
  const s = await TestServer.start({ dataDir });
  servers.push(s);
  return s;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

const search = (s: TestServer, kb: string, query: string) => s.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query, limit: 100 });

describe('restart after kill -9', () => {
  test('every acknowledged write is there and searchable; pending items are indexed after restart', async () => {
    const a = await start();
    const kb = await createKb(a, 'Durable');
    const kept = await addContent(a, kb, 'Zebras graze on the savanna at dawn.', { animal: 'zebra' });
    const updated = await addContent(a, kb, 'Original text about penguins.');
    const deleted = await addContent(a, kb, 'This item about walruses will be deleted.');
    expect((await a.api('PUT', `/api/v1/knowledge-bases/${kb}/contents/${updated}?wait=true`, { text: 'Rewritten text about flamingos.' })).status).toBe(200);
    expect((await a.api('DELETE', `/api/v1/knowledge-bases/${kb}/contents/${deleted}`)).status).toBe(200);
    expect((await a.api('PUT', `/api/v1/knowledge-bases/${kb}`, { name: 'Durable v2', type: 'TEXT_HIGH_QUALITY' })).status).toBe(200);
    // Acknowledged but (mostly) not yet indexed when the process dies.
    const pending: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await a.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: `Pending note ${i} mentions capybaras.` });
      expect(res.status).toBe(201);
      pending.push(res.body.data.id);
    }
    await a.kill9();

    const b = await start(a.dataDir);
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}`)).body.data.name).toBe('Durable v2');
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${kept}`)).body.data).toMatchObject({
      contentChunk: 'Zebras graze on the savanna at dawn.',
      metadata: { animal: 'zebra' },
      status: 'ready',
    });
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${updated}`)).body.data.contentChunk).toBe('Rewritten text about flamingos.');
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${deleted}`)).status).toBe(404);
    expect((await search(b, kb, 'zebras savanna')).body.data[0].contentId).toBe(kept);
    expect((await search(b, kb, 'flamingos')).body.data[0].contentId).toBe(updated);
    expect((await search(b, kb, 'penguins')).body.data).toEqual([]);
    expect((await search(b, kb, 'walruses')).body.data).toEqual([]);
    const list = await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=100`);
    expect(list.body.total).toBe(42);
    // Unfinished indexing resumes by itself.
    await until('pending items to be indexed', async () => {
      const r = await search(b, kb, 'capybaras');
      return r.body.data.length === 40 ? true : undefined;
    });
    const ids = new Set((await search(b, kb, 'capybaras')).body.data.map((h: any) => h.contentId));
    expect(pending.every((id) => ids.has(id))).toBe(true);
  });

  test('concurrent writers: every acknowledged create survives a kill -9 in the middle of the load', async () => {
    const a = await start();
    const kb = await createKb(a);
    const acked: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await a.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: `writer ${w} item ${i} ocelot` });
          if (res.status === 201) acked.push(res.body.data.id);
        } catch {
          return; // connection died with the server
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    await until('some acknowledged writes', async () => (acked.length >= 150 ? true : undefined));
    await a.kill9();
    stop = true;
    await Promise.all(writers);
    const b = await start(a.dataDir);
    const total = (await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=1`)).body.total;
    expect(total).toBeGreaterThanOrEqual(acked.length);
    for (const id of acked) {
      expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${id}`)).status).toBe(200);
    }
  });
});

describe('torn write-ahead log', () => {
  test('a torn tail is cut off and reported; the server starts and keeps every acknowledged write', async () => {
    const a = await start();
    const kb = await createKb(a);
    const id = await addContent(a, kb, 'Narwhals have a long tusk.');
    await a.kill9();
    const walDir = join(a.dataDir, 'wal');
    const segment = readdirSync(walDir)
      .filter((n) => n.endsWith('.log'))
      .sort()
      .at(-1)!;
    // A frame header promising more bytes than follow: what a crash mid-write leaves behind.
    appendFileSync(join(walDir, segment), new Uint8Array([0xff, 0x00, 0x00, 0x00, 1, 2, 3, 4, 9, 9]));

    const b = await start(a.dataDir);
    expect(await b.waitForOutput('torn tail')).toBe(true);
    expect((await b.api('GET', `/api/v1/knowledge-bases/${kb}/contents/${id}`)).status).toBe(200);
    expect((await search(b, kb, 'narwhal tusk')).body.data[0].contentId).toBe(id);
    // Writes continue after the cut, and survive another restart.
    const after = await addContent(b, kb, 'Belugas are white whales.');
    await b.kill9();
    const c = await start(a.dataDir);
    expect((await search(c, kb, 'belugas')).body.data[0].contentId).toBe(after);
    expect(await c.waitForOutput('"msg":"ready"')).toBe(true);
    expect(c.output.some((l) => l.includes('torn tail'))).toBe(false);
  });
});
