// A large content item is split across the document workers (engine/ingest/split.ts): with two
// workers it comes back with exactly the chunks, terms and vectors one worker gives, and both
// workers get a run of its chunks. Real workers, the real offline model (USE-Lite).
import { afterAll, describe, expect, test } from 'bun:test';
import { chunkText } from '../../engine/chunking/chunker';
import type { EmbeddingSpec } from '../../engine/embedding/provider';
import { Compute } from '../../engine/ingest/compute';
import type { ItemResult } from '../../engine/ingest/handlers';
import { joinResults, splitSpans } from '../../engine/ingest/split';

const USE: EmbeddingSpec = { provider: 'use-lite', model: 'universal-sentence-encoder-lite', dimensions: 512 };
const chunking = { size: 200, overlap: 20 };
const sentences = [
  'Refunds are issued within fourteen days.',
  'The station is north of the river.',
  'Tea grows on hillsides in the rain.',
  'Passwords reset from the account page.',
];
const big = Array.from({ length: 400 }, (_, i) => `${sentences[i % 4]} Item ${i} of the list.${i % 7 === 0 ? '\n\n' : ' '}`).join('');

const one = new Compute({ documentWorkers: 1, queryWorkers: 1 });
const two = new Compute({ documentWorkers: 2, queryWorkers: 1 });
afterAll(() => {
  one.close();
  two.close();
});

describe('splitting a large item across workers', () => {
  test('same chunks, terms and vectors as one worker, in order', async () => {
    expect(big.length).toBeGreaterThan(32 * chunking.size); // large enough to split
    // The reference: the whole item in one worker request, unsplit.
    const [whole] = await one.documents.run<ItemResult[]>({ type: 'process', items: [{ text: big, chunking }], embedding: USE, batch: one.batch });
    const requests: string[] = [];
    const run = two.documents.run.bind(two.documents);
    two.documents.run = ((req: { type: string; items?: unknown[] }) => {
      requests.push(`${req.type}${req.items ? `×${req.items.length}` : ''}`);
      return run(req as never);
    }) as typeof two.documents.run;
    const [split] = await two.process([{ text: big, chunking }], USE);
    // Spans found once, then runs of at most 64 chunks, at least one for each worker, sent at the same time.
    if (!whole!.ok) throw new Error('processing failed');
    const runs = Math.max(2, Math.ceil(whole!.chunks.length / 64));
    expect(requests).toEqual(['chunk', ...Array.from({ length: runs }, () => 'process×1')]);
    if (!whole!.ok || !split!.ok) throw new Error('processing failed');
    expect(split!.chunks.map(({ start, end }) => ({ start, end }))).toEqual(chunkText(big, chunking));
    expect(split!.chunks).toEqual(whole!.chunks);
    expect(split!.vectors!.length).toBe(whole!.vectors!.length);
    split!.vectors!.forEach((v, i) => expect(Math.max(...v.map((x, k) => Math.abs(x - whole!.vectors![i]![k]!)))).toBeLessThan(1e-5));
  }, 300_000);

  test('a large item reports its runs as they are done (at most 64 chunks each), also on one worker', async () => {
    const reports: number[] = [];
    const huge = big.repeat(3);
    // Chunked and analyzed only (no model): the runs are what is tested, not the embedding.
    const [result] = await one.process([{ text: huge, chunking }], undefined, (chunks) => reports.push(chunks));
    if (!result!.ok) throw new Error('processing failed');
    expect(reports.length).toBe(Math.ceil(result!.chunks.length / 64));
    expect(reports.every((n) => n <= 64)).toBe(true);
    expect(reports.reduce((a, b) => a + b, 0)).toBe(result!.chunks.length);
    expect(result!.chunks.map(({ start, end }) => ({ start, end }))).toEqual(chunkText(huge, chunking));
    // A small item is one request and reports nothing on its way.
    const small: number[] = [];
    await one.process([{ text: 'A short note.', chunking }], undefined, (n) => small.push(n));
    expect(small).toEqual([]);
  }, 120_000);

  test('runs are consecutive, near-equal and cover every span once', () => {
    const spans = Array.from({ length: 7 }, (_, i) => ({ start: i * 10, end: i * 10 + 10 }));
    const runs = splitSpans(spans, 3);
    expect(runs.map((r) => r.length)).toEqual([2, 2, 3]);
    expect(runs.flat()).toEqual(spans);
    expect(splitSpans(spans.slice(0, 1), 4)).toEqual([spans.slice(0, 1)]);
  });

  test('joined results: a failed embedding keeps the chunks for full-text; a failed chunking has none', () => {
    const chunk = (start: number) => ({ start, end: start + 1, terms: ['a'], tfs: [1], length: 1 });
    const ok = (start: number): ItemResult => ({ ok: true, chunks: [chunk(start)], vectors: [Float32Array.of(start)] });
    expect(joinResults([ok(0), ok(1)])).toEqual({ ok: true, chunks: [chunk(0), chunk(1)], vectors: [Float32Array.of(0), Float32Array.of(1)] });
    expect(joinResults([ok(0), { ok: false, error: 'embedding failed: down', chunks: [chunk(1)] }])).toEqual({
      ok: false,
      error: 'embedding failed: down',
      chunks: [chunk(0), chunk(1)],
    });
    expect(joinResults([ok(0), { ok: false, error: 'chunking failed: x' }])).toEqual({ ok: false, error: 'chunking failed: x' });
    expect(
      joinResults([
        { ok: true, chunks: [chunk(0)] },
        { ok: true, chunks: [chunk(1)] },
      ]),
    ).toEqual({ ok: true, chunks: [chunk(0), chunk(1)] });
  });
});
