// Worker crash handling, end to end through the engine: the crashed worker is replaced, the batch
// retried once, and content that keeps crashing its worker ends `failed` with a readable error.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine } from '../../engine';
import { textKbConfig } from '../helpers/kb-config';
import { TestServer } from '../helpers/server';

const dir = TestServer.tempDir();
const crashTag = `t${Date.now()}`;
let engine: Engine;
const ORG = 'org_w';
let kbId: string;

beforeAll(async () => {
  engine = await Engine.open({
    dataDir: dir,
    compute: { documentWorkers: 1, workerUrl: new URL('../fixtures/crashy-worker.ts', import.meta.url) },
    batchItems: 1,
    log: () => {},
  });
  const kb = await engine.createKnowledgeBase(ORG, {
    name: 'w',
    description: '',
    type: 'TEXT_HIGH_QUALITY',
    config: textKbConfig(
      { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512, metric: 'cosine', quantization: 'f32' },
      { chunking: { size: 1000, overlap: 100 }, hnsw: { connectivity: 16, expansionAdd: 64, expansionSearch: 64 } },
    ),
  });
  kbId = kb.id;
});

afterAll(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(join(tmpdir(), `kb-crash-once-${crashTag}`), { force: true });
});

test('content that crashes its worker twice is marked failed; the pool recovers and keeps indexing', async () => {
  const bad = (await engine.addContent(ORG, kbId, { text: 'This text says CRASH-WORKER every time.' }))!;
  const good = (await engine.addContent(ORG, kbId, { text: 'An ordinary note about gardening.' }))!;
  await engine.waitForContent(bad, 30_000);
  await engine.waitForContent(good, 30_000);
  expect(bad.status).toBe('failed');
  expect(bad.error).toContain('crashed 2 times');
  expect(good.status).toBe('ready');
  const hits = await engine.searchSemantic(ORG, kbId, { query: 'gardening', limit: 5 });
  expect(hits!.map((h) => h.contentId)).toEqual([good.id]);
});

test('a crash on the first attempt only is retried on a fresh worker and succeeds', async () => {
  const flaky = (await engine.addContent(ORG, kbId, { text: `CRASH-ONCE:${crashTag} a note about bicycles.` }))!;
  await engine.waitForContent(flaky, 30_000);
  expect(flaky.status).toBe('ready');
});
