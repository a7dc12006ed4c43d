// HNSW graphs built off the main thread (engine/vector/graph-builder.ts, graph-worker.ts): the
// worker's graph recalls as one built on this thread does, searches stay exact over the vectors
// the served graph lacks, a delete or update during a build neither comes back nor loses a vector,
// the main thread spends little of the building's time, and an engine restarts on what it built.
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Index, MetricKind, ScalarKind } from 'usearch';
import type { Engine } from '../../engine';
import { normalize } from '../../engine/embedding/provider';
import type { KnowledgeBase } from '../../engine/kb/knowledge-base';
import { GraphBuilder } from '../../engine/vector/graph-builder';
import { insertIntoGraph } from '../../engine/vector/graph-insert';
import { VectorIndex } from '../../engine/vector/vector-index';
import { openEngine } from '../../snapshots';
import { textKbConfig } from '../helpers/kb-config';
import { serveEmbeddings, wordHashVector } from '../helpers/embedder-stub';

let seed = 23;
const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
const randomUnit = (d: number) => normalize(Float32Array.from({ length: d }, rand));

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'kb-graph-builder-'));
  dirs.push(d);
  return d;
};
const builders: GraphBuilder[] = [];
afterEach(async () => {
  for (const b of builders.splice(0)) await b.stop();
});
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const DIMS = 32;

/** An index with its rows in a file (so the builder may take it) holding `n` random vectors. */
function filled(n: number, exactThreshold = 500) {
  const dir = tempDir();
  const index = new VectorIndex({
    dimensions: DIMS,
    quantization: 'f32',
    connectivity: 16,
    expansionAdd: 128,
    expansionSearch: 128,
    exactThreshold,
    file: join(dir, 'kb.vectors'),
  });
  const vecs = Array.from({ length: n }, () => randomUnit(DIMS));
  vecs.forEach((v, doc) => index.add(doc, index.quantize(v)));
  return { index, vecs, dir };
}

/** A builder over one index, as the engine's is over its knowledge bases. */
function builderOf(index: VectorIndex, options: ConstructorParameters<typeof GraphBuilder>[2] = {}) {
  const kb = { vectorIndexes: () => [index] } as unknown as KnowledgeBase;
  const builder = new GraphBuilder(
    () => [kb],
    () => false,
    options,
  );
  builders.push(builder);
  return builder;
}

async function until(done: () => boolean, what: string, ms = 60_000) {
  const started = performance.now();
  while (!done()) {
    if (performance.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(2);
  }
}

function recallAt10(index: VectorIndex, queries: Float32Array[]): number {
  let found = 0;
  for (const q of queries) {
    const exact = new Set(index.exact(q, 10).map((h) => h.doc));
    found += index.search(q, 10).filter((h) => exact.has(h.doc)).length;
  }
  return found / (10 * queries.length);
}

/** CPU seconds of this process's main thread so far (Linux: its thread id is the process id). */
function mainThreadCpuSeconds(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

describe('insertIntoGraph', () => {
  const graph = () =>
    new Index({
      dimensions: DIMS,
      metric: MetricKind.Cos,
      quantization: ScalarKind.I8,
      connectivity: 16,
      expansion_add: 64,
      expansion_search: 64,
      multi: false,
    });
  const keysFrom = (from: number, n: number) => BigUint64Array.from({ length: n }, (_, i) => BigInt(from + i));
  const rows = (n: number) => {
    const out = new Float32Array(n * DIMS);
    for (let i = 0; i < n; i++) out.set(randomUnit(DIMS), i * DIMS);
    return out;
  };

  test('a batch on more threads than the graph reserved for is inserted whole', () => {
    const index = graph();
    // Room reserved by a one-thread batch, then a batch that fits on two threads: USearch alone
    // fails part-way through it ("Reserve capacity ahead of insertions!").
    insertIntoGraph(index, keysFrom(0, 3000), rows(3000), 1);
    insertIntoGraph(index, keysFrom(3000, 1000), rows(1000), 2);
    insertIntoGraph(index, keysFrom(4000, 500), rows(500), 0);
    expect(Number(index.size())).toBe(4500);
    expect((index.contains(keysFrom(0, 4500)) as boolean[]).every(Boolean)).toBe(true);
  });

  test('keys already held take their new vectors', () => {
    const index = graph();
    insertIntoGraph(index, keysFrom(0, 200), rows(200), 1);
    const moved = rows(10);
    insertIntoGraph(index, keysFrom(50, 10), moved, 2);
    expect(Number(index.size())).toBe(200);
    for (let i = 0; i < 10; i++) {
      const hit = index.search(moved.subarray(i * DIMS, (i + 1) * DIMS), 1, 1);
      expect(hit.keys[0]).toBe(BigInt(50 + i));
    }
  });
});

describe('graphs built by the worker', () => {
  test('busy, then idle: the thread count changes and the worker keeps building', async () => {
    const { index } = filled(3000);
    let idle = false;
    const warnings: string[] = [];
    const kb = { vectorIndexes: () => [index] } as unknown as KnowledgeBase;
    const builder = new GraphBuilder(
      () => [kb],
      () => idle,
      // The worker keeps its copy between the phases, as during a bulk load that never catches up.
      { lingerMs: 60_000, log: (_level, message) => warnings.push(message) },
    );
    builders.push(builder);
    // One thread while requests run (the graph reserves for one), every core once idle.
    builder.schedule();
    await until(() => index.graphReady, 'the graph built while busy');
    idle = true;
    for (let doc = 3000; doc < 6000; doc++) index.add(doc, index.quantize(randomUnit(DIMS)));
    builder.schedule();
    await until(() => index.graphReady && index.graphPending === 0, 'the graph built while idle');
    expect(warnings).toEqual([]);
    const queries = Array.from({ length: 40 }, () => randomUnit(DIMS));
    expect(recallAt10(index, queries)).toBeGreaterThanOrEqual(0.95);
    index.close();
  }, 120_000);

  test('recall as a graph built on this thread, with the main thread a small part of the work', async () => {
    const n = 6000;
    const { index, vecs } = filled(n);
    const builder = builderOf(index);
    const cpu = mainThreadCpuSeconds();
    builder.schedule();
    await until(() => index.graphReady, 'the graph');
    const mainSeconds = mainThreadCpuSeconds() - cpu;
    expect(builder.stats.handoffs).toBeGreaterThanOrEqual(1);
    expect(builder.stats.jobs).toBeGreaterThanOrEqual(Math.ceil(n / 256));
    // The worker inserted; this thread copied rows and mapped the saved graph (clock ticks are 10 ms).
    expect(mainSeconds * 1000).toBeLessThan(Math.max(50, 0.25 * builder.stats.workerMs));

    const { index: here } = filled(0);
    vecs.forEach((v, doc) => here.add(doc, here.quantize(v)));
    while (!here.buildStep(1000, 256));
    const queries = Array.from({ length: 60 }, () => randomUnit(DIMS));
    const worker = recallAt10(index, queries);
    const local = recallAt10(here, queries);
    expect(worker).toBeGreaterThanOrEqual(0.95);
    expect(Math.abs(worker - local)).toBeLessThanOrEqual(0.03);
    // Scores are the exact cosines whichever graph found the document (each graph may miss one now
    // and then: both are approximate, and multi-threaded builds differ from run to run).
    let shared = 0;
    for (const q of queries.slice(0, 5)) {
      const found = new Map(index.search(q, 10).map((h) => [h.doc, h.score]));
      for (const h of here.search(q, 10)) {
        if (!found.has(h.doc)) continue;
        shared++;
        expect(found.get(h.doc)).toBe(h.score);
      }
    }
    expect(shared).toBeGreaterThanOrEqual(45);
    here.close();
    index.close();
  }, 120_000);

  test('while the served graph is behind, the vectors it lacks are searched exactly', async () => {
    const { index, vecs } = filled(2000);
    // Nothing in a graph yet: every vector pending, so graph search is exact search.
    const q0 = randomUnit(DIMS);
    expect(index.graphPending).toBe(2000);
    expect(index.search(q0, 10)).toEqual(index.exact(q0, 10));
    const builder = builderOf(index, { handoffMs: 50 });
    builder.schedule();
    await until(() => builder.stats.handoffs >= 1, 'a first hand-off');
    // More vectors while a graph is served: each, as its own query, is found first at once.
    const more = Array.from({ length: 3000 }, () => randomUnit(DIMS));
    more.forEach((v, i) => index.add(2000 + i, index.quantize(v)));
    vecs.push(...more);
    builder.schedule();
    let checks = 0;
    while (!index.graphReady) {
      expect(index.graphPending).toBeGreaterThan(0);
      // The newest vectors are the last to reach the served graph.
      for (let doc = 4990; doc < 5000; doc++) {
        const [top] = index.search(vecs[doc]!, 1);
        expect(top!.doc).toBe(doc);
        expect(top!.score).toBeCloseTo(1, 5);
      }
      checks++;
      await Bun.sleep(5);
    }
    expect(checks).toBeGreaterThan(0);
    expect(builder.stats.handoffs).toBeGreaterThanOrEqual(2);
    // Every hand-off moved exactly what the adopted graph holds out of the exact set: none is lost.
    const lost = vecs.map((v, doc) => (index.search(v, 1)[0]?.doc === doc ? -1 : doc)).filter((doc) => doc >= 0);
    expect(lost).toEqual([]);
    expect(
      recallAt10(
        index,
        Array.from({ length: 40 }, () => randomUnit(DIMS)),
      ),
    ).toBeGreaterThanOrEqual(0.95);
    index.close();
  }, 120_000);

  test('a delete or update during a build does not come back, and no other vector is lost', async () => {
    const { index, vecs } = filled(3000);
    const builder = builderOf(index);
    builder.schedule();
    // The first jobs (documents 0…511) are with the worker, the rest not yet sent.
    await until(() => builder.stats.jobs >= 2, 'jobs in flight');
    expect(index.graphReady).toBe(false);
    const removed = [...Array.from({ length: 50 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 2000 + i)];
    for (const doc of removed) index.remove(doc);
    // Stored again with another vector (as the log replays an update onto the same document).
    const updated = new Map<number, Float32Array>();
    for (let doc = 50; doc < 60; doc++) {
      updated.set(doc, randomUnit(DIMS));
      index.add(doc, index.quantize(updated.get(doc)!));
    }
    builder.schedule();
    await until(() => index.graphReady, 'the graph');
    expect(index.size).toBe(3000 - removed.length);
    for (const doc of removed) {
      const hits = index.search(vecs[doc]!, 10).map((h) => h.doc);
      expect(hits).not.toContain(doc);
    }
    for (const [doc, v] of updated) {
      const [top] = index.search(v, 1);
      expect(top).toEqual({ doc, score: expect.closeTo(1, 5) });
    }
    for (let doc = 60; doc < 3000; doc += 37) {
      if (removed.includes(doc)) continue;
      expect(index.search(vecs[doc]!, 1)[0]!.doc).toBe(doc);
    }
    // The graph a snapshot saves holds every live vector once and none of the removed ones.
    const path = join(tempDir(), 'saved.usearch');
    index.saveGraph(path);
    expect(index.graphDocs()).toEqual(index.aliveDocs());
    const saved = new Index({
      dimensions: DIMS,
      metric: MetricKind.Cos,
      quantization: ScalarKind.I8,
      connectivity: 16,
      expansion_add: 128,
      expansion_search: 128,
      multi: false,
    });
    saved.load(path);
    expect(Number(saved.size())).toBe(index.size);
    expect((saved.contains(BigUint64Array.from(removed, BigInt)) as boolean[]).filter(Boolean)).toEqual([]);
    expect((saved.contains(BigUint64Array.from(index.aliveDocs(), BigInt)) as boolean[]).every(Boolean)).toBe(true);
    // Built on this thread from here (a snapshot's worker does so): the view becomes writable, nothing is lost.
    index.add(3000, index.quantize(randomUnit(DIMS)));
    while (!index.buildStep(1000, 256));
    expect(index.graphDocs()).toEqual(index.aliveDocs());
    index.close();
  }, 120_000);

  test('a builder stopped mid-build leaves no graph file behind once the index closes', async () => {
    const { index, dir } = filled(3000);
    const builder = builderOf(index);
    builder.schedule();
    await until(() => builder.stats.jobs >= 2, 'jobs in flight');
    await builder.stop();
    index.close();
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);
});

// --- an engine restarting on graphs it built off-thread ---------------------------------------------

const EDIMS = 64;
const stub = serveEmbeddings((text) => wordHashVector(text, EDIMS));
afterAll(() => stub.stop(true));

const ORG = 'org_gb';
const TOPICS = ['volcano lava eruption', 'glacier ice arctic', 'desert dunes camel', 'coral reef ocean', 'rainforest canopy birds', 'city traffic trains'];

describe('an engine on graphs built off-thread', () => {
  const engines: Engine[] = [];
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.close().catch(() => {});
  });
  async function open(dataDir: string) {
    const { engine, snapshots } = await openEngine({
      dataDir,
      compute: { documentWorkers: 1, settings: { http: { url: `http://127.0.0.1:${stub.port}`, timeoutMs: 10_000, retries: 0 } } },
      graphThreshold: 50,
      log: () => {},
    });
    engines.push(engine);
    return { engine, snapshots };
  }
  async function answers(e: Engine, kbId: string) {
    const out: unknown[] = [];
    for (const query of ['hot lava', 'melting ice', 'camel sand', 'reef fish', 'trains in the city']) {
      out.push(await e.searchSemantic(ORG, kbId, { query, limit: 8 }));
      out.push(await e.searchHybrid(ORG, kbId, { query, limit: 8, semanticWeight: 0.5, fusion: 'weighted' }));
    }
    return JSON.stringify(out);
  }

  test('answers are identical after a restart, with deletes during the build', async () => {
    const dir = tempDir();
    const { engine: a, snapshots } = await open(dir);
    const kb = await a.createKnowledgeBase(ORG, {
      name: 'gb',
      description: '',
      type: 'TEXT_HIGH_QUALITY',
      config: textKbConfig({ provider: 'http', model: 'stub', dimensions: EDIMS, metric: 'cosine', quantization: 'f32' }),
    });
    const items = await Promise.all(
      Array.from({ length: 600 }, (_, i) => a.addContent(ORG, kb.id, { text: `Note ${i}: ${TOPICS[i % 6]} ${TOPICS[(i * 5) % 6]} number ${i}` })),
    );
    // Deletes while ingestion and the graph build are under way.
    for (let i = 0; i < 600; i += 7) await a.deleteContent(ORG, kb.id, items[i]!.id);
    while (a.stats().queueDepth > 0) await Bun.sleep(10);
    const vectors = a.knowledgeBase(kb.id)!.vectors!;
    await until(() => vectors.graphReady, 'the graph');
    const stats = (a as unknown as { pacer: GraphBuilder }).pacer.stats;
    expect(stats.handoffs).toBeGreaterThanOrEqual(1);
    const before = await answers(a, kb.id);
    const size = vectors.size;
    expect(size).toBe(600 - Math.ceil(600 / 7));
    for (let i = 0; i < 600; i += 7) expect(before).not.toContain(items[i]!.id);
    // The snapshot takes the served graph (a view of the worker's file) with the documents it holds
    // (the last ones may still be on their way into it: a restart builds what it lacks).
    const snap = await snapshots.snapshot({ reuseGraphs: true });
    expect(snap.manifest.graphs).toEqual([{ kbId: kb.id, file: expect.any(String), vectors: expect.any(Number), from: 'memory', docs: expect.any(String) }]);
    expect(snap.manifest.graphs[0]!.vectors).toBeLessThanOrEqual(size);
    await a.close();
    engines.splice(0);

    const { engine: b } = await open(dir);
    expect(b.recovery.snapshot?.seq).toBe(snap.seq);
    const again = b.knowledgeBase(kb.id)!.vectors!;
    await until(() => again.graphReady, 'the graph after the restart');
    expect(again.size).toBe(size);
    expect(await answers(b, kb.id)).toBe(before);
  }, 120_000);
});
