// When the snapshot policy (snapshots/policy.ts) takes a snapshot for the log's size: on the log
// written since the newest snapshot (not the part kept for the one before, which made every check
// of a bulk load take another snapshot), and only once that also reaches SNAPSHOT_LOG_GROWTH of
// what the next snapshot writes (its dumps when it continues the newest). Whether a snapshot holds dumps of the engine's state: at shutdown and once
// writes pause always, while writes flow only up to SNAPSHOT_DUMP_MAX_CHUNKS (taking them holds the
// main thread).
import { afterEach, expect, test } from 'bun:test';
import { cpSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { listSnapshotDirs, LocalSnapshotStore, openEngine, SnapshotManager, type Snapshotter, type SnapshotStore, type StoredSnapshot } from '../../snapshots';
import { NO_EMBEDDING, textKbConfig } from '../helpers/kb-config';
import { TestServer } from '../helpers/server';
import { charHashVector, serveEmbeddings } from '../helpers/embedder-stub';

const ORG = 'org_p';
const quiet = { info() {}, warn() {}, error() {} };
/** The policy's settings these tests do not vary. */
const POLICY = { intervalMs: 3_600_000, keep: 2, checkMs: 20, maxBackoffMs: 1000, dumpChunks: 1_000_000 };
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function setUp(policy: { logBytes: number; logGrowth: number; dumpChunks?: number; shutdownLogBytes?: number; idleMs?: number }) {
  const dir = TestServer.tempDir();
  const { engine, snapshots } = await openEngine({ dataDir: dir, compute: { documentWorkers: 1 }, log: () => {} });
  const manager = new SnapshotManager(engine, snapshots, new LocalSnapshotStore(snapshots.dir), { ...POLICY, ...policy }, quiet);
  cleanup.push(async () => {
    await manager.stop();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const kb = await engine.createKnowledgeBase(ORG, { name: 'p', description: '', type: 'TEXT_HIGH_QUALITY', config: textKbConfig(NO_EMBEDDING) });
  let n = 0;
  /** Write items until the log since the newest snapshot holds at least `bytes`. */
  const writeUntil = async (bytes: number, snapshots: Snapshotter) => {
    while ((await engine.logBytes(snapshots.latest?.seq ?? 0)) < bytes)
      await engine.addContent(ORG, kb.id, { text: `Item ${n++} ${'words about glaciers '.repeat(40)}` });
  };
  return { dir, kb, engine, snapshots, manager, writeUntil, write: () => engine.addContent(ORG, kb.id, { text: `Item ${n++}` }) };
}

/** Lets the manager check a few times (checkMs 20). */
const checks = () => Bun.sleep(300);

async function snapshotAfter(snapshots: Snapshotter, seq: number): Promise<number> {
  const until = Date.now() + 20_000;
  while ((snapshots.latest?.seq ?? 0) <= seq) {
    if (Date.now() > until) throw new Error('no snapshot came');
    await Bun.sleep(20);
  }
  return snapshots.latest!.seq;
}

test('the log since the newest snapshot decides, not the part kept for the snapshot before it', async () => {
  const { engine, snapshots, manager, writeUntil, write } = await setUp({ logBytes: 64 * 1024, logGrowth: 0 });
  await manager.start();
  await writeUntil(64 * 1024, snapshots);
  const first = await snapshotAfter(snapshots, 0);
  await writeUntil(64 * 1024, snapshots);
  const second = await snapshotAfter(snapshots, first);
  // The log still holds what the first snapshot needs (more than 64 KiB): a small write is no
  // reason for a third.
  expect(await engine.logBytes()).toBeGreaterThan(64 * 1024);
  await write();
  await checks();
  expect(snapshots.latest!.seq).toBe(second);
  expect(await engine.logBytes(second)).toBeLessThan(64 * 1024);
}, 60_000);

test('past SNAPSHOT_LOG_MB, the log must also reach SNAPSHOT_LOG_GROWTH of what the next snapshot writes', async () => {
  const { engine, snapshots, manager, writeUntil } = await setUp({ logBytes: 4 * 1024, logGrowth: 1 });
  await manager.start();
  await writeUntil(128 * 1024, snapshots);
  // Indexed first: an item indexed after the snapshots would log a record they lack.
  while (engine.stats().queueDepth > 0) await Bun.sleep(10);
  // A snapshot of everything written (the first call may join one the writes started).
  await manager.run('test');
  await manager.run('test');
  expect(snapshots.latest!.seq).toBe(engine.lastSequence);
  const first = snapshots.latest!.seq;
  const threshold = manager.logThreshold();
  // Only appends since the newest: the next continues it, and writes only its dumps.
  const { manifest } = snapshots.latest!;
  const bytes = (name: string) => manifest.files.find((f) => f.name === name)!.bytes;
  // A delta's base counted (it is written again once the delta would pass half of it).
  const withBase = (d: { file: string; base?: string }) => bytes(d.file) + (d.base ? bytes(d.base) : 0);
  expect(threshold).toBe(withBase(manifest.indexes![0]!) + withBase(manifest.items!.files[0]!));
  expect(threshold).toBeGreaterThan(4 * 1024); // the share decides, not SNAPSHOT_LOG_MB
  // Well past SNAPSHOT_LOG_MB, short of what the next one writes: no snapshot.
  await writeUntil(threshold / 2, snapshots);
  await checks();
  expect(snapshots.latest!.seq).toBe(first);
  // Past it: one, continuing the newest.
  await writeUntil(threshold, snapshots);
  await snapshotAfter(snapshots, first);
  expect(snapshots.latest!.manifest.tails).toBeDefined();
}, 60_000);

test('snapshots while serving hold dumps up to SNAPSHOT_DUMP_MAX_CHUNKS chunks, the one at shutdown always', async () => {
  const { dir, kb, engine, snapshots, manager, write } = await setUp({ logBytes: 1 << 30, logGrowth: 0, dumpChunks: 3 });
  const indexed = async () => {
    while (engine.stats().queueDepth > 0) await Bun.sleep(10);
  };
  const dumps = () => ({ items: snapshots.latest!.manifest.items !== undefined, indexes: snapshots.latest!.manifest.indexes?.length ?? 0 });
  for (let i = 0; i < 3; i++) await write();
  await indexed();
  expect(engine.stats().chunks).toBe(3);
  await manager.run('interval');
  expect(dumps()).toEqual({ items: true, indexes: 1 });
  await write();
  await indexed();
  await manager.run('interval');
  const noDumps = snapshots.latest!.seq;
  expect(noDumps).toBe(engine.lastSequence);
  expect(dumps()).toEqual({ items: false, indexes: 0 });
  // A start from it replays its records into the same state.
  const before = engine.searchFullText(ORG, kb.id, { query: 'item', limit: 10 }).map((h) => h.chunkId);
  expect(before).toHaveLength(4);
  await manager.stop();
  await engine.close();
  const again = await openEngine({ dataDir: dir, compute: { documentWorkers: 1 }, log: () => {} });
  try {
    expect(again.snapshots.latest!.seq).toBe(noDumps);
    expect(again.engine.searchFullText(ORG, kb.id, { query: 'item', limit: 10 }).map((h) => h.chunkId)).toEqual(before);
    // At shutdown, past the bound all the same: dumps, after a record that changes nothing when
    // nothing was written since that snapshot.
    const atShutdown = new SnapshotManager(
      again.engine,
      again.snapshots,
      new LocalSnapshotStore(again.snapshots.dir),
      { ...POLICY, logBytes: 1 << 30, logGrowth: 0, dumpChunks: 3 },
      quiet,
    );
    expect(again.engine.lastSequence).toBe(noDumps);
    await atShutdown.shutdown(30_000);
    expect(again.snapshots.latest!.seq).toBe(noDumps + 1);
    expect(again.snapshots.latest!.manifest.items).toBeDefined();
    expect(again.snapshots.latest!.manifest.indexes).toHaveLength(1);
  } finally {
    await again.engine.close();
  }
  const third = await openEngine({ dataDir: dir, compute: { documentWorkers: 1 }, log: () => {} });
  try {
    expect(third.snapshots.latest!.seq).toBe(noDumps + 1);
    expect(third.engine.searchFullText(ORG, kb.id, { query: 'item', limit: 10 }).map((h) => h.chunkId)).toEqual(before);
  } finally {
    await third.engine.close();
  }
}, 60_000);

test('a shutdown after a few writes leaves them to the log: the next start loads the newest snapshot and replays them', async () => {
  const shutdownLogBytes = 64 * 1024;
  const { dir, kb, engine, snapshots, manager, write } = await setUp({ logBytes: 1 << 30, logGrowth: 0, shutdownLogBytes });
  const indexed = async (e = engine) => {
    while (e.stats().queueDepth > 0) await Bun.sleep(10);
  };
  const search = (e = engine) => e.searchFullText(ORG, kb.id, { query: 'item', limit: 50 }).map((h) => `${h.chunkId} ${h.score}`);
  for (let i = 0; i < 3; i++) await write();
  await indexed();
  await manager.run('interval');
  const newest = snapshots.latest!.seq;
  expect(snapshots.latest!.manifest.items).toBeDefined();
  // A few writes since it: the stop takes no snapshot.
  for (let i = 0; i < 2; i++) await write();
  await indexed();
  const before = search();
  expect(before).toHaveLength(5);
  const tail = engine.lastSequence - newest;
  expect(tail).toBeGreaterThan(0);
  await manager.shutdown(30_000);
  expect(snapshots.latest!.seq).toBe(newest);
  await engine.close();

  // The start loads that snapshot's dumps and replays the log after it: the same answers.
  let again = await openEngine({ dataDir: dir, compute: { documentWorkers: 1 }, log: () => {} });
  let final: string[] = [];
  try {
    expect(again.engine.recovery.snapshot).toMatchObject({ seq: newest, from: 'dumps' });
    expect(again.engine.recovery.records).toBe(tail);
    await indexed(again.engine);
    expect(search(again.engine)).toEqual(before);
    // The log since the newest snapshot past the bound: the stop snapshots.
    let n = 0;
    while ((await again.engine.logBytes(newest)) < shutdownLogBytes)
      await again.engine.addContent(ORG, kb.id, { text: `Item more ${n++} ${'glacier words '.repeat(40)}` });
    await indexed(again.engine);
    const manager2 = new SnapshotManager(
      again.engine,
      again.snapshots,
      new LocalSnapshotStore(again.snapshots.dir),
      { ...POLICY, logBytes: 1 << 30, logGrowth: 0, shutdownLogBytes },
      quiet,
    );
    await manager2.start();
    await manager2.shutdown(30_000);
    expect(again.snapshots.latest!.seq).toBe(again.engine.lastSequence);
    // With a store elsewhere (which gets every change at a stop), a stop always snapshots.
    const atShutdown = again.snapshots.latest!.seq;
    await again.engine.addContent(ORG, kb.id, { text: 'Item last' });
    await indexed(again.engine);
    const remote = new CopyStore(TestServer.tempDir());
    cleanup.push(async () => rmSync(remote.root, { recursive: true, force: true }));
    const manager3 = new SnapshotManager(again.engine, again.snapshots, remote, { ...POLICY, logBytes: 1 << 30, logGrowth: 0, shutdownLogBytes }, quiet);
    await manager3.start();
    await manager3.shutdown(30_000);
    expect(again.snapshots.latest!.seq).toBeGreaterThan(atShutdown);
    expect((await remote.list())[0]?.seq).toBe(again.snapshots.latest!.seq);
    final = search(again.engine);
  } finally {
    await again.engine.close();
  }
  again = await openEngine({ dataDir: dir, compute: { documentWorkers: 1 }, log: () => {} });
  try {
    expect(again.engine.recovery.records).toBe(0);
    expect(final.length).toBeGreaterThan(6);
    expect(search(again.engine)).toEqual(final);
  } finally {
    await again.engine.close();
  }
}, 60_000);

/** A store in another directory (as a remote one: snapshots are copied there). */
class CopyStore implements SnapshotStore {
  readonly name = 'copy';
  readonly isLocal = false;
  constructor(readonly root: string) {}
  async upload(dir: string): Promise<void> {
    cpSync(dir, join(this.root, basename(dir)), { recursive: true });
  }
  async list(): Promise<StoredSnapshot[]> {
    return (await listSnapshotDirs(this.root)).map((d) => ({ seq: d.seq }));
  }
  async download(): Promise<void> {
    throw new Error('not used here');
  }
  async delete(seq: number): Promise<void> {
    for (const d of await listSnapshotDirs(this.root)) if (d.seq === seq) rmSync(d.dir, { recursive: true, force: true });
  }
}

test('once writes pause after enough of them, a snapshot with dumps (SNAPSHOT_IDLE_S); not while they go on, nor for a few', async () => {
  const idleMs = 1500;
  const shutdownLogBytes = 16 * 1024;
  // Past SNAPSHOT_DUMP_MAX_CHUNKS: the idle snapshot holds dumps all the same (it holds up no write).
  const { engine, snapshots, manager, write, writeUntil } = await setUp({ logBytes: 1 << 30, logGrowth: 0, idleMs, shutdownLogBytes, dumpChunks: 3 });
  await manager.start();
  const started = Date.now();
  await writeUntil(shutdownLogBytes, snapshots);
  // Writes a few milliseconds apart: no pause (unless one write alone took the whole pause).
  if (Date.now() - started < idleMs) expect(snapshots.latest).toBeUndefined();
  const first = await snapshotAfter(snapshots, 0);
  while (engine.stats().queueDepth > 0) await Bun.sleep(10);
  // The idle snapshot may have come before the last indexing records: then another pause takes them.
  const covering = engine.lastSequence === first ? first : await snapshotAfter(snapshots, first);
  expect(covering).toBe(engine.lastSequence);
  expect(engine.stats().chunks).toBeGreaterThan(3);
  expect(snapshots.latest!.manifest.items).toBeDefined();
  expect(snapshots.latest!.manifest.indexes).toHaveLength(1);
  // Nothing written: no more.
  await Bun.sleep(idleMs + 500);
  expect(snapshots.latest!.seq).toBe(covering);
  // A few writes (under shutdownLogBytes): left to the log.
  await write();
  await Bun.sleep(idleMs + 500);
  expect(snapshots.latest!.seq).toBe(covering);
  expect(await engine.logBytes(covering)).toBeGreaterThan(0);
}, 60_000);

test('once writes pause, a newest snapshot without dumps is followed by one with them, nothing written since', async () => {
  // A snapshot taken while writes flowed past SNAPSHOT_DUMP_MAX_CHUNKS holds none: a restart from it
  // would replay every record. The log since it is small (under shutdownLogBytes) and then empty.
  const idleMs = 300;
  const { engine, snapshots, manager, write } = await setUp({ logBytes: 1 << 30, logGrowth: 0, dumpChunks: 3, idleMs, shutdownLogBytes: 1 << 30 });
  for (let i = 0; i < 5; i++) await write();
  while (engine.stats().queueDepth > 0) await Bun.sleep(10);
  await manager.run('interval');
  const withoutDumps = snapshots.latest!.seq;
  expect(withoutDumps).toBe(engine.lastSequence);
  expect(snapshots.latest!.manifest.items).toBeUndefined();
  await manager.start();
  const withDumps = await snapshotAfter(snapshots, withoutDumps);
  expect(snapshots.latest!.manifest.items).toBeDefined();
  expect(snapshots.latest!.manifest.indexes).toHaveLength(1);
  // Its own sequence number: one record that changes nothing.
  expect(withDumps).toBe(withoutDumps + 1);
  expect(engine.lastSequence).toBe(withDumps);
  // Then no more.
  await Bun.sleep(3 * idleMs);
  expect(snapshots.latest!.seq).toBe(withDumps);
}, 60_000);

test('an idle snapshot waits for the graph to hold every vector', async () => {
  const dir = TestServer.tempDir();
  // A stub OpenAI-compatible embedder: deterministic 128-d vectors.
  const stub = serveEmbeddings((text) => charHashVector(text, 128));
  const { engine, snapshots } = await openEngine({
    dataDir: dir,
    compute: { documentWorkers: 1, settings: { http: { url: `http://127.0.0.1:${stub.port}`, timeoutMs: 10_000, retries: 0 } } },
    graphThreshold: 100,
    log: () => {},
  });
  const manager = new SnapshotManager(
    engine,
    snapshots,
    new LocalSnapshotStore(snapshots.dir),
    { ...POLICY, logBytes: 1 << 30, logGrowth: 0, idleMs: 50, shutdownLogBytes: 1 },
    quiet,
  );
  cleanup.push(async () => {
    await manager.stop();
    await engine.close();
    stub.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });
  await manager.start();
  const kb = await engine.createKnowledgeBase(ORG, {
    name: 'graph',
    description: '',
    type: 'TEXT_HIGH_QUALITY',
    // A wide beam while building: the graph lags well behind the last write.
    config: textKbConfig(
      { provider: 'http', model: 'stub', dimensions: 128, metric: 'cosine', quantization: 'f32' },
      { hnsw: { connectivity: 32, expansionAdd: 1000, expansionSearch: 64 } },
    ),
  });
  for (let i = 0; i < 3000; i += 250)
    await Promise.all(Array.from({ length: 250 }, (_, j) => engine.addContent(ORG, kb.id, { text: `item ${i + j} about topic ${(i + j) % 37}` })));
  const vectors = engine.knowledgeBase(kb.id)!.vectors!;
  while (engine.stats().queueDepth > 0 || vectors.size < 3000) await Bun.sleep(10);
  const covering = async () => {
    while (snapshots.latest?.seq !== engine.lastSequence) await Bun.sleep(20);
  };
  await covering();
  // Taken once the graph held every vector: a restart serves it whole, and a stop may skip its snapshot.
  expect(vectors.graphReady).toBe(true);
  expect(snapshots.latest!.manifest.graphs).toEqual([expect.objectContaining({ kbId: kb.id, vectors: vectors.graphKeys })]);
  expect(engine.vectorsOutsideGraphs()).toBe(0);
}, 120_000);
