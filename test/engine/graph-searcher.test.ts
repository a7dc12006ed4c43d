// Graph searches on the searcher's thread (engine/vector/graph-searcher.ts, graph-search-worker.ts):
// they find exactly what the request thread's own search finds, a newer graph is searched on the
// request thread until the worker views it, views of replaced graphs are let go, a stopped
// searcher leaves every search on the request thread, and an engine's hybrid search answers the
// same with the searcher as without it.
import { afterAll, afterEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalize } from '../../engine/embedding/provider';
import { DocSet } from '../../engine/filter/doc-set';
import type { KnowledgeBase } from '../../engine/kb/knowledge-base';
import { GraphBuilder } from '../../engine/vector/graph-builder';
import { GraphSearcher } from '../../engine/vector/graph-searcher';
import { VectorIndex } from '../../engine/vector/vector-index';
import { openEngine } from '../../snapshots';
import { serveEmbeddings, wordHashVector } from '../helpers/embedder-stub';
import { textKbConfig } from '../helpers/kb-config';

let seed = 41;
const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
const randomUnit = (d: number) => normalize(Float32Array.from({ length: d }, rand));

const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const DIMS = 32;

async function until(done: () => boolean, what: string, ms = 60_000) {
  const started = performance.now();
  while (!done()) {
    if (performance.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

/** An index with its rows in a file and a builder serving it views of the graphs it builds. */
async function servedIndex(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'kb-graph-searcher-'));
  dirs.push(dir);
  const index = new VectorIndex({
    dimensions: DIMS,
    quantization: 'f32',
    connectivity: 16,
    expansionAdd: 128,
    expansionSearch: 64,
    exactThreshold: 500,
    file: join(dir, 'kb.vectors'),
  });
  for (let doc = 0; doc < n; doc++) index.add(doc, index.quantize(randomUnit(DIMS)));
  const kb = { vectorIndexes: () => [index] } as unknown as KnowledgeBase;
  const builder = new GraphBuilder(
    () => [kb],
    () => true,
    { handoffMs: 0 },
  );
  closers.push(async () => {
    await builder.stop();
    index.close();
  });
  builder.schedule();
  await until(() => index.graphReady && index.servesView, 'the graph');
  return { index, builder };
}

function searcherOf(sweepMs = 5000) {
  const searcher = new GraphSearcher({ sweepMs, minVectors: 0 });
  closers.push(() => searcher.stop());
  return searcher;
}

/** Search through the searcher until it answers (it starts, then opens its view of the graph). */
async function warm(searcher: GraphSearcher, index: VectorIndex) {
  const q = randomUnit(DIMS);
  const answered = searcher.stats.answered;
  await until(() => {
    index.search(q, 10, undefined, index.startGraphSearch(searcher, q, 10));
    return searcher.stats.answered > answered;
  }, 'the searcher to answer');
}

/** Paths of graph files this process maps. */
function mappedGraphs(dir: string): string[] {
  return readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .filter((line) => line.includes(dir) && line.includes('graph'))
    .map((line) => line.slice(line.indexOf('/')));
}

describe('the graph searcher', () => {
  test("its searches find exactly what the request thread's find", async () => {
    const { index } = await servedIndex(3000);
    const searcher = searcherOf();
    await warm(searcher, index);
    const before = searcher.stats.answered;
    for (let i = 0; i < 50; i++) {
      const q = randomUnit(DIMS);
      const k = 1 + (i % 25);
      const started = index.startGraphSearch(searcher, q, k);
      expect(started).toBeDefined();
      expect(index.search(q, k, undefined, started)).toEqual(index.search(q, k));
    }
    expect(searcher.stats.answered - before).toBe(50);
  }, 120_000);

  test('a newer graph is searched here until the worker views it', async () => {
    const { index, builder } = await servedIndex(2000);
    const searcher = searcherOf();
    await warm(searcher, index);
    for (let doc = 2000; doc < 2600; doc++) index.add(doc, index.quantize(randomUnit(DIMS)));
    builder.schedule();
    await until(() => index.graphReady, 'a newer graph served');
    // The worker still views the old file: the first search of the new one is declined, and right.
    const q = randomUnit(DIMS);
    const declined = searcher.stats.declined;
    const started = index.startGraphSearch(searcher, q, 10);
    expect(index.search(q, 10, undefined, started)).toEqual(index.search(q, 10));
    expect(searcher.stats.declined).toBe(declined + 1);
    await warm(searcher, index);
    const answered = searcher.stats.answered;
    expect(index.search(q, 10, undefined, index.startGraphSearch(searcher, q, 10))).toEqual(index.search(q, 10));
    expect(searcher.stats.answered).toBe(answered + 1);
  }, 120_000);

  test("the view of a closed index's graph is let go", async () => {
    const { index } = await servedIndex(2000);
    const searcher = searcherOf(50);
    await warm(searcher, index);
    const dir = dirs[dirs.length - 1]!;
    expect(mappedGraphs(dir).length).toBe(2);
    index.close();
    // The request thread's view goes at once; the worker's within a few sweeps.
    expect(mappedGraphs(dir)).toEqual([expect.stringMatching(/\(deleted\)$/)]);
    await until(() => mappedGraphs(dir).length === 0, 'the view let go', 10_000);
  }, 120_000);

  test('a stopped searcher lets its views go and takes no search; they run on the request thread', async () => {
    const { index } = await servedIndex(1500);
    const searcher = searcherOf();
    await warm(searcher, index);
    const dir = dirs[dirs.length - 1]!;
    expect(mappedGraphs(dir)).toHaveLength(2);
    await searcher.stop();
    expect(mappedGraphs(dir)).toHaveLength(1);
    const q = randomUnit(DIMS);
    expect(index.startGraphSearch(searcher, q, 10)).toBeUndefined();
    expect(index.search(q, 10)).toHaveLength(10);
  }, 120_000);

  test('a search that will be exact, or of a graph below the size that gains, posts nothing', async () => {
    const { index } = await servedIndex(1500);
    const searcher = searcherOf();
    const few = DocSet.ofList(Uint32Array.from([3, 70, 900]), 1500);
    expect(index.startGraphSearch(searcher, randomUnit(DIMS), 10, few)).toBeUndefined();
    const small = new GraphSearcher({ minVectors: 1501 });
    closers.push(() => small.stop());
    expect(index.startGraphSearch(small, randomUnit(DIMS), 10)).toBeUndefined();
    expect(searcher.stats).toEqual({ answered: 0, declined: 0 });
    expect(small.stats).toEqual({ answered: 0, declined: 0 });
  }, 120_000);
});

// --- hybrid search in an engine ---------------------------------------------------------------------

const EDIMS = 64;
const stub = serveEmbeddings((text) => wordHashVector(text, EDIMS));
afterAll(() => stub.stop(true));
const ORG = 'org_gs';
const TOPICS = ['volcano lava eruption', 'glacier ice arctic', 'desert dunes camel', 'coral reef ocean', 'rainforest canopy birds', 'city traffic trains'];

test("an engine's hybrid search answers the same with the searcher as on the request thread alone", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-graph-searcher-engine-'));
  dirs.push(dataDir);
  const { engine } = await openEngine({
    dataDir,
    compute: { documentWorkers: 1, settings: { http: { url: `http://127.0.0.1:${stub.port}`, timeoutMs: 10_000, retries: 0 } } },
    graphThreshold: 50,
    searcherMinVectors: 0,
    log: () => {},
  });
  closers.push(() => engine.close());
  const kb = await engine.createKnowledgeBase(ORG, {
    name: 'gs',
    description: '',
    type: 'TEXT_HIGH_QUALITY',
    config: textKbConfig({ provider: 'http', model: 'stub', dimensions: EDIMS, metric: 'cosine', quantization: 'f32' }),
  });
  await Promise.all(
    Array.from({ length: 400 }, (_, i) => engine.addContent(ORG, kb.id, { text: `Note ${i}: ${TOPICS[i % 6]} ${TOPICS[(i * 5) % 6]} number ${i}` })),
  );
  // Every chunk indexed and in the served graph: no later hand-off changes the view mid-comparison.
  const held = engine.knowledgeBase(kb.id)!;
  const vectors = held.vectors!;
  await until(() => held.chunkCount === 400 && vectors.size === 400 && vectors.graphReady && vectors.servesView, 'every chunk in the graph');
  const searcher = (engine as unknown as { core: { searcher: GraphSearcher } }).core.searcher;
  const queries = ['hot lava', 'melting ice', 'camel sand', 'reef fish', 'trains in the city', 'birds'];
  const hybrid = async () => {
    const out: unknown[] = [];
    for (const query of queries) {
      out.push(await engine.searchHybrid(ORG, kb.id, { query, limit: 8, semanticWeight: 0.5, fusion: 'weighted' }));
      out.push(await engine.searchHybrid(ORG, kb.id, { query, limit: 5, semanticWeight: 0.3, fusion: 'rrf' }));
    }
    return JSON.stringify(out);
  };
  for (let tries = 0; searcher.stats.answered === 0; tries++) {
    if (tries > 500) throw new Error('the searcher never answered');
    await hybrid();
    await Bun.sleep(10);
  }
  const answered = searcher.stats.answered;
  const withSearcher = await hybrid();
  expect(searcher.stats.answered - answered).toBe(2 * queries.length);
  await searcher.stop();
  expect(await hybrid()).toBe(withSearcher);
}, 120_000);
