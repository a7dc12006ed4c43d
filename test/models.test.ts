// Type → model configuration, and the transformers.js path end to end through the server's worker
// threads, with a tiny model the test generates (no hub, no download).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../src/config';
import type { EmbeddingConfig } from '../engine';
import { chunkingFor, resolveModel, typeEmbeddings } from '../src/kb-types';
import { writeTinyModel } from './fixtures/tiny-model';
import { addContent, createKb, InProcessServer } from './helpers/server';

const modelDir = InProcessServer.tempDir();
let server: InProcessServer;

function configWith(env: Record<string, string>) {
  return loadConfig({ ...process.env, ...env });
}

beforeAll(async () => {
  // Under the id of bge-small, so `auto` picks it up as the high-quality model.
  await writeTinyModel(modelDir, { modelId: 'Xenova/bge-small-en-v1.5', dimensions: 384 });
  server = await InProcessServer.start({ env: { EMBEDDING_MODEL_DIR: modelDir } });
});

afterAll(async () => {
  await server.stop();
  server.cleanup();
  rmSync(modelDir, { recursive: true, force: true });
});

describe('type → embedding configuration', () => {
  test('without a local model, every type uses the shipped all-MiniLM-L6-v2 (int8); cost-effective stores i8 vectors', () => {
    const config = configWith({ EMBEDDING_MODEL_DIR: '/nonexistent' });
    const types = typeEmbeddings(config);
    const shipped = { provider: 'transformers', model: 'Xenova/all-MiniLM-L6-v2', dimensions: 384, pooling: 'mean', maxTokens: 256, precision: 'int8' };
    expect(types.TEXT_HIGH_QUALITY).toMatchObject({ ...shipped, quantization: 'f32' });
    expect(types.TEXT_AND_MEDIA_HIGH_QUALITY).toMatchObject({ ...shipped, quantization: 'f32' });
    expect(types.TEXT_COST_EFFECTIVE).toMatchObject({ ...shipped, quantization: 'i8' });
    // USE-Lite only when asked for.
    expect(typeEmbeddings(configWith({ EMBEDDING_MODEL_DIR: '/nonexistent', COST_EFFECTIVE_MODEL: 'use-lite' })).TEXT_COST_EFFECTIVE).toMatchObject({
      provider: 'use-lite',
      dimensions: 512,
      quantization: 'i8',
    });
  });

  test('auto picks bge-small when it is in the model directory, with CLS pooling and its query instruction', () => {
    const spec = resolveModel('auto', configWith({ EMBEDDING_MODEL_DIR: modelDir }));
    expect(spec).toMatchObject({ provider: 'transformers', model: 'Xenova/bge-small-en-v1.5', dimensions: 384, pooling: 'cls' });
    expect((spec as { queryPrefix?: string }).queryPrefix).toContain('Represent this sentence');
  });

  test('auto prefers bge-base > bge-small > MiniLM-L12 > MiniLM-L6: the real MiniLM-L6 alone is picked, with mean pooling and 256 tokens', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-auto-'));
    try {
      mkdirSync(join(dir, 'Xenova'));
      symlinkSync(resolve(import.meta.dir, '..', '..', 'shared', 'models', 'Xenova', 'all-MiniLM-L6-v2'), join(dir, 'Xenova', 'all-MiniLM-L6-v2'));
      expect(resolveModel('auto', configWith({ EMBEDDING_MODEL_DIR: dir }))).toMatchObject({
        provider: 'transformers',
        model: 'Xenova/all-MiniLM-L6-v2',
        dimensions: 384,
        pooling: 'mean',
        maxTokens: 256,
      });
      // With bge-small beside it, bge-small wins.
      symlinkSync(join(modelDir, 'Xenova', 'bge-small-en-v1.5'), join(dir, 'Xenova', 'bge-small-en-v1.5'));
      expect(resolveModel('auto', configWith({ EMBEDDING_MODEL_DIR: dir })).model).toBe('Xenova/bge-small-en-v1.5');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('fp32 unless EMBEDDING_PRECISION=int8; the other export when only it is present; the precision is recorded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kb-precision-'));
    try {
      mkdirSync(join(dir, 'Xenova'));
      symlinkSync(resolve(import.meta.dir, '..', '..', 'shared', 'models', 'Xenova', 'all-MiniLM-L6-v2'), join(dir, 'Xenova', 'all-MiniLM-L6-v2'));
      const minilm = 'transformers:Xenova/all-MiniLM-L6-v2';
      expect(resolveModel(minilm, configWith({ EMBEDDING_MODEL_DIR: dir }))).toMatchObject({ precision: 'fp32' });
      expect(resolveModel(minilm, configWith({ EMBEDDING_MODEL_DIR: dir, EMBEDDING_PRECISION: 'int8' }))).toMatchObject({ precision: 'int8' });
      await writeTinyModel(dir, { modelId: 'Xenova/bge-small-en-v1.5', dimensions: 384, quantizedFile: true });
      expect(resolveModel('transformers:Xenova/bge-small-en-v1.5', configWith({ EMBEDDING_MODEL_DIR: dir }))).toMatchObject({ precision: 'int8' });
      expect(resolveModel('transformers:Xenova/bge-small-en-v1.5', configWith({ EMBEDDING_MODEL_DIR: dir, EMBEDDING_PRECISION: 'int8' }))).toMatchObject({
        precision: 'int8',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('chunks fit what the model embeds best: MiniLM trained on 128 word pieces → 512 characters, bge 512 → 2,048, USE-Lite 1,000; CHUNK_SIZE overrides', () => {
    const config = configWith({ EMBEDDING_MODEL_DIR: modelDir });
    const minilm = { ...resolveModel('transformers:Xenova/all-MiniLM-L6-v2', config), metric: 'cosine', quantization: 'f32' } as EmbeddingConfig;
    const bge = { ...resolveModel('transformers:Xenova/bge-small-en-v1.5', config), metric: 'cosine', quantization: 'f32' } as EmbeddingConfig;
    const useLite = { ...resolveModel('use-lite', config), metric: 'cosine', quantization: 'f32' } as EmbeddingConfig;
    expect(chunkingFor(minilm, config)).toEqual({ size: 512, overlap: 51 });
    expect(chunkingFor(bge, config)).toEqual({ size: 2048, overlap: 205 });
    expect(chunkingFor(useLite, config)).toEqual({ size: 1000, overlap: 100 });
    expect(chunkingFor(minilm, configWith({ CHUNK_SIZE: '700' }))).toEqual({ size: 700, overlap: 70 });
    expect(chunkingFor(minilm, configWith({ CHUNK_SIZE: '700', CHUNK_OVERLAP: '0' }))).toEqual({ size: 700, overlap: 0 });
  });

  test('explicit settings and their errors', () => {
    const config = configWith({ EMBEDDING_MODEL_DIR: modelDir, EMBEDDING_HTTP_DIMENSIONS: '1536' });
    expect(resolveModel('http:text-embedding-3-small', config)).toEqual({ provider: 'http', model: 'text-embedding-3-small', dimensions: 1536 });
    expect(resolveModel('transformers:Xenova/all-MiniLM-L6-v2', config)).toMatchObject({ pooling: 'mean', dimensions: 384 });
    expect(() => resolveModel('transformers:Nobody/unknown-model', config)).toThrow(/not found/);
    expect(() => resolveModel('word2vec', config)).toThrow(/unknown model setting/);
    expect(() => resolveModel('http:m', configWith({}))).toThrow(/EMBEDDING_HTTP_DIMENSIONS/);
  });
});

describe('a transformers.js model served by the worker threads', () => {
  test('the configuration records it, content is embedded with it, and semantic search uses it', async () => {
    const kb = await createKb(server, 'Tiny model', 'TEXT_HIGH_QUALITY');
    const cfg = (await server.api('GET', `/api/v1/knowledge-bases/${kb}/configuration`)).body.data;
    expect(cfg.embedding).toMatchObject({ provider: 'transformers', model: 'Xenova/bge-small-en-v1.5', dimensions: 384, quantization: 'f32' });
    expect(cfg.chunking).toEqual({ size: 2048, overlap: 205 }); // bge reads 512 word pieces
    const car = await addContent(server, kb, 'the red truck and the bus');
    await addContent(server, kb, 'a banana and a mango');
    await addContent(server, kb, 'rain and snow storm');
    // "automobile" shares no word with the truck text; the tiny model puts vehicles together.
    const hits = (await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/semantic`, { query: 'automobile' })).body.data;
    expect(hits[0].contentId).toBe(car);
    expect((await server.api('POST', `/api/v1/knowledge-bases/${kb}/search/full-text`, { query: 'automobile' })).body.data).toEqual([]);
    // The cost-effective type keeps the shipped MiniLM (its folder searched after EMBEDDING_MODEL_DIR) with i8 vectors in the same server.
    const cheap = await createKb(server, 'Cheap', 'TEXT_COST_EFFECTIVE');
    const cheapCfg = (await server.api('GET', `/api/v1/knowledge-bases/${cheap}/configuration`)).body.data;
    expect(cheapCfg.embedding).toMatchObject({ provider: 'transformers', model: 'Xenova/all-MiniLM-L6-v2', precision: 'int8', quantization: 'i8' });
    expect((await server.api('POST', `/api/v1/knowledge-bases/${cheap}/contents?wait=true`, { text: 'the red truck and the bus' })).body.data.status).toBe(
      'ready',
    );
    expect(await server.waitForOutput('"model":"Xenova/bge-small-en-v1.5"')).toBe(true);
  });
});

describe('a high-quality type served by USE-Lite (asked for) is said loudly', () => {
  test('at start-up, in /ready and in the knowledge base configuration; not when a model serves it', async () => {
    const ready = (await server.api('GET', '/ready', undefined, null)).body;
    expect(ready.warnings).toEqual([]);
    const hq = await createKb(server, 'Served by the model', 'TEXT_HIGH_QUALITY');
    expect((await server.api('GET', `/api/v1/knowledge-bases/${hq}/configuration`)).body.data.warning).toBeUndefined();

    const bare = await InProcessServer.start({ env: { EMBEDDING_MODEL_DIR: join(tmpdir(), 'kb-no-models-here'), HIGH_QUALITY_MODEL: 'use-lite' } });
    try {
      const warnings: string[] = (await bare.api('GET', '/ready', undefined, null)).body.warnings;
      expect(warnings.map((w) => w.split(' ')[0])).toEqual(['TEXT_HIGH_QUALITY', 'TEXT_AND_MEDIA_HIGH_QUALITY']);
      expect(warnings[0]).toContain('HIGH_QUALITY_MODEL=use-lite');
      expect(warnings[0]).toContain('bun run models pull');
      expect(bare.output.some((l) => l.includes('"level":40') && l.includes('TEXT_HIGH_QUALITY is served by the small Universal Sentence Encoder Lite'))).toBe(
        true,
      );
      const fallback = await createKb(bare, 'Fallback', 'TEXT_HIGH_QUALITY');
      expect((await bare.api('GET', `/api/v1/knowledge-bases/${fallback}/configuration`)).body.data.warning).toContain('Universal Sentence Encoder Lite');
      const cheap = await createKb(bare, 'Cheap', 'TEXT_COST_EFFECTIVE');
      expect((await bare.api('GET', `/api/v1/knowledge-bases/${cheap}/configuration`)).body.data.warning).toBeUndefined();
    } finally {
      await bare.stop();
      bare.cleanup();
    }
  }, 60_000);
});
