// Start-up after a crash, over real HTTP: re-queued content must not hold /ready back, and what a
// snapshot killed mid-way left in DATA_DIR/snapshots is cleaned up.
import { afterEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addContent, createKb, TestServer } from './helpers/server';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    if (s.proc.exitCode === null) await s.kill9();
    s.cleanup();
  }
});

async function start(options: { dataDir?: string; env?: Record<string, string>; waitReady?: boolean } = {}) {
  const s = await TestServer.start(options);
  servers.push(s);
  return s;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Status of every content item of a knowledge base (all pages). */
async function statuses(s: TestServer, kb: string): Promise<string[]> {
  const out: string[] = [];
  for (let page = 1; ; page++) {
    const res = await s.api('GET', `/api/v1/knowledge-bases/${kb}/contents?limit=100&page=${page}`);
    expect(res.status).toBe(200);
    out.push(...res.body.data.map((c: { status: string }) => c.status));
    if (res.body.data.length < 100) return out;
  }
}

/** The fields of the first JSON log line carrying `msg`. */
const logged = (s: TestServer, msg: string) => {
  const line = s.output.find((l) => l.includes(`"msg":"${msg}"`));
  return line === undefined ? undefined : JSON.parse(line);
};

const WORDS = 'river mountain lantern copper meadow harbor violet engine canyon thunder marble orchard glacier pepper falcon'.split(' ');
/** About `length` characters of distinct sentences (each item its own text). */
function text(i: number, length: number): string {
  let out = `Note ${i} about okapis. `;
  for (let k = i; out.length < length; k++) out += `The ${WORDS[k % 15]} near the ${WORDS[(k * 7 + 3) % 15]} was ${WORDS[(k * 11 + 5) % 15]}. `;
  return out;
}

describe('start-up after kill -9 with content still pending', () => {
  test('the embedding models load before re-queued content is sent to the workers: /ready is not held back by it', async () => {
    // One document worker (the helper's INGEST_WORKERS=1) and the default model (the shipped MiniLM). An
    // ingestion batch takes up to 16 items; 64 short items are 4 batches. Before the fix the
    // replay sent 2 batches to the worker at once and the model load waited behind both, so /ready
    // answered only after 32 re-queued items were indexed (measured: 4.9 s after spawn, against
    // 2.2 s with the fix, on 2 cores).
    const a = await start();
    const kb = await createKb(a, 'Startup');
    const total = 64;
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < total) {
          const res = await a.api('POST', `/api/v1/knowledge-bases/${kb}/contents`, { text: text(next++, 400) });
          expect(res.status).toBe(201);
        }
      }),
    );
    await a.kill9();

    const spawned = performance.now();
    const b = await start({ dataDir: a.dataDir, waitReady: false });
    await b.waitReady(90_000);
    const readyMs = performance.now() - spawned;
    // What /ready let through: items indexed before it answered 200.
    const atReady = await statuses(b, kb);
    const requeued: number = logged(b, 'state recovered').recovery.requeued;
    const allReadyMs = await until('the re-queued items to be indexed', async () =>
      (await statuses(b, kb)).every((s) => s === 'ready') ? performance.now() - spawned : undefined,
    );
    console.log(
      `kill -9 restart: /ready after ${Math.round(readyMs)} ms, ${atReady.filter((s) => s === 'ready').length}/${requeued} re-queued items indexed by then, all indexed after ${Math.round(allReadyMs)} ms`,
    );

    expect(atReady.length).toBe(total);
    // Enough was pending at the crash for the old order to put two whole batches ahead of the load.
    expect(requeued).toBeGreaterThanOrEqual(48);
    // Not even one batch of the re-queued work ran before /ready (the old order: 32 items).
    expect(atReady.filter((s) => s === 'ready').length).toBeLessThan(16);
    expect(readyMs).toBeLessThan(allReadyMs);
    // …and all of it is indexed afterwards, found by full-text and semantic search.
    const fullText = await b.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'okapis', limit: 100 });
    expect(fullText.body.data.length).toBe(total);
    const semantic = await b.api('POST', `/api/v1/knowledge-bases/${kb}/search/semantic`, { query: 'note about okapis', limit: 5 });
    expect(semantic.status).toBe(200);
    expect(semantic.body.data.length).toBe(5);
  }, 180_000);
});

describe('unfinished snapshots', () => {
  test('tmp-* folders left by a snapshot killed mid-way are removed at start-up; snap-* folders and the data stay', async () => {
    // Snapshot quickly (checked every 100 ms, due 200 ms after a write) so a complete one exists.
    const a = await start({ env: { SNAPSHOT_CHECK_MS: '100', SNAPSHOT_INTERVAL_MIN: String(0.2 / 60) } });
    const kb = await createKb(a, 'Snapshots');
    const before = await addContent(a, kb, 'Penguins live in large colonies.');
    await until('a snapshot', async () => (logged(a, 'snapshot written') ? true : undefined), 30_000);
    // Its log line says what its dumps were: the first is whole, written here.
    const dumps = logged(a, 'snapshot written').dumps;
    expect([dumps.full, dumps.deltas]).toEqual([1, 0]);
    expect(dumps.bytes).toBeGreaterThan(0);
    const after = await addContent(a, kb, 'A volcano erupted near the village.');
    await a.kill9();

    const dir = join(a.dataDir, 'snapshots');
    const complete = readdirSync(dir)
      .filter((n) => n.startsWith('snap-'))
      .sort();
    expect(complete.length).toBeGreaterThanOrEqual(1);
    const manifests = complete.map((n) => readFileSync(join(dir, n, 'manifest.json'), 'utf8'));
    // What a snapshot killed mid-way leaves: its build folder, with files (and no manifest, or part of one).
    const stale = [`tmp-7-${crypto.randomUUID()}`, `tmp-123-${crypto.randomUUID()}`];
    for (const name of stale) {
      mkdirSync(join(dir, name, 'nested'), { recursive: true });
      writeFileSync(join(dir, name, 'records.log'), new Uint8Array(4096).fill(7));
      writeFileSync(join(dir, name, 'nested', 'main-graph-kb_x.usearch'), new Uint8Array(1024));
      writeFileSync(join(dir, name, 'manifest.json'), '{"format":1,"seq":');
    }

    // (The kill may also have caught a real snapshot of the second write half-way.)
    const leftovers = readdirSync(dir)
      .filter((n) => n.startsWith('tmp-'))
      .sort();
    expect(leftovers).toEqual(expect.arrayContaining(stale));

    const b = await start({ dataDir: a.dataDir });
    expect(readdirSync(dir).filter((n) => n.startsWith('tmp-'))).toEqual([]);
    for (const name of stale) expect(existsSync(join(dir, name))).toBe(false);
    expect(logged(b, 'removed unfinished snapshot directories')?.removed?.sort()).toEqual(leftovers);
    // The complete snapshots are untouched, and start-up began from the newest one.
    expect(
      readdirSync(dir)
        .filter((n) => n.startsWith('snap-'))
        .sort(),
    ).toEqual(complete);
    expect(complete.map((n) => readFileSync(join(dir, n, 'manifest.json'), 'utf8'))).toEqual(manifests);
    expect(logged(b, 'state recovered').recovery.snapshot?.seq).toBe(Number(complete.at(-1)!.slice('snap-'.length)));
    // Everything written before and after that snapshot is there.
    const search = async (query: string) =>
      (await b.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query })).body.data.map((h: { contentId: string }) => h.contentId);
    expect(await search('penguins colonies')).toEqual([before]);
    expect(await search('volcano village')).toEqual([after]);
  }, 120_000);
});
