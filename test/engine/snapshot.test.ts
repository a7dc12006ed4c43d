// Snapshots through the engine library: compaction, graphs, restart from a snapshot plus the log
// after it, fallback past a corrupt snapshot, log truncation.
import { afterEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine, EngineOptions } from '../../engine';
import { openEngine, SnapshotRecordsDamaged, type Snapshotter } from '../../snapshots';
import { buildSnapshot } from '../../snapshots/build';
import { textKbConfig } from '../helpers/kb-config';
import { TestServer } from '../helpers/server';

const ORG = 'org_s';
const CONFIG = textKbConfig(
  { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512, metric: 'cosine', quantization: 'f32' },
  { chunking: { size: 200, overlap: 0 }, hnsw: { connectivity: 16, expansionAdd: 64, expansionSearch: 64 } },
);
const dirs: string[] = [];
const engines: Engine[] = [];
const snapshotters = new Map<Engine, Snapshotter>();
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close().catch(() => {});
  snapshotters.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(dataDir: string, options: Partial<EngineOptions> = {}) {
  const { engine, snapshots } = await openEngine({ dataDir, compute: { documentWorkers: 2 }, graphThreshold: 8, log: () => {}, ...options });
  engines.push(engine);
  snapshotters.set(engine, snapshots);
  return engine;
}

/** The engine's snapshots (snapshots/snapshotter.ts). */
const snaps = (e: Engine) => snapshotters.get(e)!;

async function settle(e: Engine) {
  while (e.stats().queueDepth > 0) await Bun.sleep(20);
}

const TOPICS = [
  'volcanic eruptions and lava',
  'glaciers melting in the arctic',
  'desert dunes and camels',
  'coral reefs under the sea',
  'rainforest canopies and birds',
];

async function searches(e: Engine, kbId: string) {
  const out: unknown[] = [];
  for (const query of ['ice melting', 'hot lava', 'underwater reef', 'sand']) {
    out.push(e.searchFullText(ORG, kbId, { query, limit: 5 }));
    out.push(await e.searchSemantic(ORG, kbId, { query, limit: 5 }));
    out.push(await e.searchHybrid(ORG, kbId, { query, limit: 5, semanticWeight: 0.5, fusion: 'weighted' }));
  }
  return JSON.stringify(out);
}

describe('engine snapshots', () => {
  test('restart from a snapshot plus the log after it gives identical search results', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const kb = await a.createKnowledgeBase(ORG, { name: 'snap', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
    const items = [];
    for (let i = 0; i < 30; i++) items.push(await a.addContent(ORG, kb.id, { text: `Note ${i} about ${TOPICS[i % 5]}.`, metadata: { i } }));
    await settle(a);
    // Updates and deletes before the snapshot are compacted away.
    await a.updateContent(ORG, kb.id, items[0]!.id, { text: 'Rewritten note about volcanoes.' });
    await a.deleteContent(ORG, kb.id, items[1]!.id);
    await settle(a);
    const first = await snaps(a).snapshot();
    expect(first.manifest.stats.contents).toBe(29);
    expect(first.manifest.graphs.map((g) => g.kbId)).toEqual([kb.id]);
    expect(first.manifest.stats.records).toBeLessThan(first.seq);
    // More writes after the snapshot live only in the log.
    await a.addContent(ORG, kb.id, { text: 'A late note about camels in the desert.' });
    await a.deleteContent(ORG, kb.id, items[2]!.id);
    await settle(a);
    const before = await searches(a, kb.id);
    const contentsBefore = a.listContents(ORG, kb.id, 0, 100)!.items.map((c) => [c.id, c.createdAt, c.updatedAt, c.current.text, c.status]);
    await a.close();

    const b = await open(dir);
    expect(b.recovery.snapshot?.seq).toBe(first.seq);
    expect(b.recovery.records).toBeGreaterThan(0); // the log tail after the snapshot
    expect(b.recovery.requeued).toBe(0);
    expect(await searches(b, kb.id)).toBe(before);
    expect(b.listContents(ORG, kb.id, 0, 100)!.items.map((c) => [c.id, c.createdAt, c.updatedAt, c.current.text, c.status])).toEqual(contentsBefore);
    expect(b.knowledgeBase(kb.id)!.vectors!.graphReady || b.knowledgeBase(kb.id)!.vectors!.graphPending > 0).toBe(true);

    // A second snapshot continues the first; the log it covers can go.
    const second = await snaps(b).snapshot();
    expect(second.seq).toBeGreaterThan(first.seq);
    expect(await b.truncateLog(second.seq)).toBeGreaterThan(0);
    const after = await searches(b, kb.id);
    await b.close();
    const c = await open(dir);
    expect(c.recovery.snapshot?.seq).toBe(second.seq);
    expect(c.recovery.records).toBe(0);
    expect(await searches(c, kb.id)).toBe(after);
  }, 60_000);

  test('a graph behind its vectors goes into the snapshot as it is, with the documents it holds (nothing built twice)', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const kb = await a.createKnowledgeBase(ORG, { name: 'lag', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
    for (let i = 0; i < 20; i++) await a.addContent(ORG, kb.id, { text: `Note ${i} about ${TOPICS[i % 5]}.` });
    await settle(a);
    const vectors = a.knowledgeBase(kb.id)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    const out = join(dir, 'build');
    mkdirSync(out);
    // Saved now, used after 20 more vectors: as a builder far behind a bulk load would hand it over.
    const saved = a.saveGraphs((kbId) => join(out, `main-graph-${kbId}.usearch`));
    expect(saved.map((g) => g.docs.length)).toEqual([20]);
    for (let i = 20; i < 40; i++) await a.addContent(ORG, kb.id, { text: `Note ${i} about ${TOPICS[i % 5]}.` });
    await settle(a);
    expect(vectors.size).toBe(40);
    const seq = await a.sealLog();
    const manifest = await buildSnapshot({ log: a.logRange(0, seq), seq, outDir: out, graphThreshold: 8, mainGraphs: saved });
    expect(manifest.graphs).toEqual([{ kbId: kb.id, file: expect.any(String), vectors: 20, from: 'memory', docs: expect.any(String) }]);
    const docs = new Uint32Array(readFileSync(join(out, manifest.graphs[0]!.docs!)).buffer.slice(0));
    expect([...docs]).toEqual(saved[0]!.docs);
    expect(readdirSync(out).sort()).toEqual([...manifest.files.map((f) => f.name), 'manifest.json'].sort());
    await a.close();
  }, 60_000);

  test('snapshots take the graph the engine serves (with the documents it holds) instead of building one; restarts reconcile it', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const kb = await a.createKnowledgeBase(ORG, { name: 'm', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
    const items = [];
    for (let i = 0; i < 20; i++) items.push(await a.addContent(ORG, kb.id, { text: `Note ${i} about ${TOPICS[i % 5]}.` }));
    await settle(a);
    const vectors = a.knowledgeBase(kb.id)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    await a.deleteContent(ORG, kb.id, items[3]!.id);
    // A periodic snapshot: the builder's graph is served as a view of its file, handed over as it is
    // (still holding the deleted item's key: its list of documents does not).
    const first = await snaps(a).snapshot();
    expect(first.manifest.graphs).toEqual([{ kbId: kb.id, file: expect.any(String), vectors: vectors.size, from: 'memory', docs: expect.any(String) }]);
    await a.addContent(ORG, kb.id, { text: 'A note about glaciers and ice.' });
    await settle(a);
    while (!vectors.graphReady) await Bun.sleep(20);
    const afterFirst = await searches(a, kb.id);
    await a.close();
    // From the first snapshot and the log after it: the graph lacks the last vector, which is built again.
    const restarted = await open(dir);
    expect(restarted.recovery.snapshot?.seq).toBe(first.seq);
    expect(restarted.recovery.records).toBeGreaterThan(0);
    const again = restarted.knowledgeBase(kb.id)!.vectors!;
    while (!again.graphReady) await Bun.sleep(20);
    expect(await searches(restarted, kb.id)).toBe(afterFirst);
    await restarted.addContent(ORG, kb.id, { text: 'A last note about glaciers and ice.' });
    await settle(restarted);
    while (!again.graphReady) await Bun.sleep(20);
    const last = await snaps(restarted).snapshot({ reuseGraphs: true });
    // Continuing the previous snapshot (snapshot-incremental.test.ts): the graph saved with the documents it holds.
    expect(last.manifest.graphs).toEqual([{ kbId: kb.id, file: expect.any(String), vectors: again.size, from: 'memory', docs: expect.any(String) }]);
    // The snapshot directory holds exactly the manifest's files (the saved graph was cleaned up).
    expect(readdirSync(last.dir).sort()).toEqual([...last.manifest.files.map((f) => f.name), 'manifest.json'].sort());
    const before = await searches(restarted, kb.id);
    await restarted.close();
    const b = await open(dir);
    expect(b.recovery.snapshot?.seq).toBe(last.seq);
    expect(b.knowledgeBase(kb.id)!.vectors!.graphReady).toBe(true);
    expect(await searches(b, kb.id)).toBe(before);
  }, 60_000);

  test('a corrupt newest snapshot is skipped for the previous one and the log after it', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const kb = await a.createKnowledgeBase(ORG, { name: 'c', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
    await a.addContent(ORG, kb.id, { text: 'First note about herons.' });
    await settle(a);
    const older = await snaps(a).snapshot();
    await a.addContent(ORG, kb.id, { text: 'Second note about pelicans.' });
    await settle(a);
    // Compacted: it shares no file with the older one (one continuing it would share its records).
    const newer = await snaps(a).snapshot({ compact: true });
    await a.close();
    // Flip one byte: same size, wrong checksum.
    const path = join(newer.dir, 'records.log');
    const bytes = readFileSync(path);
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    writeFileSync(path, bytes);

    // Its dumps are intact: the engine opens from them, and its records are checked after.
    const b = await open(dir, { compute: { documentWorkers: 1 }, graphThreshold: undefined });
    expect(b.recovery.snapshot).toMatchObject({ seq: newer.seq, from: 'dumps', checksWaitMillis: expect.any(Number) });
    expect(b.searchFullText(ORG, kb.id, { query: 'pelicans', limit: 5 })!.length).toBe(1);
    const damaged = await snaps(b).recordsChecked.catch((err) => err);
    expect(damaged).toBeInstanceOf(SnapshotRecordsDamaged);
    expect(damaged.message).toContain('fails its checksum');
    // Set aside, not removed; and no snapshot is built on those records.
    expect(existsSync(newer.dir)).toBe(false);
    expect(existsSync(join(damaged.setAsideAt, 'records.log'))).toBe(true);
    await b.addContent(ORG, kb.id, { text: 'Third note about gannets.' });
    await settle(b);
    expect(
      await snaps(b)
        .snapshot()
        .catch((err) => err),
    ).toBeInstanceOf(SnapshotRecordsDamaged);
    await b.close();
    engines.splice(engines.indexOf(b), 1);

    // The next start takes the snapshot before it and the log.
    const c = await open(dir, { compute: { documentWorkers: 1 }, graphThreshold: undefined });
    expect(c.recovery.snapshot?.seq).toBe(older.seq);
    for (const query of ['pelicans', 'herons', 'gannets']) expect(c.searchFullText(ORG, kb.id, { query, limit: 5 })!.length).toBe(1);
    // Without dumps the records are read before the engine opens, and a damaged one skips the snapshot there.
    const last = await snaps(c).snapshot({ compact: true });
    await c.close();
    engines.splice(engines.indexOf(c), 1);
    const manifestPath = join(last.dir, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    delete manifest.items;
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const records = join(last.dir, 'records.log');
    const bytes2 = readFileSync(records);
    bytes2[Math.floor(bytes2.length / 2)]! ^= 0xff;
    writeFileSync(records, bytes2);
    const logs: string[] = [];
    const d = await open(dir, { compute: { documentWorkers: 1 }, graphThreshold: undefined, log: (_l, m, d) => logs.push(`${m} ${JSON.stringify(d)}`) });
    expect(d.recovery.snapshot?.seq).toBe(older.seq);
    expect(logs.some((l) => l.includes('snapshot skipped') && l.includes('checksum'))).toBe(true);
    for (const query of ['pelicans', 'herons', 'gannets']) expect(d.searchFullText(ORG, kb.id, { query, limit: 5 })!.length).toBe(1);
  }, 60_000);

  test('a snapshot whose HNSW graph or records.log is damaged (same size, or cut short) is skipped', async () => {
    for (const damage of ['graph byte', 'records cut'] as const) {
      const dir = TestServer.tempDir();
      dirs.push(dir);
      const a = await open(dir);
      const kb = await a.createKnowledgeBase(ORG, { name: 'g', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
      for (let i = 0; i < 12; i++) await a.addContent(ORG, kb.id, { text: `Note ${i} about ${TOPICS[i % 5]}.` });
      await settle(a);
      const older = await snaps(a).snapshot();
      await a.addContent(ORG, kb.id, { text: 'One more note about coral reefs.' });
      await settle(a);
      const newer = await snaps(a).snapshot({ compact: true });
      expect(newer.manifest.graphs.length).toBe(1);
      const before = await searches(a, kb.id);
      await a.close();
      if (damage === 'graph byte') {
        const path = join(newer.dir, newer.manifest.graphs[0]!.file);
        const bytes = readFileSync(path);
        bytes[bytes.length - 100]! ^= 0x01;
        writeFileSync(path, bytes);
      } else {
        const path = join(newer.dir, 'records.log');
        writeFileSync(path, readFileSync(path).subarray(0, -10));
      }
      const logs: string[] = [];
      const b = await open(dir, { compute: { documentWorkers: 1 }, log: (_l, m, d) => logs.push(`${m} ${JSON.stringify(d)}`) });
      expect(b.recovery.snapshot?.seq).toBe(older.seq);
      expect(logs.filter((l) => l.includes('snapshot skipped')).join()).toContain(damage === 'graph byte' ? 'fails its checksum' : 'bytes, expected');
      expect(await searches(b, kb.id)).toBe(before);
    }
  }, 60_000);

  test('snapshots of an unchanged log are not repeated; a snapshot dir is complete or absent', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    await a.createKnowledgeBase(ORG, { name: 'x', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
    const s1 = await snaps(a).snapshot();
    const s2 = await snaps(a).snapshot();
    expect(s2.seq).toBe(s1.seq);
    const names = readdirSync(snaps(a).dir);
    expect(names.every((n) => n.startsWith('snap-'))).toBe(true);
    expect(existsSync(join(s1.dir, 'manifest.json'))).toBe(true);
  });
});
