// Re-embedding through the real server (issue 23): the operator changes the model that serves a
// type and restarts; every knowledge base on the old model is rebuilt in the background for the new
// one and switches once complete. Searches keep answering from the old configuration meanwhile,
// with no error and no mixed vectors; a write meanwhile reaches both; kill -9 part-way loses
// nothing and the build goes on from where it stopped; progress shows in the knowledge base read,
// /ready and /metrics; REEMBED_ON_START=false leaves knowledge bases alone until the explicit action
// (POST …/reembed) asks. Two tiny generated sentence-transformers stand for the old and new models.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTinyModel } from './fixtures/tiny-model';
import { eventually } from './helpers/eventually';
import { TestServer } from './helpers/server';

const API = '/api/v1';
let modelDir: string;
let dataDir: string;
let server: TestServer | undefined;
let kb: string;
const ITEMS = 1200;
const WORDS = ['car', 'banana', 'dog', 'computer', 'rain', 'money'];
/** One text per embedding call and one document worker. */
const SLOW = { EMBEDDING_BATCH_SIZE: '1', INGEST_WORKERS: '1' };
const textOf = (n: number) => `Note ${n}: the ${WORDS[n % WORDS.length]} and a ${WORDS[(n + 1) % WORDS.length]}, number ${n}.`;

const start = (model: string, env: Record<string, string> = {}) =>
  TestServer.start({
    dataDir,
    env: { EMBEDDING_MODEL_DIR: modelDir, HIGH_QUALITY_MODEL: `transformers:${model}`, RATE_LIMIT_RPS: '0', SNAPSHOT_ON_SHUTDOWN: 'false', ...env },
  });

const read = async () => (await server!.api('GET', `${API}/knowledge-bases/${kb}`)).body.data;
const configuration = async () => (await server!.api('GET', `${API}/knowledge-bases/${kb}/configuration`)).body.data;
const semantic = async (query: string) => server!.api('POST', `${API}/knowledge-bases/${kb}/search/semantic`, { query, limit: 5 });

beforeAll(async () => {
  modelDir = mkdtempSync(join(tmpdir(), 'kb-reembed-models-'));
  dataDir = TestServer.tempDir();
  await writeTinyModel(modelDir, { modelId: 'test/tiny-old', dimensions: 32, seed: 1 });
  await writeTinyModel(modelDir, { modelId: 'test/tiny-new', dimensions: 48, seed: 2 });
  await writeTinyModel(modelDir, { modelId: 'test/tiny-third', dimensions: 24, seed: 3 });
  server = await start('test/tiny-old');
  kb = (await server.api('POST', `${API}/knowledge-bases`, { name: 'Notes', type: 'TEXT_HIGH_QUALITY' })).body.data.id;
  // Many items, so the build takes long enough to be seen part-way (and killed part-way).
  for (let i = 0; i < ITEMS; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => server!.api('POST', `${API}/knowledge-bases/${kb}/contents`, { text: textOf(i + j) })));
  }
  await eventually('every item ready', read, (d) => d.ingestion.contents.ready === ITEMS, 120_000);
}, 180_000);

afterAll(async () => {
  await server?.kill9();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(modelDir, { recursive: true, force: true });
});

describe('re-embedding when the model serving a type changes', () => {
  test('at start: searches answer from the old model meanwhile, a write reaches both, kill -9 part-way resumes, then one switch', async () => {
    const before = await configuration();
    expect(before.embedding).toMatchObject({ model: 'test/tiny-old', dimensions: 32 });
    const oldHits = (await semantic('automobile')).body.data;
    await server!.stop();

    // One text a call: the build takes long enough to be watched (and killed) part-way.
    server = await start('test/tiny-new', SLOW);
    const seen = await eventually('re-embedding under way', read, (d) => d.reembedding?.done > 0 && d.reembedding.done < ITEMS / 2, 60_000);
    // Meanwhile: the old configuration answers, exactly as before (its vectors, its query model).
    const during = await semantic('automobile');
    const stillBuilding = await read();
    expect(stillBuilding.reembedding).not.toBeNull();
    expect(during.status).toBe(200);
    // Many notes tie (a tiny vocabulary): the scores are what tells the vectors and the query model apart.
    expect(during.body.data.map((h: { score: number }) => h.score)).toEqual(oldHits.map((h: { score: number }) => h.score));
    expect(seen.reembedding).toMatchObject({ model: 'test/tiny-new', total: ITEMS });
    expect(seen.activeKnowledgeBaseConfigurationId).toBe(before.id);
    expect((await configuration()).embedding.model).toBe('test/tiny-old');
    const ready = (await server.api('GET', '/ready')).body;
    expect(ready.reembedding).toMatchObject({ knowledgeBases: 1, total: ITEMS });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/kb_reembed_items_total 1200/);
    // A write meanwhile, for both configurations.
    const added = await server.api('POST', `${API}/knowledge-bases/${kb}/contents?wait=true`, { text: 'A brand new note about a truck engine.' });
    expect(added.body.data.status).toBe('ready');

    // kill -9 part-way, with what was built durable by then.
    const { reembedding: beforeKill } = await read();
    await Bun.sleep(300);
    await server.kill9();
    server = await start('test/tiny-new', SLOW);
    const resumed = (await read()).reembedding;
    console.log(
      `[reembed] killed part-way: ${beforeKill.done} of ${beforeKill.total} built 300 ms before kill -9; ${resumed?.done ?? 'all'} after the restart`,
    );
    if (resumed) expect(resumed.done).toBeGreaterThanOrEqual(beforeKill.done);

    const after = await eventually('the new configuration active', read, (d) => d.reembedding === null || d.reembedding === undefined, 120_000);
    expect(after.activeKnowledgeBaseConfigurationId).not.toBe(before.id);
    const now = await configuration();
    expect(now.id).toBe(after.activeKnowledgeBaseConfigurationId);
    expect(now.embedding).toMatchObject({ model: 'test/tiny-new', dimensions: 48 });
    expect(now.warning).toBeUndefined();
    expect(after.ingestion.contents.ready).toBe(ITEMS + 1);
    const found = await semantic('truck engine');
    expect(found.status).toBe(200);
    expect(found.body.data.map((h: { contentId: string }) => h.contentId)).toContain(added.body.data.id);
    expect((await server.api('GET', '/ready')).body.reembedding).toBeUndefined();
  }, 300_000);

  test('REEMBED_ON_START=false leaves it on its model until POST …/reembed asks', async () => {
    await server!.stop();
    server = await start('test/tiny-third', { REEMBED_ON_START: 'false' });
    await Bun.sleep(500);
    const still = await read();
    expect(still.reembedding ?? null).toBeNull();
    expect((await configuration()).embedding.model).toBe('test/tiny-new');
    // Searches go on with the model the knowledge base was built with.
    expect((await semantic('automobile')).body.data.length).toBe(5);

    const asked = await server!.api('POST', `${API}/knowledge-bases/${kb}/reembed`);
    expect(asked.status).toBe(200);
    expect(asked.body.data).toMatchObject({ status: 'started', reembedding: { model: 'test/tiny-third', total: ITEMS + 1 } });
    const again = await server!.api('POST', `${API}/knowledge-bases/${kb}/reembed`);
    expect(again.status).toBe(200);
    expect(['running', 'current']).toContain(again.body.data.status);
    await eventually('switched to the third model', configuration, (c) => c.embedding.model === 'test/tiny-third', 120_000);
    const done = await server!.api('POST', `${API}/knowledge-bases/${kb}/reembed`);
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ status: 'current', reembedding: null });
    // Another organization cannot ask for it.
    const other = await server!.api('POST', `${API}/knowledge-bases/${kb}/reembed`, undefined, { org: 'org_other', key: 'other-key-9876543210' });
    expect(other.status).toBe(404);
  }, 180_000);

  test('a knowledge base made on USE-Lite moves to the shipped model at the next start, and its warning goes with it', async () => {
    const dir = TestServer.tempDir();
    const env = { RATE_LIMIT_RPS: '0', SNAPSHOT_ON_SHUTDOWN: 'false' };
    let old: TestServer | undefined = await TestServer.start({ dataDir: dir, env: { ...env, HIGH_QUALITY_MODEL: 'use-lite' } });
    try {
      const id = (await old.api('POST', `${API}/knowledge-bases`, { name: 'Old', type: 'TEXT_HIGH_QUALITY' })).body.data.id;
      for (const text of [
        'Expense claims for travel are filed within 30 days.',
        'Refunds are issued within 14 days.',
        'Passwords are reset from the account page.',
      ]) {
        expect((await old.api('POST', `${API}/knowledge-bases/${id}/contents?wait=true`, { text })).body.data.status).toBe('ready');
      }
      expect((await old.api('GET', `${API}/knowledge-bases/${id}/configuration`)).body.data.warning).toContain('Universal Sentence Encoder Lite');
      await old.stop();
      // The defaults: every type served by the shipped model.
      old = await TestServer.start({ dataDir: dir, env });
      const now = await eventually(
        'moved to the shipped model',
        async () => (await old!.api('GET', `${API}/knowledge-bases/${id}/configuration`)).body.data,
        (c) => c.embedding.model === 'Xenova/all-MiniLM-L6-v2',
        60_000,
      );
      expect(now.warning).toBeUndefined();
      expect((await old.api('GET', '/ready')).body.warnings).toEqual([]);
      const hits = (await old.api('POST', `${API}/knowledge-bases/${id}/search/semantic`, { query: 'getting reimbursed for a business trip', limit: 1 })).body
        .data;
      expect(hits[0].contentChunk).toContain('Expense claims');
    } finally {
      await old?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  test('the CLI re-embeds with a progress bar and says when the new configuration answers', async () => {
    await server!.stop();
    server = await start('test/tiny-old', { REEMBED_ON_START: 'false' });
    const run = Bun.spawn(['bun', join(import.meta.dir, '..', 'src', 'cli', 'main.ts'), 'kb', 'reembed', kb], {
      env: { ...process.env, KB_URL: server.url, KB_ORG: 'org_test', KB_KEY: 'test-key-0123456789' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [code, out, err] = await Promise.all([run.exited, new Response(run.stdout).text(), new Response(run.stderr).text()]);
    console.log(`[reembed] kb reembed output:\n${out}${err}`);
    expect(code).toBe(0);
    expect(out).toContain('re-embedding');
    expect(out).toContain('test/tiny-old');
    expect(out + err).toMatch(/\d+\/1201 items/);
    expect(out).toContain('now answers from configuration');
    expect((await configuration()).embedding.model).toBe('test/tiny-old');
    // Nothing left to do: said so, exit 0.
    const again = Bun.spawnSync(['bun', join(import.meta.dir, '..', 'src', 'cli', 'main.ts'), 'kb', 'reembed', kb], {
      env: { ...process.env, KB_URL: server.url, KB_ORG: 'org_test', KB_KEY: 'test-key-0123456789' },
    });
    expect(again.exitCode).toBe(0);
    expect(again.stdout.toString()).toContain('already uses the model');
  }, 180_000);
});
