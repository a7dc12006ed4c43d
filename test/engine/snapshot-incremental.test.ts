// Snapshot format 2 through the engine library: binary indexed records after a term dictionary,
// incremental snapshots at shutdown and while serving (the previous snapshot's record files
// hard-linked, the log after it appended, the graph with its documents; compacted once many records
// are dead), data directories of format 1 opening, and index dumps (loaded instead of re-adding
// every chunk; snapshots without them, or with a damaged one).
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Engine, EngineOptions, MetadataFilter } from '../../engine';
import { LocalSnapshotStore, openEngine, RECORDS_FILE, SnapshotManager, SnapshotRecordsDamaged, type Snapshotter } from '../../snapshots';
import { crc32File, tailSnapshots } from '../../snapshots/format';
import { setSnapshotReading } from '../../snapshots/snapshotter';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { TestServer } from '../helpers/server';
import { rewriteAsFormat1 } from '../../support/snapshot-format1';

const ORG = 'org_i';
const CONFIG = textKbConfig(
  { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512, metric: 'cosine', quantization: 'f32' },
  { chunking: { size: 120, overlap: 0 }, hnsw: { connectivity: 16, expansionAdd: 64, expansionSearch: 64 } },
);
const TOPICS = [
  'volcanic eruptions and lava',
  'glaciers melting in the arctic',
  'desert dunes and camels',
  'coral reefs under the sea',
  'rainforest canopies and birds',
];
const dirs: string[] = [];
const engines: Engine[] = [];
const snapshotters = new Map<Engine, Snapshotter>();
// Record files read 4 KB at a time, every payload zeroed once applied: a state keeping a view of an
// attachment (instead of a copy) would show here as different answers.
beforeAll(() => setSnapshotReading({ pieceBytes: 4096, poison: true }));
afterAll(() => setSnapshotReading({ pieceBytes: 8 << 20, poison: false }));
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
const snaps = (e: Engine) => snapshotters.get(e)!;
async function settle(e: Engine) {
  while (e.stats().queueDepth > 0) await Bun.sleep(20);
}
async function close(e: Engine) {
  await e.close();
  engines.splice(engines.indexOf(e), 1);
}

/** Opened with its warnings kept. */
async function openLogged(dir: string) {
  const warnings: { message: string; details?: Record<string, unknown> }[] = [];
  const e = await open(dir, { log: (level, message, details) => level === 'warn' && warnings.push({ message, details }) });
  return { e, warnings };
}

const sameFile = (x: string, y: string) => statSync(x).ino === statSync(y).ino;

const PROBE = Float32Array.from({ length: 512 }, (_, i) => Math.sin(i + 1));

/** Every search mode, and every item as listed: what must be identical across restarts. */
async function answers(e: Engine, kbId: string) {
  const out: unknown[] = [];
  for (const query of ['ice melting', 'hot lava', 'underwater reef', 'sand camels', 'note 7']) {
    out.push(e.searchFullText(ORG, kbId, { query, limit: 8 }));
    out.push(await e.searchSemantic(ORG, kbId, { query, limit: 8 }));
    out.push(await e.searchHybrid(ORG, kbId, { query, limit: 8, semanticWeight: 0.5, fusion: 'weighted' }));
  }
  out.push(e.listContents(ORG, kbId, 0, 1000)!.items.map((c) => [c.id, c.createdAt, c.updatedAt, c.current.text, c.status, c.current.version]));
  // Every stored vector, as exact scores against a fixed query (graph searches may not read them all).
  const vectors = e.knowledgeBase(kbId)!.vectors!;
  out.push(vectors.scoreDocs(PROBE, vectors.aliveDocs()));
  return JSON.stringify(out);
}

/** A knowledge base of `n` items (several chunks each), one updated and one deleted. */
async function fill(e: Engine, n: number) {
  const kb = await e.createKnowledgeBase(ORG, { name: 'inc', description: '', type: 'TEXT_HIGH_QUALITY', config: CONFIG });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const text = `Note ${i} about ${TOPICS[i % 5]}. It goes on about ${TOPICS[(i + 2) % 5]}, then ${TOPICS[(i + 3) % 5]} again, and ends with ${i}.`;
    ids.push((await e.addContent(ORG, kb.id, { text, metadata: { i } })).id);
  }
  await settle(e);
  await e.updateContent(ORG, kb.id, ids[0]!, { text: 'Rewritten note about volcanoes and lava.' });
  await e.deleteContent(ORG, kb.id, ids[1]!);
  await settle(e);
  return { kbId: kb.id, ids };
}

describe('snapshot format 2', () => {
  test('a snapshot of format 1 (all JSON) opens with identical answers; the next snapshot is format 2', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 24);
    const first = await snaps(a).snapshot();
    expect(first.manifest.format).toBe(4);
    // The log after the snapshot, as written by any version (JSON).
    await a.addContent(ORG, kbId, { text: 'A late note about camels in the desert.' });
    await a.deleteContent(ORG, kbId, ids[2]!);
    await settle(a);
    const before = await answers(a, kbId);
    await close(a);
    // As an older version wrote it: the same records, all JSON, format 1.
    const f2 = readFileSync(join(first.dir, RECORDS_FILE));
    await rewriteAsFormat1(first.dir);
    expect(readFileSync(join(first.dir, RECORDS_FILE)).length).toBeGreaterThan(f2.length);

    const b = await open(dir);
    expect(b.recovery.snapshot?.seq).toBe(first.seq);
    expect(b.recovery.records).toBeGreaterThan(0);
    expect(await answers(b, kbId)).toBe(before);
    // At shutdown too, a previous snapshot of format 1 is written whole (its graph the one in memory, with the documents it holds).
    const vectors = b.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    const upgraded = await snaps(b).snapshot({ reuseGraphs: true });
    expect(upgraded.manifest.format).toBe(4);
    expect(upgraded.manifest.tails).toBeUndefined();
    expect(upgraded.manifest.graphs).toEqual([{ kbId, file: expect.any(String), vectors: vectors.size, from: 'memory', docs: expect.any(String) }]);
    expect(upgraded.manifest.indexes?.map((d) => d.kbId)).toEqual([kbId]);
    expect(upgraded.seq).toBeGreaterThan(first.seq);
    expect(await b.truncateLog(upgraded.seq)).toBeGreaterThan(0);
    await close(b);
    const c = await open(dir);
    expect(c.recovery.snapshot?.seq).toBe(upgraded.seq);
    expect(c.recovery.records).toBe(0);
    expect(await answers(c, kbId)).toBe(before);
  }, 120_000);

  test('at shutdown a snapshot continues the previous one: linked, the log appended, the graph as in memory', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 24);
    const full = await snaps(a).snapshot();
    expect(full.manifest.tails).toBeUndefined();
    // Writes after it: new items, an update, deletes (of items in the snapshot and after it).
    const late = await a.addContent(ORG, kbId, { text: 'A late note about glaciers and ice.' });
    await a.addContent(ORG, kbId, { text: 'Another late note about reefs.' });
    await a.updateContent(ORG, kbId, ids[3]!, { text: 'Note three, now about desert sand.' });
    await a.deleteContent(ORG, kbId, ids[4]!);
    await settle(a);
    await a.deleteContent(ORG, kbId, late.id);
    const vectors = a.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    const shutdown = await snaps(a).snapshot({ reuseGraphs: true });
    expect(shutdown.manifest.tails).toHaveLength(1);
    expect(shutdown.manifest.graphs).toEqual([{ kbId, file: expect.any(String), vectors: vectors.size, from: 'memory', docs: expect.any(String) }]);
    // The previous records are shared, not copied; the directory holds exactly the manifest's files.
    expect(statSync(join(shutdown.dir, RECORDS_FILE)).ino).toBe(statSync(join(full.dir, RECORDS_FILE)).ino);
    expect(readdirSync(shutdown.dir).sort()).toEqual([...shutdown.manifest.files.map((f) => f.name), 'manifest.json'].sort());
    const before = await answers(a, kbId);
    await close(a);

    const b = await open(dir);
    expect(b.recovery.snapshot?.seq).toBe(shutdown.seq);
    expect(b.recovery.records).toBe(0);
    // The graph from memory is taken whole: nothing to insert again.
    expect(b.knowledgeBase(kbId)!.vectors!.graphReady).toBe(true);
    expect(await answers(b, kbId)).toBe(before);
    // A second one continues the chain; one asked to compact writes it into one file again.
    await b.addContent(ORG, kbId, { text: 'Yet another note about lava flows.' });
    await settle(b);
    const second = await snaps(b).snapshot({ reuseGraphs: true });
    expect(second.manifest.tails).toHaveLength(2);
    await b.deleteContent(ORG, kbId, ids[5]!);
    const compacted = await snaps(b).snapshot({ compact: true });
    expect(compacted.manifest.tails).toBeUndefined();
    expect(compacted.manifest.stats.records).toBeLessThan(second.manifest.stats.records);
    const after = await answers(b, kbId);
    await close(b);
    const c = await open(dir);
    expect(c.recovery.snapshot?.seq).toBe(compacted.seq);
    expect(await answers(c, kbId)).toBe(after);
  }, 120_000);

  test('closed log segments go into it as links: the stop does not copy the log; replayed, compacted and truncated alike', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    // Segments of 4 KB: the log since the full snapshot spans many of them.
    const small = { walSegmentBytes: 4096 };
    const a = await open(dir, small);
    const { kbId, ids } = await fill(a, 12);
    const full = await snaps(a).snapshot();
    for (let i = 0; i < 16; i++)
      await a.addContent(ORG, kbId, { text: `Late note ${i} about ${TOPICS[i % 5]} and then ${TOPICS[(i + 1) % 5]}.`, metadata: { i: 100 + i } });
    await a.updateContent(ORG, kbId, ids[3]!, { text: 'Note three, now about desert sand.' });
    await a.deleteContent(ORG, kbId, ids[4]!);
    await settle(a);
    const vectors = a.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    const wal = join(dir, 'wal');
    const segments = new Set(readdirSync(wal).map((n) => statSync(join(wal, n)).ino));
    const shutdown = await snaps(a).snapshot({ reuseGraphs: true });
    const tails = shutdown.manifest.tails!;
    const linked = tails.filter((t) => segments.has(statSync(join(shutdown.dir, t)).ino));
    // The segment holding the full snapshot's last record is copied from after it; the rest are the log's own files.
    expect(linked.length).toBeGreaterThan(3);
    expect(linked.length).toBeGreaterThanOrEqual(tails.length - 1);
    for (const t of tails) expect(shutdown.manifest.files.find((f) => f.name === t)!.crc32).toBe(crc32File(join(shutdown.dir, t)));
    const before = await answers(a, kbId);
    // The log the snapshot covers is removed: the links keep it.
    expect(await a.truncateLog(shutdown.seq)).toBeGreaterThan(3);
    await close(a);

    // Without its dumps, the snapshot's records and every tail are replayed.
    const manifestPath = join(shutdown.dir, 'manifest.json');
    const withDumps = readFileSync(manifestPath, 'utf8');
    const manifest = JSON.parse(withDumps);
    const derived = new Set([...manifest.indexes.map((d: { file: string }) => d.file), ...manifest.items.files.map((d: { file: string }) => d.file)]);
    manifest.files = manifest.files.filter((f: { name: string }) => !derived.has(f.name));
    delete manifest.indexes;
    delete manifest.items;
    writeFileSync(manifestPath, JSON.stringify(manifest));
    const { e: b, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(b.recovery.snapshot).toMatchObject({ seq: shutdown.seq, from: 'records' });
    expect(b.recovery.records).toBe(0);
    expect(await answers(b, kbId)).toBe(before);
    await close(b);
    writeFileSync(manifestPath, withDumps);

    // A second stop continues the chain: two incremental snapshots, however many files; one asked to compact takes them all.
    const c = await open(dir, small);
    expect(c.recovery.snapshot).toMatchObject({ seq: shutdown.seq, from: 'dumps' });
    expect(await answers(c, kbId)).toBe(before);
    for (let i = 0; i < 6; i++) await c.addContent(ORG, kbId, { text: `Later note ${i} about lava flows.` });
    await settle(c);
    const second = await snaps(c).snapshot({ reuseGraphs: true });
    expect(second.manifest.tails!.slice(0, tails.length)).toEqual(tails);
    expect(tailSnapshots(second.manifest)).toBe(2);
    expect(tailSnapshots(shutdown.manifest)).toBe(1);
    await c.deleteContent(ORG, kbId, ids[5]!);
    const compacted = await snaps(c).snapshot({ compact: true });
    expect(compacted.manifest.tails).toBeUndefined();
    expect(compacted.manifest.stats.records).toBeLessThan(second.manifest.stats.records);
    const after = await answers(c, kbId);
    await close(c);
    const d = await open(dir, small);
    expect(d.recovery.snapshot?.seq).toBe(compacted.seq);
    expect(await answers(d, kbId)).toBe(after);
    void full;
  }, 120_000);

  test('a damaged tail (a log segment it shares with the log) sets the snapshot aside; the log says so; nothing acknowledged is lost', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId } = await fill(a, 12);
    const full = await snaps(a).snapshot();
    await a.addContent(ORG, kbId, { text: 'A late note about pelicans.' });
    await settle(a);
    const shutdown = await snaps(a).snapshot({ reuseGraphs: true });
    const before = await answers(a, kbId);
    await close(a);
    const tail = join(shutdown.dir, shutdown.manifest.tails![0]!);
    const bytes = readFileSync(tail);
    bytes[bytes.length - 3]! ^= 0xff;
    writeFileSync(tail, bytes);
    // Opened from its dumps, then its records checked: damaged, it is set aside.
    const first = await open(dir);
    expect(first.recovery.snapshot).toMatchObject({ seq: shutdown.seq, from: 'dumps' });
    expect(await snaps(first).recordsChecked.catch((err) => err)).toBeInstanceOf(SnapshotRecordsDamaged);
    await close(first);
    const warnings: string[] = [];
    const b = await open(dir, { log: (level, message) => level === 'warn' && warnings.push(message) });
    // One file: the log finds the same damage in its segment, cuts it there and keeps the cut bytes aside.
    expect(warnings.some((w) => w.startsWith('write-ahead log: corrupt segment'))).toBe(true);
    expect(b.recovery.snapshot?.seq).toBe(full.seq);
    expect(b.recovery.records).toBeGreaterThan(0);
    // The damaged frame was the item's indexing result, not its acknowledged write: it is indexed
    // again, with the same answers (under new chunk ids).
    await settle(b);
    const chunkIdsAside = (s: string) => s.replace(/"chunkId":"ch_[0-9a-f]+"/g, '"chunkId"');
    expect(chunkIdsAside(await answers(b, kbId))).toBe(chunkIdsAside(before));
  }, 120_000);
});

describe('index dumps', () => {
  /** answers() and filtered searches (the metadata index, replayed beside a dump). */
  async function allAnswers(e: Engine, kbId: string) {
    const filtered: unknown[] = [];
    for (const filter of [{ i: 3 }, { i: { $gte: 10 } }]) {
      filtered.push(e.searchFullText(ORG, kbId, { query: 'note about', limit: 8, filter }));
      filtered.push(await e.searchHybrid(ORG, kbId, { query: 'lava', limit: 8, semanticWeight: 0.5, fusion: 'weighted', filter }));
    }
    return (await answers(e, kbId)) + JSON.stringify(filtered);
  }
  const dumpFiles = (snap: { dir: string }) => readdirSync(snap.dir).filter((n) => n.startsWith('index-') && n.endsWith('.dump'));
  const engineVectorFile = (dir: string, kbId: string, configId: string) => join(dir, 'vectors', `${kbId}.${configId}.vectors`);
  test('a vector file the engine wrote past (no snapshot since) is cut back to the snapshot; a damaged one is reported and not used', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 30);
    const configId = a.getKnowledgeBase(ORG, kbId).config.id;
    const snap = await snaps(a).snapshot({ reuseGraphs: true });
    const rows = join(snap.dir, snap.manifest.indexes![0]!.vectors!);
    const { bytes } = snap.manifest.files.find((f) => f.name === snap.manifest.indexes![0]!.vectors)!;
    await close(a);

    // The next run writes past the snapshot's rows into the same file, then stops without a snapshot.
    const b = await open(dir);
    expect(sameFile(rows, engineVectorFile(dir, kbId, configId))).toBe(true);
    for (let i = 0; i < 6; i++)
      await b.addContent(ORG, kbId, { text: `A note written after the snapshot, number ${i}, about penguins and ice.`, metadata: { i } });
    await b.updateContent(ORG, kbId, ids[3]!, { text: 'Note three, rewritten: a volcano and its lava.' });
    await b.deleteContent(ORG, kbId, ids[8]!);
    await settle(b);
    const before = await allAnswers(b, kbId);
    b.knowledgeBase(kbId)!.vectors!.writtenFile();
    expect(statSync(rows).size).toBeGreaterThan(bytes);
    await close(b);

    // The snapshot and the log after it: the rows past the snapshot's are cut off and written again from the log.
    const { e: c, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(c.recovery.snapshot?.seq).toBe(snap.seq);
    expect(c.recovery.records).toBeGreaterThan(0);
    expect(await allAnswers(c, kbId)).toBe(before);
    await close(c);

    // One byte of a vector changed: the file fails its checksum; the records' vectors are stored instead.
    const damaged = readFileSync(rows);
    damaged[Math.floor(bytes / 2)]! ^= 0x40;
    writeFileSync(rows, damaged);
    // The item dumps were loaded, then the file failed its checksum (checked in a worker meanwhile): the records are replayed.
    const { e: d, warnings: dWarnings } = await openLogged(dir);
    expect(dWarnings.map((w) => w.message)).toEqual([
      'item dumps unusable; the snapshot records are replayed',
      'vector file unusable; its vectors are stored again from the snapshot records',
    ]);
    expect(String(dWarnings[0]!.details?.reason)).toMatch(/checksum/);
    expect(String(dWarnings[1]!.details?.reason)).toMatch(/checksum/);
    expect(d.recovery.snapshot?.from).toBe('records');
    expect(d.recovery.snapshot?.seq).toBe(snap.seq);
    expect(sameFile(rows, engineVectorFile(dir, kbId, configId))).toBe(false);
    expect(await allAnswers(d, kbId)).toBe(before);
    await close(d);

    // Gone: the same.
    rmSync(rows);
    const { e: f, warnings: fWarnings } = await openLogged(dir);
    expect(fWarnings.map((w) => [w.message, w.details?.reason])).toEqual([
      ['vector file unusable; its vectors are stored again from the snapshot records', 'missing'],
      ['item dumps unusable; the snapshot records are replayed', `the vector file of ${kbId} (configuration ${configId}) is unusable`],
    ]);
    expect(await allAnswers(f, kbId)).toBe(before);
  }, 120_000);

  test('a restart loads the index dumps: identical answers in every mode, after deletes, updates and more writes', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 30);
    // Texts of every width the store keeps: Latin-1, and UTF-16 (a snapshot stores them as the store does).
    const texts = ['Crème brûlée in a café, naïve façade.', 'Ice ☃ and lava 🌋 — 日本の火山 notes.'];
    const wide = [];
    for (const text of texts) wide.push((await a.addContent(ORG, kbId, { text })).id);
    // Identical vectors: one duplicate group, one key in the graph (its groups come with the dump).
    const dups = [];
    for (let i = 0; i < 5; i++) dups.push((await a.addContent(ORG, kbId, { text: 'Walruses rest together on a drifting floe.' })).id);
    await settle(a);
    const vectors = a.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    const first = await snaps(a).snapshot({ reuseGraphs: true });
    const configId = a.getKnowledgeBase(ORG, kbId).config.id;
    expect(first.manifest.indexes).toEqual([
      { kbId, configId, file: expect.stringMatching(/^index-.*\.dump$/), vectors: expect.stringMatching(/^vectors-.*\.rows$/) },
    ]);
    expect(dumpFiles(first)).toEqual([first.manifest.indexes![0]!.file]);
    expect(first.manifest.items).toEqual({ files: [{ kbId, file: `items-${kbId}.dump` }], texts: 'texts.bin' });
    // The vector file is the engine's own, linked: its rows of the snapshot's documents, checksummed.
    const rowsEntry = first.manifest.files.find((f) => f.name === first.manifest.indexes![0]!.vectors)!;
    expect(rowsEntry.bytes).toBe(a.knowledgeBase(kbId)!.docSpace * 512 * 4);
    expect(sameFile(join(first.dir, rowsEntry.name), engineVectorFile(dir, kbId, configId))).toBe(true);
    const before = await allAnswers(a, kbId);
    await close(a);

    const { e: b, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(b.recovery.snapshot?.seq).toBe(first.seq);
    expect(b.recovery.records).toBe(0);
    expect(b.recovery.snapshot?.from).toBe('dumps');
    expect(b.recovery.chunks).toBe(first.manifest.stats.chunks);
    wide.forEach((id, i) => expect(b.getContent(ORG, kbId, id)!.current.text).toBe(texts[i]!));
    expect(b.searchFullText(ORG, kbId, { query: 'brûlée', limit: 1 })[0]?.text).toBe(texts[0]);
    // Taken over, not written again.
    expect(sameFile(join(first.dir, rowsEntry.name), engineVectorFile(dir, kbId, configId))).toBe(true);
    expect(await allAnswers(b, kbId)).toBe(before);
    // Whichever was the group's key: with it deleted, the other four are still found.
    await b.deleteContent(ORG, kbId, dups[0]!);
    const penguins = await b.searchSemantic(ORG, kbId, { query: 'Walruses rest together on a drifting floe.', limit: 5 });
    expect(
      penguins
        .slice(0, 4)
        .map((h) => h.contentId)
        .sort(),
    ).toEqual(dups.slice(1).sort());

    // Writes on the loaded indexes; the last item indexed is deleted before a compacted snapshot,
    // so its dump hands out more documents than the compacted records.
    await b.addContent(ORG, kbId, { text: 'A late note about glaciers and ice, and more ice.', metadata: { i: 3 } });
    await b.updateContent(ORG, kbId, ids[4]!, { text: 'Note four, now about desert sand and camels.' });
    await b.deleteContent(ORG, kbId, ids[5]!);
    await settle(b);
    const last = await b.addContent(ORG, kbId, { text: 'The very last note, about coral reefs under the sea.' });
    await settle(b);
    await b.deleteContent(ORG, kbId, last.id);
    const compacted = await snaps(b).snapshot({ compact: true });
    expect(compacted.manifest.tails).toBeUndefined();
    expect(compacted.manifest.indexes?.map((d) => d.kbId)).toEqual([kbId]);
    // The same vector file as the first snapshot's, longer: its checksum continued from the first's.
    const compactedRows = compacted.manifest.files.find((f) => f.name === compacted.manifest.indexes![0]!.vectors)!;
    expect(sameFile(join(compacted.dir, compactedRows.name), join(first.dir, rowsEntry.name))).toBe(true);
    expect(compactedRows.bytes).toBeGreaterThan(rowsEntry.bytes);
    expect(compactedRows.crc32).toBe(crc32File(join(compacted.dir, compactedRows.name), compactedRows.bytes));
    const after = await allAnswers(b, kbId);
    await close(b);

    const { e: c, warnings: cWarnings } = await openLogged(dir);
    expect(cWarnings).toEqual([]);
    expect(c.recovery.snapshot?.seq).toBe(compacted.seq);
    expect(await allAnswers(c, kbId)).toBe(after);
    // New chunks take new document numbers, past every one handed out before.
    const space = c.knowledgeBase(kbId)!.docSpace;
    await c.addContent(ORG, kbId, { text: 'A note written after the second restart, about penguins.' });
    await settle(c);
    const hits = c.searchFullText(ORG, kbId, { query: 'penguins', limit: 3 });
    expect(hits[0]?.text).toContain('penguins');
    expect(hits[0]!.doc).toBeGreaterThanOrEqual(space);
  }, 120_000);

  test('a snapshot without index dumps (as written before them) opens alike; the next one at shutdown has them', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId } = await fill(a, 20);
    const first = await snaps(a).snapshot();
    const before = await allAnswers(a, kbId);
    await close(a);
    // The snapshot as the previous version wrote it: no dumps, no `indexes`, no `items`.
    const manifestPath = join(first.dir, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    for (const d of manifest.indexes) rmSync(join(first.dir, d.file));
    for (const d of manifest.items.files) rmSync(join(first.dir, d.file));
    manifest.files = manifest.files.filter((f: { name: string }) => !f.name.endsWith('.dump') && f.name !== manifest.items.texts);
    delete manifest.indexes;
    delete manifest.items;
    writeFileSync(manifestPath, JSON.stringify(manifest));

    const { e: b, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(b.recovery.snapshot?.seq).toBe(first.seq);
    expect(await allAnswers(b, kbId)).toBe(before);
    await b.addContent(ORG, kbId, { text: 'One more note about rainforest birds.' });
    await settle(b);
    const vectors = b.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    const shutdown = await snaps(b).snapshot({ reuseGraphs: true });
    expect(shutdown.manifest.tails).toHaveLength(1);
    expect(shutdown.manifest.indexes?.map((d) => d.kbId)).toEqual([kbId]);
    const after = await allAnswers(b, kbId);
    await close(b);
    const { e: c, warnings: cWarnings } = await openLogged(dir);
    expect(cWarnings).toEqual([]);
    expect(await allAnswers(c, kbId)).toBe(after);
  }, 120_000);

  test('a damaged or missing index dump is reported and the snapshot records are replayed instead', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId } = await fill(a, 20);
    const snap = await snaps(a).snapshot();
    const before = await allAnswers(a, kbId);
    await close(a);
    const [file] = dumpFiles(snap);
    const path = join(snap.dir, file!);
    const good = readFileSync(path);

    // The same size, one byte changed in the middle: its section fails its checksum.
    const bad = Buffer.from(good);
    bad[Math.floor(bad.length / 2)]! ^= 0x10;
    writeFileSync(path, bad);
    // Read without its checksum beside the item dumps; the worker's check fails it, and the
    // records are replayed with the dump checked (and refused) as it is read.
    const { e: b, warnings } = await openLogged(dir);
    expect(warnings.map((w) => w.message)).toEqual([
      'item dumps unusable; the snapshot records are replayed',
      'index dump unusable; its knowledge base is rebuilt from the snapshot records',
    ]);
    expect(String(warnings[0]!.details?.reason)).toMatch(/index-.*\.dump fails its checksum/);
    expect(String(warnings[1]!.details?.reason)).toMatch(/checksum/);
    // The same snapshot, not an older one: its records hold everything.
    expect(b.recovery.snapshot?.seq).toBe(snap.seq);
    expect(await allAnswers(b, kbId)).toBe(before);
    await close(b);

    rmSync(path);
    const { e: c, warnings: cWarnings } = await openLogged(dir);
    expect(cWarnings.map((w) => w.message)).toEqual([
      'index dump unusable; its knowledge base is rebuilt from the snapshot records',
      'item dumps unusable; the snapshot records are replayed',
    ]);
    expect(c.recovery.snapshot?.seq).toBe(snap.seq);
    expect(await allAnswers(c, kbId)).toBe(before);
  }, 120_000);

  test('a snapshot taken while writes flow holds dumps of exactly its records; a restart from them replays the log after it', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId } = await fill(a, 10);
    const stream = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) =>
        a.addContent(ORG, kbId, { text: `Streaming note ${from + i} about ${TOPICS[(from + i) % 5]}.`, metadata: { i: from + i } }),
      );
    // Writes in flight (logged, not yet durable, their indexing queued) while the snapshot is taken.
    const writes = stream(100, 40);
    await Bun.sleep(5);
    const taking = snaps(a).snapshot();
    writes.push(...stream(200, 20));
    const snap = await taking;
    await Promise.all(writes);
    await settle(a);
    expect(snap.manifest.indexes).toHaveLength(1);
    expect(snap.manifest.items).toBeDefined();
    expect(a.lastSequence).toBeGreaterThan(snap.seq);
    const before = await allAnswers(a, kbId);
    await close(a);

    const { e: b, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(b.recovery.snapshot).toMatchObject({ seq: snap.seq, from: 'dumps' });
    expect(b.recovery.records).toBeGreaterThan(0);
    expect(await allAnswers(b, kbId)).toBe(before);
  }, 120_000);

  test('a later snapshot writes a delta of the full index dump before it; restarts from it answer alike, after pruning and with a damaged base', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 40);
    const more = async (e: Engine, from: number, n: number) => {
      for (let i = from; i < from + n; i++)
        await e.addContent(ORG, kbId, { text: `Later note ${i} about ${TOPICS[i % 5]}, and then ${TOPICS[(i + 1) % 5]}.`, metadata: { i } });
      await settle(e);
    };
    const entry = (snap: { manifest: { files: { name: string; bytes: number; crc32?: number }[] } }, name: string) =>
      snap.manifest.files.find((f) => f.name === name)!;
    // Long items: postings make most of the dump, as at scale (not the arrays a delta holds whole, per document and per term).
    const long = async (e: Engine, from: number, n: number) => {
      for (let i = from; i < from + n; i++) {
        const sentences = Array.from({ length: 30 }, (_, k) => `Part ${k} of long note ${i} tells of ${TOPICS[(i + k) % 5]} near place ${i * 100 + k}.`);
        await e.addContent(ORG, kbId, { text: sentences.join(' '), metadata: { i: 1000 + i } });
      }
      await settle(e);
    };
    await long(a, 0, 20);
    const first = await snaps(a).snapshot();
    const full = first.manifest.indexes![0]!;
    expect(full.base).toBeUndefined();
    // More items, an update and a delete: the next snapshot writes only what they added.
    await more(a, 100, 5);
    await a.updateContent(ORG, kbId, ids[5]!, { text: 'Rewritten: glaciers and coral reefs.' });
    await a.deleteContent(ORG, kbId, ids[6]!);
    await settle(a);
    const second = await snaps(a).snapshot();
    const delta = second.manifest.indexes![0]!;
    expect(delta.file).toMatch(/^index-.*\.delta$/);
    expect(delta.base).toBe(full.file);
    expect(entry(second, delta.file).bytes).toBeLessThan(entry(first, full.file).bytes / 2);
    expect(entry(second, full.file)).toEqual(entry(first, full.file));
    expect(sameFile(join(second.dir, full.file), join(first.dir, full.file))).toBe(true);
    // And again: a delta of the same full dump, not of the delta before it.
    await more(a, 200, 3);
    const third = await snaps(a).snapshot();
    expect(third.manifest.indexes![0]!.base).toBe(full.file);
    expect(sameFile(join(third.dir, full.file), join(first.dir, full.file))).toBe(true);
    const before = await allAnswers(a, kbId);
    await close(a);

    // The snapshots before it pruned: the newest holds its base.
    rmSync(first.dir, { recursive: true });
    rmSync(second.dir, { recursive: true });
    const { e: b, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(b.recovery.snapshot).toMatchObject({ seq: third.seq, from: 'dumps' });
    expect(b.recovery.records).toBe(0);
    expect(await allAnswers(b, kbId)).toBe(before);
    // Started from a delta: the next snapshot's dump is whole (the base of later deltas).
    await more(b, 300, 2);
    const fourth = await snaps(b).snapshot();
    expect(fourth.manifest.indexes![0]!.base).toBeUndefined();
    const afterFourth = await allAnswers(b, kbId);
    await close(b);

    // Started from a full dump: the next snapshot is a delta of that file.
    const c = await open(dir);
    expect(await allAnswers(c, kbId)).toBe(afterFourth);
    await more(c, 400, 3);
    await c.deleteContent(ORG, kbId, ids[7]!);
    await settle(c);
    const fifth = await snaps(c).snapshot();
    expect(fifth.manifest.indexes![0]!.base).toBe(full.file);
    expect(entry(fifth, full.file)).toEqual(entry(fourth, full.file));
    // Past half of a full dump's bytes, a full dump again.
    await long(c, 20, 25);
    const sixth = await snaps(c).snapshot();
    expect(sixth.manifest.indexes![0]!.base).toBeUndefined();
    const last = await allAnswers(c, kbId);
    await close(c);

    const { e: d, warnings: dWarnings } = await openLogged(dir);
    expect(dWarnings).toEqual([]);
    expect(d.recovery.snapshot?.seq).toBe(sixth.seq);
    expect(await allAnswers(d, kbId)).toBe(last);
    await close(d);
    // The fifth (a delta) with a damaged base: reported, and its records replayed (then the log after it).
    rmSync(sixth.dir, { recursive: true });
    const good = readFileSync(join(fifth.dir, full.file));
    const bad = Buffer.from(good);
    bad[Math.floor(bad.length / 2)]! ^= 0x10;
    rmSync(join(fifth.dir, full.file));
    writeFileSync(join(fifth.dir, full.file), bad);
    const { e: f, warnings: fWarnings } = await openLogged(dir);
    expect(fWarnings.map((w) => w.message)).toEqual([
      'item dumps unusable; the snapshot records are replayed',
      'index dump unusable; its knowledge base is rebuilt from the snapshot records',
    ]);
    expect(f.recovery.snapshot?.seq).toBe(fifth.seq);
    expect(await allAnswers(f, kbId)).toBe(last);
  }, 180_000);
});

describe('item dumps', () => {
  const CRASHY = new URL('../fixtures/crashy-worker.ts', import.meta.url);
  /** Each item as reads give it, with its error and source; and searches that filter. */
  async function itemsAndAnswers(e: Engine, kbId: string) {
    const items = e
      .listContents(ORG, kbId, 0, 1000)!
      .items.map((c) => [
        c.id,
        c.status,
        c.error,
        c.current.version,
        c.current.text,
        c.current.metadata,
        c.current.source,
        c.current.pages,
        c.live?.version.text,
      ]);
    const filtered = [];
    for (const filter of [{ tag: 'pdf' }, { i: { $lt: 3 } }] as MetadataFilter[])
      filtered.push(e.searchFullText(ORG, kbId, { query: 'lava glaciers note', limit: 8, filter }));
    return JSON.stringify([items, filtered]) + (await answers(e, kbId));
  }

  test('a restart from them gives back every item: pending, updated while pending, failed, from a file; new ids sort after', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir, { compute: { documentWorkers: 1, workerUrl: CRASHY }, batchItems: 1 });
    const { kbId, ids } = await fill(a, 12);
    const failed = await a.addContent(ORG, kbId, { text: 'This text says CRASH-WORKER every time.' });
    const source = { kind: 'file' as const, fileName: 'notes.pdf', mediaType: 'application/pdf', size: 1234, pages: 2 };
    const paged = await a.addContent(ORG, kbId, {
      text: 'Page one is about glaciers. Page two is about lava flows.',
      source,
      pages: [0, 28],
      metadata: { i: 100, tag: 'pdf' },
    });
    await a.waitForContent(failed, 30_000);
    await settle(a);
    expect(failed.status).toBe('failed');
    await close(a);

    // Indexing held: a new item and an update wait, texts on the heap; the update's old chunks still answer.
    const b = await open(dir, { holdIngestion: true });
    const waiting = await b.addContent(ORG, kbId, { text: 'A waiting note about coral reefs, with ☃ in it.', metadata: { i: 1 } });
    await b.updateContent(ORG, kbId, ids[2]!, { text: 'Note two, rewritten while indexing waits: desert sand.' });
    expect(b.getContent(ORG, kbId, ids[2]!)!.live!.version.text).toContain('Note 2 about');
    const snap = await snaps(b).snapshot({ reuseGraphs: true });
    expect(snap.manifest.items?.files.map((f) => f.kbId)).toEqual([kbId]);
    const before = await itemsAndAnswers(b, kbId);
    await close(b);

    const c = await open(dir, { holdIngestion: true });
    // How long the start waited, once loaded, for the checks of the dumps and linked files.
    expect(c.recovery.snapshot).toMatchObject({ seq: snap.seq, from: 'dumps', checksWaitMillis: expect.any(Number) });
    expect(c.recovery.records).toBe(0);
    expect(c.recovery.requeued).toBe(2);
    expect(await itemsAndAnswers(c, kbId)).toBe(before);
    const got = c.getContent(ORG, kbId, paged.id)!;
    expect([got.current.source, got.current.pages, got.status]).toEqual([source, [0, 28], 'ready']);
    expect(c.getContent(ORG, kbId, failed.id)).toMatchObject({ status: 'failed', error: expect.stringContaining('crashed') });
    expect(c.getContent(ORG, kbId, waiting.id)!.status).toBe('pending');
    // Ids made after the restart sort after every id it loaded (the id clock came with the dump).
    const later = await c.addContent(ORG, kbId, { text: 'Written after the restart, about penguins.' });
    expect(
      later.id >
        [...c.knowledgeBase(kbId)!.contents.keys()]
          .filter((id) => id !== later.id)
          .sort()
          .at(-1)!,
    ).toBe(true);
    c.startIngestion();
    await settle(c);
    expect(c.getContent(ORG, kbId, waiting.id)!.status).toBe('ready');
    expect(c.searchFullText(ORG, kbId, { query: 'desert sand rewritten', limit: 1 })[0]?.contentId).toBe(ids[2]);
    expect(c.searchFullText(ORG, kbId, { query: 'coral reefs waiting', limit: 1 })[0]?.contentId).toBe(waiting.id);
  }, 120_000);

  test('a later snapshot writes the items changed since the full item dump before it; restarts from it give back every item', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 40);
    const entry = (snap: { manifest: { files: { name: string; bytes: number; crc32?: number }[] } }, name: string) =>
      snap.manifest.files.find((f) => f.name === name)!;
    const itemsEntry = (snap: { manifest: { items?: { files: { kbId: string; file: string; base?: string }[] } } }) => snap.manifest.items!.files[0]!;
    const full = `items-${kbId}.dump`;
    const first = await snaps(a).snapshot({ reuseGraphs: true });
    expect(itemsEntry(first)).toEqual({ kbId, file: full });
    // New items, an update, deletes (of an item the base holds, and of one added since).
    for (let i = 0; i < 4; i++) await a.addContent(ORG, kbId, { text: `Later note ${i} about ${TOPICS[i % 5]}.`, metadata: { i: 500 + i } });
    const brief = await a.addContent(ORG, kbId, { text: 'Gone before the next snapshot: penguins.' });
    await settle(a);
    await a.updateContent(ORG, kbId, ids[3]!, { text: 'Rewritten: dunes and reefs.' });
    await a.deleteContent(ORG, kbId, ids[4]!);
    await a.deleteContent(ORG, kbId, brief.id);
    await settle(a);
    const second = await snaps(a).snapshot({ reuseGraphs: true });
    expect(itemsEntry(second)).toEqual({ kbId, file: `items-${kbId}.delta`, base: full });
    expect(entry(second, itemsEntry(second).file).bytes).toBeLessThan(entry(first, full).bytes / 2);
    expect(entry(second, full)).toEqual(entry(first, full));
    expect(sameFile(join(second.dir, full), join(first.dir, full))).toBe(true);
    await a.updateContent(ORG, kbId, ids[8]!, { text: 'Rewritten again: arctic glaciers.' });
    await settle(a);
    const third = await snaps(a).snapshot({ reuseGraphs: true });
    expect(itemsEntry(third).base).toBe(full);
    const before = await itemsAndAnswers(a, kbId);
    await close(a);

    // The snapshots before it pruned: the newest holds its base.
    rmSync(first.dir, { recursive: true });
    rmSync(second.dir, { recursive: true });
    const { e: b, warnings } = await openLogged(dir);
    expect(warnings).toEqual([]);
    expect(b.recovery.snapshot).toMatchObject({ seq: third.seq, from: 'dumps' });
    expect(b.recovery.records).toBe(0);
    expect(await itemsAndAnswers(b, kbId)).toBe(before);
    // Started from a delta: the next snapshot continues the same full dump, and holds what the delta held.
    await b.deleteContent(ORG, kbId, ids[5]!);
    await b.addContent(ORG, kbId, { text: 'After the restart: lava and glaciers.', metadata: { i: 900 } });
    await settle(b);
    const fourth = await snaps(b).snapshot({ reuseGraphs: true });
    expect(itemsEntry(fourth).base).toBe(full);
    expect(entry(fourth, full)).toEqual(entry(third, full));
    const afterFourth = await itemsAndAnswers(b, kbId);
    await close(b);
    rmSync(third.dir, { recursive: true });
    const c = await open(dir);
    expect(c.recovery.snapshot).toMatchObject({ seq: fourth.seq, from: 'dumps' });
    expect(await itemsAndAnswers(c, kbId)).toBe(afterFourth);
    // Past half of the items changed: a full dump, the base of the next deltas.
    for (const id of ids.slice(6, 30)) await c.updateContent(ORG, kbId, id, { text: `Rewritten ${id}: coral reefs.` });
    await settle(c);
    const fifth = await snaps(c).snapshot({ reuseGraphs: true });
    expect(itemsEntry(fifth)).toEqual({ kbId, file: full });
    expect(sameFile(join(fifth.dir, full), join(fourth.dir, full))).toBe(false);
    await c.addContent(ORG, kbId, { text: 'One more, about camels.', metadata: { i: 901 } });
    await settle(c);
    const sixth = await snaps(c).snapshot({ reuseGraphs: true });
    expect(itemsEntry(sixth).base).toBe(full);
    expect(sameFile(join(sixth.dir, full), join(fifth.dir, full))).toBe(true);
    const last = await itemsAndAnswers(c, kbId);
    await close(c);

    // The delta's base damaged in a text's length (a fraction now), found by the file's checksum in
    // another thread while the dumps load: reported, nothing read on it meanwhile, the records replayed.
    rmSync(fifth.dir, { recursive: true });
    const good = readFileSync(join(sixth.dir, full));
    const bad = Buffer.from(good);
    const headerBytes = bad.readUInt32LE(12);
    const header = JSON.parse(bad.subarray(24, 24 + headerBytes).toString()) as { sections: { path: string; offset: number; bytes: number }[] };
    const lengths = header.sections.find((s) => s.path === 'versions.textChars')!;
    const from = Math.ceil((24 + headerBytes) / 8) * 8 + lengths.offset;
    for (let at = from; at < from + lengths.bytes; at += 8) bad[at + 4]! ^= 0x10;
    rmSync(join(sixth.dir, full));
    writeFileSync(join(sixth.dir, full), bad);
    const { e: d, warnings: dWarnings } = await openLogged(dir);
    expect(dWarnings.map((w) => w.message)).toEqual(['item dumps unusable; the snapshot records are replayed']);
    expect(d.recovery.snapshot).toMatchObject({ seq: sixth.seq, from: 'records' });
    expect(await itemsAndAnswers(d, kbId)).toBe(last);
  }, 180_000);

  test("a damaged item dump or text file is reported and the same snapshot's records are replayed", async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId } = await fill(a, 16);
    const snap = await snaps(a).snapshot({ reuseGraphs: true });
    const before = await answers(a, kbId);
    await close(a);
    const texts = join(snap.dir, snap.manifest.items!.texts);
    const items = join(snap.dir, snap.manifest.items!.files[0]!.file);
    const flip = (path: string, at: number) => {
      const bytes = readFileSync(path);
      bytes[at]! ^= 0x20;
      writeFileSync(path, bytes);
    };
    const reopen = async () => {
      const { e, warnings } = await openLogged(dir);
      expect(e.recovery.snapshot).toMatchObject({ seq: snap.seq, from: 'records' });
      expect(await answers(e, kbId)).toBe(before);
      await close(e);
      return warnings.map((w) => [w.message, String(w.details?.reason)]);
    };
    // A text changed: found by the worker's checksum after the dumps were loaded.
    flip(texts, 5);
    expect(await reopen()).toEqual([['item dumps unusable; the snapshot records are replayed', expect.stringMatching(/texts\.bin fails its checksum/)]]);
    flip(texts, 5);
    // A section of the item dump changed (a text's place, a fraction now): refused as it is loaded,
    // before the file's checksum fails in the other thread.
    flip(items, statSync(items).size - 200);
    expect(await reopen()).toEqual([['item dumps unusable; the snapshot records are replayed', expect.stringMatching(/has its text at [0-9]+\.[0-9]+/)]]);
    flip(items, statSync(items).size - 200);
    // The text file cut short.
    const whole = readFileSync(texts);
    writeFileSync(texts, whole.subarray(0, 10));
    expect(await reopen()).toEqual([['item dumps unusable; the snapshot records are replayed', expect.stringMatching(/expected at least/)]]);
  }, 120_000);

  test('none while another configuration is built (the records are replayed); a mostly dead text file is dumped and written anew at the start', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const filled = await open(dir);
    const { kbId, ids } = await fill(filled, 10);
    await close(filled);
    // Indexing held: the build stays under way.
    const a = await open(dir, { holdIngestion: true });
    expect(await a.reembed(ORG, kbId, { ...CONFIG, chunking: { size: 100, overlap: 0 } })).toBe('started');
    const building = await snaps(a).snapshot({ reuseGraphs: true });
    expect(building.manifest.indexes?.length).toBe(2);
    expect(building.manifest.items).toBeUndefined();
    const before = await answers(a, kbId);
    await close(a);
    const b = await open(dir);
    expect(b.recovery.snapshot?.from).toBe('records');
    expect(await answers(b, kbId)).toBe(before);
    await settle(b);
    while (b.knowledgeBase(kbId)!.building) await Bun.sleep(20);

    // Most texts deleted: the file is more dead than alive. The items are dumped still; a start
    // from them writes the live texts into a new file.
    for (const id of ids.slice(2)) await b.deleteContent(ORG, kbId, id);
    const sparse = await snaps(b).snapshot({ reuseGraphs: true });
    expect(sparse.manifest.items).toBeDefined();
    const texts = (await b.metrics()).textBytes;
    expect(texts.dead).toBeGreaterThan(texts.live);
    const after = await answers(b, kbId);
    await close(b);
    const c = await open(dir);
    expect(c.recovery.snapshot?.from).toBe('dumps');
    expect(await answers(c, kbId)).toBe(after);
    expect((await c.metrics()).textBytes).toEqual({ live: texts.live, dead: 0 });
  }, 120_000);

  test('a start whose text file is mostly dead texts writes the live ones into a new file; every text and hit reads the same', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    let e = await open(dir);
    const kb = await e.createKnowledgeBase(ORG, { name: 'rewrite', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });
    const settled = async () => {
      while (e.stats().queueDepth > 0 || [...e.knowledgeBase(kb.id)!.contents.values()].some((i) => i.status === 'pending' || i.status === 'processing'))
        await Bun.sleep(20);
    };
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await e.addContent(ORG, kb.id, { text: `item ${i} first words about apples, wide ${i % 4 === 0 ? '漢字' : 'plain'}` })).id);
    await settled();
    // Each item replaced three times (some while the one before waits): three dead texts to one live.
    for (let round = 1; round <= 3; round++) {
      for (let i = 0; i < ids.length; i++)
        await e.updateContent(ORG, kb.id, ids[i]!, { text: `item ${i} round ${round} words about pears ${i % 4 === 0 ? 'ß漢' : 'plain'}` });
      if (round !== 2) await settled();
    }
    await settled();
    const before = (await e.metrics()).textBytes;
    expect(before.dead).toBeGreaterThan(before.live);
    const answers = (eng: Engine) => ({
      texts: ids.map((id) => eng.getContent(ORG, kb.id, id).current.text),
      hits: eng.searchFullText(ORG, kb.id, { query: 'round pears', limit: 20 }).map(({ doc, ...hit }) => hit),
    });
    const expected = answers(e);
    expect(expected.texts[4]).toBe('item 4 round 3 words about pears ß漢');
    const snap = await snaps(e).snapshot();
    expect(snap.manifest.items?.files.length).toBe(1);
    await close(e);
    e = await open(dir);
    expect(e.recovery.snapshot).toMatchObject({ seq: snap.seq, from: 'dumps' });
    expect(answers(e)).toEqual(expected);
    expect((await e.metrics()).textBytes).toEqual({ live: before.live, dead: 0 });
    expect(statSync(join(dir, 'text', 'texts.bin')).size).toBe(before.live);
    // Texts written after the rewrite follow the live ones.
    const added = await e.addContent(ORG, kb.id, { text: 'one more about plums' });
    await settled();
    expect(e.getContent(ORG, kb.id, added.id).current.text).toBe('one more about plums');
    expect(answers(e).texts).toEqual(expected.texts);
  });
});

test('a shutdown leaves a few writes to the log only while the newest snapshot graph lacks few vectors', async () => {
  const dir = TestServer.tempDir();
  dirs.push(dir);
  const e = await open(dir);
  const { kbId } = await fill(e, 24);
  const vectors = e.knowledgeBase(kbId)!.vectors!;
  while (!vectors.graphReady) await Bun.sleep(20);
  const policy = {
    intervalMs: 3_600_000,
    logBytes: 1 << 30,
    logGrowth: 0,
    dumpChunks: 1_000_000,
    keep: 2,
    checkMs: 20,
    maxBackoffMs: 1000,
    shutdownLogBytes: 1 << 20,
    shutdownGraphLag: 4,
  };
  const stop = async () => {
    const manager = new SnapshotManager(e, snaps(e), new LocalSnapshotStore(snaps(e).dir), policy, { info() {}, warn() {}, error() {} });
    await manager.start();
    await manager.shutdown(30_000);
  };
  await snaps(e).snapshot();
  const newest = snaps(e).latest!.seq;
  expect(snaps(e).latest!.manifest.graphs[0]!.vectors).toBe(vectors.size);
  // One vector more than the snapshot's graph holds: the stop leaves it to the log.
  await e.addContent(ORG, kbId, { text: 'A short note.' });
  await settle(e);
  await stop();
  expect(snaps(e).latest!.seq).toBe(newest);
  // Past shutdownGraphLag (the log still small): the stop snapshots, with the graph as it is.
  for (let i = 0; i < 5; i++) await e.addContent(ORG, kbId, { text: `Short note ${i}.` });
  await settle(e);
  expect(e.lastSequence - newest).toBeLessThan(20);
  await stop();
  expect(snaps(e).latest!.seq).toBe(e.lastSequence);
  const before = await answers(e, kbId);
  await close(e);
  const again = await open(dir);
  expect(again.recovery.records).toBe(0);
  expect(await answers(again, kbId)).toBe(before);
}, 120_000);

describe('snapshots taken while serving', () => {
  test('one after appends continues the newest (records linked, the log as tails); after many updates one compacts', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const a = await open(dir);
    const { kbId, ids } = await fill(a, 24);
    const vectors = a.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    // The first snapshot has none before it to fall back to: the next is written whole too.
    const zeroth = await snaps(a).snapshot();
    await a.addContent(ORG, kbId, { text: 'A note between the first two snapshots, about camels.' });
    await settle(a);
    while (!vectors.graphReady) await Bun.sleep(20);
    const first = await snaps(a).snapshot();
    expect(first.manifest.tails).toBeUndefined();
    expect(statSync(join(first.dir, RECORDS_FILE)).ino).not.toBe(statSync(join(zeroth.dir, RECORDS_FILE)).ino);
    // Appends only: nothing a compaction would drop.
    for (let i = 0; i < 12; i++) await a.addContent(ORG, kbId, { text: `Appended note ${i} about ${TOPICS[i % 5]}.`, metadata: { i: 200 + i } });
    await settle(a);
    while (!vectors.graphReady) await Bun.sleep(20);
    expect(a.graphsOutsideFiles()).toBe(0);
    const second = await snaps(a).snapshot();
    expect(tailSnapshots(second.manifest)).toBe(1);
    expect(statSync(join(second.dir, RECORDS_FILE)).ino).toBe(statSync(join(first.dir, RECORDS_FILE)).ino);
    expect(second.manifest.stats.records).toBe(first.manifest.stats.records + (second.seq - first.seq));
    // The graph is the builder's file, linked as it is.
    expect(second.manifest.graphs).toEqual([{ kbId, file: expect.any(String), vectors: vectors.size, from: 'memory', docs: expect.any(String) }]);
    const appended = await answers(a, kbId);
    await close(a);

    const b = await open(dir);
    expect(b.recovery.snapshot).toMatchObject({ seq: second.seq, from: 'dumps' });
    expect(b.recovery.records).toBe(0);
    expect(await answers(b, kbId)).toBe(appended);
    // Each item rewritten twice: most of the records a compaction would keep are superseded.
    for (const id of ids.slice(2)) await b.updateContent(ORG, kbId, id, { text: `Rewritten ${id} about ${TOPICS[1]}.` });
    await settle(b);
    for (const id of ids.slice(2)) await b.updateContent(ORG, kbId, id, { text: `Rewritten again ${id} about ${TOPICS[3]}.` });
    await settle(b);
    const bVectors = b.knowledgeBase(kbId)!.vectors!;
    while (!bVectors.graphReady) await Bun.sleep(20);
    const third = await snaps(b).snapshot();
    expect(third.manifest.tails).toBeUndefined();
    expect(third.manifest.stats.records).toBeLessThan(second.manifest.stats.records + (third.seq - second.seq));
    const updated = await answers(b, kbId);
    await close(b);
    const c = await open(dir);
    expect(c.recovery.snapshot?.seq).toBe(third.seq);
    expect(await answers(c, kbId)).toBe(updated);
  }, 120_000);

  test('the log waits for a share of what the next snapshot writes: its dumps when it continues, every file when it compacts (the first, or after updates)', async () => {
    const dir = TestServer.tempDir();
    dirs.push(dir);
    const e = await open(dir);
    const { kbId } = await fill(e, 24);
    const vectors = e.knowledgeBase(kbId)!.vectors!;
    while (!vectors.graphReady) await Bun.sleep(20);
    await snaps(e).snapshot();
    expect(snaps(e).nextWriteBytes()).toBe(snaps(e).latest!.manifest.files.reduce((n, f) => n + f.bytes, 0));
    await e.addContent(ORG, kbId, { text: 'A note between the first two snapshots, about camels.' });
    await settle(e);
    while (!vectors.graphReady) await Bun.sleep(20);
    const snap = await snaps(e).snapshot();
    const bytes = (name: string) => snap.manifest.files.find((f) => f.name === name)!.bytes;
    // A delta's base counted (it is written again when the delta would pass half of it).
    const withBase = (d: { file: string; base?: string }) => bytes(d.file) + (d.base ? bytes(d.base) : 0);
    expect(snap.manifest.items!.files[0]!.base).toBeDefined();
    const dumps = withBase(snap.manifest.indexes![0]!) + withBase(snap.manifest.items!.files[0]!);
    const all = snap.manifest.files.reduce((n, f) => n + f.bytes, 0);
    expect(all).toBeGreaterThan(2 * dumps);
    const policy = { intervalMs: 3_600_000, logBytes: 1, logGrowth: 0.5, dumpChunks: 1_000_000, keep: 2, checkMs: 20, maxBackoffMs: 1000 };
    const quiet = { info() {}, warn() {}, error() {} };
    const local = new SnapshotManager(e, snaps(e), new LocalSnapshotStore(snaps(e).dir), policy, quiet);
    expect(snaps(e).nextWriteBytes()).toBe(dumps);
    expect(local.logThreshold()).toBe(0.5 * dumps);
    // A store elsewhere is sent every file.
    const remote = new SnapshotManager(e, snaps(e), Object.assign(new LocalSnapshotStore(snaps(e).dir), { isLocal: false }), policy, quiet);
    expect(remote.logThreshold()).toBe(0.5 * all);
    // A graph held in memory (started again here, before the builder writes it to a file): a
    // snapshot continuing this one could only link files, so the next one compacts (and builds it).
    vectors.startGraph();
    expect(e.graphsOutsideFiles()).toBe(1);
    expect(snaps(e).nextWriteBytes()).toBe(all);
    // A write sends the builder its vectors; the graph it saves is served from its file again.
    await e.addContent(ORG, kbId, { text: 'A note that wakes the graph builder, about reefs.' });
    await settle(e);
    while (!vectors.graphReady || e.graphsOutsideFiles() > 0) await Bun.sleep(20);
    expect(snaps(e).nextWriteBytes()).toBe(dumps);
    // Updates enough that the next one compacts: it rewrites everything.
    const listed = e.listContents(ORG, kbId, 0, 100)!.items;
    for (const c of listed) await e.updateContent(ORG, kbId, c.id, { text: `Rewritten ${c.id}.` });
    await settle(e);
    expect(snaps(e).nextWriteBytes()).toBe(all);
  }, 120_000);
});
