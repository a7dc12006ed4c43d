// Re-embedding at the engine (engine/methods/reembed.ts): a knowledge base moves from one model to
// another while it answers. Two tiny generated sentence-transformers of different sizes stand for
// the old and the new model. Searches answer from the old configuration, with the old model's
// query vectors, until every item is built for the new one; writes meanwhile reach both; the switch
// is one step; a build goes on after a restart (and a snapshot) from where it stopped; asking again
// for the build under way, or for the active configuration, does what it says.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine, EngineOptions, KnowledgeBaseConfig } from '../../engine';
import { openEngine } from '../../snapshots';
import { writeTinyModel } from '../fixtures/tiny-model';
import { textKbConfig } from '../helpers/kb-config';

const ORG = 'org_reembed';
let modelDir: string;
const dirs: string[] = [];
const engines: Engine[] = [];
let oldModel: KnowledgeBaseConfig['embedding'];
let newModel: KnowledgeBaseConfig['embedding'];

const WORDS = ['car', 'banana', 'dog', 'computer', 'rain', 'money'];
/** Item n speaks of one concept, so a search for it finds a sixth of the items. */
const textOf = (n: number) => `Note ${n}: the ${WORDS[n % WORDS.length]} and the ${WORDS[n % WORDS.length]} again, item ${n}.`;

beforeAll(async () => {
  modelDir = mkdtempSync(join(tmpdir(), 'kb-reembed-models-'));
  const a = await writeTinyModel(modelDir, { modelId: 'test/tiny-old', dimensions: 32, seed: 1 });
  const b = await writeTinyModel(modelDir, { modelId: 'test/tiny-new', dimensions: 48, seed: 2 });
  oldModel = { provider: 'transformers', model: a.modelId, dimensions: a.dimensions, pooling: 'mean', metric: 'cosine', quantization: 'f32' };
  newModel = { provider: 'transformers', model: b.modelId, dimensions: b.dimensions, pooling: 'mean', metric: 'cosine', quantization: 'f32' };
});

afterAll(async () => {
  for (const e of engines.splice(0)) await e.close().catch(() => {});
  for (const d of [...dirs, modelDir]) rmSync(d, { recursive: true, force: true });
});

async function open(dataDir: string, options: Partial<EngineOptions> = {}) {
  const { engine, snapshots } = await openEngine({
    dataDir,
    compute: { documentWorkers: 1, settings: { modelDir, allowRemoteModels: false, threads: 1 } },
    log: () => {},
    ...options,
  });
  engines.push(engine);
  return { engine, snapshots };
}

async function close(engine: Engine) {
  await engine.close();
  engines.splice(engines.indexOf(engine), 1);
}

async function settle(engine: Engine, kbId: string) {
  for (let i = 0; i < 2000 && (engine.stats().queueDepth > 0 || engine.reembedProgress(ORG, kbId)); i++) await Bun.sleep(10);
}

const semantic = (engine: Engine, kbId: string, query: string) => engine.searchSemantic(ORG, kbId, { query, limit: 5 });

describe('re-embedding a knowledge base', () => {
  test('searches answer from the old model until the new one is complete; writes meanwhile reach both; then one switch', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kb-reembed-'));
    dirs.push(dataDir);
    const { engine } = await open(dataDir);
    const kb = await engine.createKnowledgeBase(ORG, { name: 'notes', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(oldModel) });
    for (let n = 0; n < 60; n++) await engine.addContent(ORG, kb.id, { text: textOf(n) });
    await settle(engine, kb.id);
    const before = await semantic(engine, kb.id, 'automobile');
    expect(before!.length).toBe(5);

    // Held: the build is logged, nothing is indexed yet, so what searches see can be checked mid-way.
    const { engine: held } = await (async () => {
      await close(engine);
      return open(dataDir, { holdIngestion: true });
    })();
    const oldConfigId = held.getKnowledgeBase(ORG, kb.id)!.config.id;
    expect(await held.reembed(ORG, kb.id, textKbConfig(newModel))).toBe('started');
    // Asking again for what is being built changes nothing.
    expect(await held.reembed(ORG, kb.id, textKbConfig(newModel))).toBe('running');
    const progress = held.reembedProgress(ORG, kb.id)!;
    expect(progress).toMatchObject({ model: 'test/tiny-new', done: 0, total: 60, etaSeconds: null });
    // The active configuration still answers, with the old model (32 dimensions).
    expect(held.getKnowledgeBase(ORG, kb.id)!.config.id).toBe(oldConfigId);
    expect(await semantic(held, kb.id, 'automobile')).toEqual(before);
    // A write during the build: an update and a new item.
    const added = (await held.addContent(ORG, kb.id, { text: 'A new note about a truck and its engine.' }))!;
    held.startIngestion();
    await settle(held, kb.id);

    const after = held.getKnowledgeBase(ORG, kb.id)!;
    expect(after.config.id).not.toBe(oldConfigId);
    expect(after.config.embedding.model).toBe('test/tiny-new');
    expect(held.reembedProgress(ORG, kb.id)).toBeUndefined();
    const kbState = held.knowledgeBase(kb.id)!;
    expect(kbState.vectors!.dimensions).toBe(48);
    expect(held.getContent(ORG, kb.id, added.id)!.status).toBe('ready');
    for (const item of kbState.contents.values()) expect(item.status).toBe('ready');
    // Every chunk was made again: 61 items, one chunk each, all with a new vector.
    expect(kbState.chunkCount).toBe(61);
    expect(kbState.vectorCount).toBe(61);
    const found = await semantic(held, kb.id, 'truck engine');
    expect(found!.map((h) => h.contentId)).toContain(added.id);
  }, 120_000);

  test('a build goes on after a restart from where it stopped, also from a snapshot', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kb-reembed-'));
    dirs.push(dataDir);
    const first = (await open(dataDir)).engine;
    const kb = await first.createKnowledgeBase(ORG, { name: 'notes', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(oldModel) });
    for (let n = 0; n < 200; n++) await first.addContent(ORG, kb.id, { text: textOf(n) });
    await settle(first, kb.id);
    await first.reembed(ORG, kb.id, textKbConfig(newModel));
    // Stop part-way through the build.
    for (let i = 0; i < 1000 && (first.reembedProgress(ORG, kb.id)?.done ?? 0) < 20; i++) await Bun.sleep(5);
    const doneAtStop = first.reembedProgress(ORG, kb.id)!.done;
    expect(doneAtStop).toBeGreaterThan(0);
    expect(doneAtStop).toBeLessThan(200);
    await close(first);

    // A snapshot of the state part-way, then the rest of the log.
    const second = await open(dataDir, { holdIngestion: true });
    expect(second.engine.reembedProgress(ORG, kb.id)!.done).toBeGreaterThanOrEqual(doneAtStop);
    const snap = await second.snapshots.snapshot();
    expect(snap.seq).toBeGreaterThan(0);
    // Both index sets dumped (the active one and the one being built), and loaded by the next start.
    expect(snap.manifest.indexes?.map((d) => d.kbId)).toEqual([kb.id, kb.id]);
    await close(second.engine);

    const warnings: string[] = [];
    const third = (await open(dataDir, { log: (level, message) => level === 'warn' && warnings.push(message) })).engine;
    expect(warnings).toEqual([]);
    expect(third.reembedProgress(ORG, kb.id)?.done ?? 200).toBeGreaterThanOrEqual(doneAtStop);
    await settle(third, kb.id);
    expect(third.getKnowledgeBase(ORG, kb.id)!.config.embedding.model).toBe('test/tiny-new');
    expect(third.knowledgeBase(kb.id)!.vectorCount).toBe(200);
    expect((await semantic(third, kb.id, 'automobile'))!.length).toBe(5);
  }, 120_000);

  test('asking for the active configuration cancels a build; a knowledge base without items switches at once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kb-reembed-'));
    dirs.push(dataDir);
    const { engine } = await open(dataDir, { holdIngestion: true });
    const kb = await engine.createKnowledgeBase(ORG, { name: 'notes', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(oldModel) });
    await engine.addContent(ORG, kb.id, { text: textOf(1) });
    expect(await engine.reembed(ORG, kb.id, textKbConfig(newModel))).toBe('started');
    expect(engine.buildingConfiguration(ORG, kb.id)?.embedding.model).toBe('test/tiny-new');
    expect(await engine.reembed(ORG, kb.id, textKbConfig(oldModel))).toBe('current');
    expect(engine.buildingConfiguration(ORG, kb.id)).toBeUndefined();
    expect(engine.reembedProgress(ORG, kb.id)).toBeUndefined();

    const empty = await engine.createKnowledgeBase(ORG, { name: 'empty', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(oldModel) });
    expect(await engine.reembed(ORG, empty.id, textKbConfig(newModel))).toBe('started');
    for (let i = 0; i < 100 && engine.getKnowledgeBase(ORG, empty.id)!.config.embedding.model !== 'test/tiny-new'; i++) await Bun.sleep(10);
    expect(engine.getKnowledgeBase(ORG, empty.id)!.config.embedding.model).toBe('test/tiny-new');
    // Another organization's knowledge base is not there for this one.
    await expect(engine.reembed('org_other', kb.id, textKbConfig(newModel))).rejects.toMatchObject({ code: 'KNOWLEDGE_BASE_NOT_FOUND' });
  }, 60_000);

  test('a knowledge base built with an older analyzer keeps answering, and is re-embedded with the new one', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kb-reembed-'));
    dirs.push(dataDir);
    const { engine } = await open(dataDir);
    // As knowledge bases made before the analyzer changed are recorded: analyzer 1 (absent).
    const { analyzer: _now, ...before } = textKbConfig(oldModel);
    const kb = await engine.createKnowledgeBase(ORG, { name: 'notes', description: '', type: 'TEXT_HIGH_QUALITY', config: before });
    for (let n = 0; n < 12; n++) await engine.addContent(ORG, kb.id, { text: textOf(n) });
    await settle(engine, kb.id);
    // Indexed, whatever analysis produced the records: its items are ready and found.
    expect(engine.knowledgeBase(kb.id)!.chunkCount).toBe(12);
    expect(engine.searchFullText(ORG, kb.id, { query: 'banana', limit: 5 })!.length).toBe(2);
    // Same model and chunking, newer analysis: a build, not "current".
    expect(await engine.reembed(ORG, kb.id, textKbConfig(oldModel))).toBe('started');
    await settle(engine, kb.id);
    expect(engine.getKnowledgeBase(ORG, kb.id)!.config.analyzer).toBe(textKbConfig(oldModel).analyzer);
    expect(engine.searchFullText(ORG, kb.id, { query: 'banana', limit: 5 })!.length).toBe(2);
    expect(await engine.reembed(ORG, kb.id, textKbConfig(oldModel))).toBe('current');
  }, 60_000);

  test('deleting the last item a build waits for completes it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kb-reembed-'));
    dirs.push(dataDir);
    const { engine } = await open(dataDir, { holdIngestion: true });
    const kb = await engine.createKnowledgeBase(ORG, { name: 'notes', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(oldModel) });
    const only = (await engine.addContent(ORG, kb.id, { text: textOf(2) }))!;
    await engine.reembed(ORG, kb.id, textKbConfig(newModel));
    await engine.deleteContent(ORG, kb.id, only.id);
    expect(engine.getKnowledgeBase(ORG, kb.id)!.config.embedding.model).toBe('test/tiny-new');
  }, 60_000);
});
