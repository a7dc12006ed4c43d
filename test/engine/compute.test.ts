// The worker lanes with the real offline model (USE-Lite): batches, query cache, preload.
import { afterAll, expect, test } from 'bun:test';
import type { EmbeddingSpec } from '../../engine/embedding/provider';
import { Compute } from '../../engine/ingest/compute';

const USE: EmbeddingSpec = { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512 };
const compute = new Compute({ documentWorkers: 1, queryWorkers: 1, queryCacheSize: 10 });
afterAll(() => compute.close());

test('preload loads the model in every worker of both lanes', async () => {
  const millis = await compute.preload(USE);
  expect(millis).toBeGreaterThanOrEqual(0);
});

test('a batch of items comes back chunked, analyzed and embedded, one result per item', async () => {
  const chunking = { size: 60, overlap: 0 };
  const results = await compute.process(
    [
      { text: 'Short note about tea.', chunking },
      { text: 'A longer text about coffee. It has two sentences that will not fit in one chunk of sixty.', chunking },
    ],
    USE,
  );
  expect(results.length).toBe(2);
  const [a, b] = results;
  if (!a!.ok || !b!.ok) throw new Error('processing failed');
  expect(a!.chunks.length).toBe(1);
  expect(b!.chunks.length).toBeGreaterThan(1);
  expect(b!.vectors!.length).toBe(b!.chunks.length);
  for (const v of [...a!.vectors!, ...b!.vectors!]) {
    expect(v.length).toBe(512);
    expect(Math.hypot(...v)).toBeCloseTo(1, 4);
  }
  expect(a!.chunks[0]!.terms).toContain('tea');
});

test('query vectors are cached per model and text', async () => {
  const first = await compute.embedQuery(USE, 'where is the station');
  const again = await compute.embedQuery(USE, 'where is the station');
  expect(again).toBe(first); // the same object: served from the cache
  const other = await compute.embedQuery(USE, 'where is the airport');
  expect(other).not.toBe(first);
  expect([...other]).not.toEqual([...first]);
});

test('a failing model surfaces as an EmbeddingError for queries and a per-item error for documents', async () => {
  const broken: EmbeddingSpec = { provider: 'http', model: 'm', dimensions: 4 }; // no endpoint configured
  await expect(compute.embedQuery(broken, 'x')).rejects.toThrow(/EMBEDDING_HTTP_URL/);
  const [r] = await compute.process([{ text: 'hello', chunking: { size: 100, overlap: 0 } }], broken);
  expect(r!.ok).toBe(false);
  expect(!r!.ok && r!.error).toContain('embedding failed');
});

test('document workers run at a lower priority than the query lane and the request thread (Linux)', async () => {
  if (process.platform !== 'linux') return;
  // After preload both lanes' workers exist. A thread's nice value is field 19 of its stat line.
  const { readdirSync, readFileSync } = await import('node:fs');
  const niceOf = (tid: string) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
  const nice = readdirSync('/proc/self/task').map(niceOf);
  expect(niceOf(String(process.pid))).toBe(0);
  expect(nice.filter((n) => n === 10).length).toBeGreaterThanOrEqual(1); // the one document worker (and threads it started)
  // The query worker stays at normal priority: it answers a query while nothing else is asked of it.
  const probe = new Compute({ documentWorkers: 1, queryWorkers: 1 });
  try {
    await probe.preload(USE);
    const after = readdirSync('/proc/self/task').map(niceOf);
    // One more document worker at 10; the new query worker (and its threads) at 0.
    expect(after.filter((n) => n === 10).length).toBeGreaterThan(nice.filter((n) => n === 10).length);
    expect(after.filter((n) => n === 0).length).toBeGreaterThan(nice.filter((n) => n === 0).length);
  } finally {
    await probe.close();
  }
});
