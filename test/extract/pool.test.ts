// The extraction pool: real extraction in worker threads, a time limit that terminates a stuck
// worker, and a pool that keeps working after a timeout or a crash.
// Note: `await expect(promise).rejects` is not used here: under bun test it can wait on a pool
// promise without letting the worker's reply in (the request then times out), so failures are
// caught with `.catch((e) => e)` and inspected.
import { afterAll, describe, expect, test } from 'bun:test';
import { ExtractionError, type ExtractOptions } from '../../engine/extract';
import { ExtractionPool } from '../../engine/extract/pool';
import { enc, sampleDocx, scannedPdf, textPdf, textPng } from './fixtures';

const OPTS: ExtractOptions = { allowImages: true, maxPages: 100, maxChars: 1_000_000 };
const pools: ExtractionPool[] = [];
const makePool = (size: number, timeoutMs: number) => {
  const pool = new ExtractionPool({ size, timeoutMs, workerUrl: new URL('./hang-worker.ts', import.meta.url) });
  pools.push(pool);
  return pool;
};

afterAll(async () => {
  for (const pool of pools) await pool.close();
});

describe('ExtractionPool', () => {
  test('extracts in workers, several at once, moving the bytes instead of copying them', async () => {
    const pool = makePool(2, 30_000);
    const docx = await sampleDocx();
    const jobs = [
      pool.extract(docx, 'a.docx', OPTS),
      pool.extract(await textPdf([[['Page one']], [['Page two']]]), 'b.pdf', OPTS),
      pool.extract(enc('# Title\n\nBody'), 'c.md', OPTS),
      pool.extract(enc('a,b\n1,2'), 'd.csv', OPTS),
    ];
    expect(docx.byteLength).toBe(0); // transferred to the worker
    const [a, b, c, d] = await Promise.all(jobs);
    expect(a!.text).toStartWith('# Travel Policy');
    expect(b).toMatchObject({ text: 'Page one\n\nPage two', pages: [0, 10], pageCount: 2 });
    expect(c!.text).toBe('# Title\n\nBody');
    expect(d!.text).toBe('a: 1 | b: 2');
  });

  test('error codes cross the thread boundary', async () => {
    const pool = makePool(1, 30_000);
    const err = await pool.extract(new Uint8Array(), 'a.txt', OPTS).catch((e) => e);
    expect(err).toBeInstanceOf(ExtractionError);
    expect(err).toMatchObject({ code: 'EMPTY_FILE', message: 'The file is empty.' });
    const e2 = await pool.extract(enc('%PDF-1.7 garbage'), 'x.pdf', OPTS).catch((e) => e);
    expect(e2).toMatchObject({ code: 'EXTRACTION_FAILED' });
  });

  test('a hung extraction fails with EXTRACTION_FAILED after the time limit; the pool goes on', async () => {
    const pool = makePool(1, 500);
    const started = performance.now();
    const hung = pool.extract(enc('x'), 'hang.txt', OPTS);
    const queued = pool.extract(enc('queued behind the hung one'), 'b.txt', OPTS);
    const err = await hung.catch((e) => e);
    const elapsed = performance.now() - started;
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', message: 'Extracting the text took longer than 0.5 s and was stopped.' });
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(3000);
    expect((await queued).text).toBe('queued behind the hung one');
    expect(pool.timeouts).toBe(1);
    expect((await pool.extract(enc('still fine'), 'c.txt', OPTS)).text).toBe('still fine');
  });

  test('a crashed worker fails its request and is replaced', async () => {
    const pool = makePool(1, 30_000);
    expect(await pool.extract(enc('x'), 'crash.txt', OPTS).catch((e) => e)).toMatchObject({ code: 'EXTRACTION_FAILED' });
    expect(pool.crashes).toBe(1);
    expect((await pool.extract(enc('after the crash'), 'a.txt', OPTS)).text).toBe('after the crash');
  });

  test('OCR and PDF rendering work inside a worker', async () => {
    const pool = makePool(1, 30_000);
    const r = await pool.extract(await scannedPdf(textPng(['Scanned invoice total'])), 'scan.pdf', OPTS);
    expect(r).toMatchObject({ pageCount: 1, ocrPages: 1 });
    expect(r.text.toLowerCase()).toContain('invoice total');
  });

  test('a closed pool refuses new work', async () => {
    const pool = makePool(1, 30_000);
    await pool.close();
    expect(await pool.extract(enc('x'), 'a.txt', OPTS).catch((e) => e)).toMatchObject({ code: 'EXTRACTION_FAILED' });
  });
});
