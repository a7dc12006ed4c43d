// The engine's typed outcomes (engine/errors.ts): each failure a caller can meet is an EngineError
// with its code and details, never undefined or false; and the server's one table (src/errors.ts)
// gives every code an API code and status. Checked on a real engine with a real log on disk.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineError, MemoryLog, type Engine, type EngineErrorCode } from '../../engine';
import { EXTRACTION_ERROR_CODES } from '../../engine/extract/errors';
import { openEngine } from '../../snapshots';
import { API_CODE_OF_ENGINE, apiErrorOf, STATUS_OF } from '../../src/errors';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';

const ORG = 'org_errors';
const dirs: string[] = [];
let engine: Engine;

async function open(options: Parameters<typeof openEngine>[0] extends infer O ? Partial<O> : never = {}): Promise<Engine> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-errors-'));
  dirs.push(dataDir);
  return (await openEngine({ dataDir, compute: { documentWorkers: 1, settings: { allowRemoteModels: false, threads: 1 } }, log: () => {}, ...options })).engine;
}

/** The code an engine call fails with (sync or async). */
async function codeOf(call: () => unknown): Promise<{ code: EngineErrorCode; details: unknown }> {
  try {
    await call();
  } catch (err) {
    expect(err).toBeInstanceOf(EngineError);
    const { code, details } = err as EngineError;
    return { code, details };
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  // The log in memory: these checks need no disk for it.
  engine = await open({ quotas: { knowledgeBases: 5, contents: 3 }, recordLog: new MemoryLog() });
});

afterAll(async () => {
  await engine?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const newKb = (orgId = ORG, embedding = NO_EMBEDDING) =>
  engine.createKnowledgeBase(orgId, { name: 'kb', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(embedding) });

describe('typed outcomes of the engine', () => {
  test("KNOWLEDGE_BASE_NOT_FOUND: an unknown id, or another organization's, for every method about a knowledge base", async () => {
    const kb = await newKb();
    const calls: [string, (kbId: string, org: string) => unknown][] = [
      ['getKnowledgeBase', (id, org) => engine.getKnowledgeBase(org, id)],
      ['updateKnowledgeBase', (id, org) => engine.updateKnowledgeBase(org, id, { name: 'x' })],
      ['deleteKnowledgeBase', (id, org) => engine.deleteKnowledgeBase(org, id)],
      ['listContents', (id, org) => engine.listContents(org, id, 0, 10)],
      ['addContent', (id, org) => engine.addContent(org, id, { text: 'hello' })],
      ['reindexFailed', (id, org) => engine.reindexFailed(org, id)],
      ['ingestionProgress', (id, org) => engine.ingestionProgress(org, id)],
      ['reembedProgress', (id, org) => engine.reembedProgress(org, id)],
      ['searchFullText', (id, org) => engine.searchFullText(org, id, { query: 'hello', limit: 5 })],
      ['searchSemantic', (id, org) => engine.searchSemantic(org, id, { query: 'hello', limit: 5 })],
      ['searchHybrid', (id, org) => engine.searchHybrid(org, id, { query: 'hello', limit: 5, semanticWeight: 0.5, fusion: 'weighted' })],
    ];
    for (const [name, call] of calls) {
      for (const [id, org] of [
        ['kb_0000000000000000000000000000', ORG],
        [kb.id, 'org_someone_else'],
      ] as const) {
        const { code, details } = await codeOf(() => call(id, org));
        expect({ name, code }).toEqual({ name, code: 'KNOWLEDGE_BASE_NOT_FOUND' });
        expect(details).toEqual({ kbId: id });
      }
    }
    // And nothing changed: the knowledge base is still there, under its name.
    expect(engine.getKnowledgeBase(ORG, kb.id).name).toBe('kb');
  });

  test('CONTENT_NOT_FOUND: an unknown item of a knowledge base that exists', async () => {
    const kb = await newKb();
    const missing = 'ct_0000000000000000000000000000';
    for (const call of [
      () => engine.getContent(ORG, kb.id, missing),
      () => engine.updateContent(ORG, kb.id, missing, { text: 'new' }),
      () => engine.deleteContent(ORG, kb.id, missing),
      () => engine.reindexContent(ORG, kb.id, missing),
    ]) {
      expect(await codeOf(call)).toEqual({ code: 'CONTENT_NOT_FOUND', details: { kbId: kb.id, contentId: missing } });
    }
  });

  test('CONTENT_ID_TAKEN: a caller-made id that is malformed or already used', async () => {
    const kb = await newKb('org_ids');
    const item = await engine.addContent('org_ids', kb.id, { text: 'first' });
    expect((await codeOf(() => engine.addContent('org_ids', kb.id, { id: item.id, text: 'again' }))).code).toBe('CONTENT_ID_TAKEN');
    expect((await codeOf(() => engine.addContent('org_ids', kb.id, { id: 'not-an-id', text: 'again' }))).code).toBe('CONTENT_ID_TAKEN');
    expect(engine.listContents('org_ids', kb.id, 0, 10).total).toBe(1);
  });

  test('QUOTA_EXCEEDED: exact under concurrency, for knowledge bases and for items', async () => {
    const org = 'org_quota';
    const made = await Promise.allSettled(Array.from({ length: 20 }, () => newKb(org)));
    expect(made.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    for (const r of made)
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'knowledgeBases', limit: 5 } });
    expect(engine.listKnowledgeBases(org)).toHaveLength(5);

    const kbId = engine.listKnowledgeBases(org)[0]!.id;
    const added = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => engine.addContent(org, kbId, { text: `item ${i}` })));
    expect(added.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of added) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'contents', limit: 3 } });
    expect(engine.listContents(org, kbId, 0, 100).total).toBe(3);
    expect((await codeOf(() => engine.checkQuota(org, 'contents'))).code).toBe('QUOTA_EXCEEDED');
  });

  test('EMBEDDING_FAILED: a semantic search whose model cannot load', async () => {
    const kb = await newKb('org_model', {
      provider: 'transformers',
      model: 'nobody/no-such-model',
      dimensions: 8,
      pooling: 'mean',
      metric: 'cosine',
      quantization: 'f32',
    });
    expect((await codeOf(() => engine.searchSemantic('org_model', kb.id, { query: 'hello', limit: 5 }))).code).toBe('EMBEDDING_FAILED');
    // Full-text search of the same knowledge base still answers.
    expect(engine.searchFullText('org_model', kb.id, { query: 'hello', limit: 5 })).toEqual([]);
  });

  test('INVALID_QUERY: exclusions only, or a phrase of stop words, in full-text and hybrid', async () => {
    const kb = await newKb('org_query', NO_EMBEDDING);
    for (const query of ['-refund', '-"gift card"', '"the of"', 'refund -the']) {
      expect(await codeOf(() => engine.searchFullText('org_query', kb.id, { query, limit: 5 }))).toMatchObject({
        code: 'INVALID_QUERY',
        details: { field: 'query' },
      });
      expect((await codeOf(() => engine.searchHybrid('org_query', kb.id, { query, limit: 5, semanticWeight: 0, fusion: 'weighted' }))).code).toBe(
        'INVALID_QUERY',
      );
    }
    // Words only, even stop words only: no syntax to refuse (nothing matches).
    expect(engine.searchFullText('org_query', kb.id, { query: 'the of', limit: 5 })).toEqual([]);
  });

  test('ENGINE_CLOSED: a write after close is refused, not lost silently', async () => {
    const closing = await open();
    const kb = await closing.createKnowledgeBase(ORG, { name: 'kb', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });
    await closing.close();
    expect((await codeOf(() => closing.addContent(ORG, kb.id, { text: 'late' }))).code).toBe('ENGINE_CLOSED');
    expect((await codeOf(() => closing.sealLog())).code).toBe('ENGINE_CLOSED');
  });
});

describe("the server's one table of engine codes", () => {
  test('every engine code has an API code, and so a status', () => {
    const codes = Object.keys(API_CODE_OF_ENGINE) as EngineErrorCode[];
    for (const code of EXTRACTION_ERROR_CODES) expect(codes).toContain(code);
    const statuses = Object.fromEntries(codes.map((code) => [code, STATUS_OF[API_CODE_OF_ENGINE[code]]]));
    expect(statuses).toEqual({
      KNOWLEDGE_BASE_NOT_FOUND: 404,
      CONTENT_NOT_FOUND: 404,
      CONTENT_ID_TAKEN: 500,
      QUOTA_EXCEEDED: 403,
      RECORD_TOO_LARGE: 413,
      EMBEDDING_FAILED: 502,
      SHARD_NOT_HELD: 503,
      ENGINE_CLOSED: 503,
      INVALID_QUERY: 400,
      UNSUPPORTED_FILE_TYPE: 400,
      EMPTY_FILE: 400,
      NO_TEXT_EXTRACTED: 400,
      EXTRACTION_FAILED: 502,
      TOO_LARGE: 413,
    });
  });

  test('answers carry what a client can act on, and nothing internal', () => {
    const quota = apiErrorOf(
      new EngineError('QUOTA_EXCEEDED', 'the organization already holds its quota of 5 knowledge bases', { quota: 'knowledgeBases', limit: 5 }),
    );
    expect({ code: quota.code, status: quota.status, details: quota.details }).toEqual({
      code: 'QUOTA_EXCEEDED',
      status: 403,
      details: [{ path: '/', message: 'at most 5 knowledge bases per organization' }],
    });
    const moved = apiErrorOf(new EngineError('SHARD_NOT_HELD', "This node does not hold the knowledge base's content", { kbId: 'kb_x', shard: 1, nodes: [] }));
    expect(moved.headers).toEqual({ 'retry-after': '1' });
    const internal = apiErrorOf(new EngineError('CONTENT_ID_TAKEN', 'The content id ct_x is malformed or already used', { kbId: 'kb_x', contentId: 'ct_x' }));
    expect(internal.message).toBe('Internal server error');
  });
});
