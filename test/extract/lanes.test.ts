// Extraction lanes and the OCR budget: triage from the first bytes agrees with type detection
// (a heavy format is never sent to the light lane), text is extracted while every heavy worker is
// stuck, one tenant cannot hold every heavy worker, and an image past its OCR budget fails as
// TOO_LARGE with its worker stopped.
// As in pool.test.ts, failures are caught with `.catch((e) => e)`, not `expect(...).rejects`.
import { afterAll, describe, expect, test } from 'bun:test';
import { zipSync } from 'fflate';
import { detectFileType, ExtractionError, type ExtractOptions } from '../../engine/extract';
import { ExtractionLanes } from '../../engine/extract/lanes';
import { ExtractionPool } from '../../engine/extract/pool';
import { HEAD_BYTES, isImageHead, laneOf } from '../../engine/extract/triage';
import { enc, grayTiff, randomBytes, rotatedJpeg, sampleDocx, textCanvas, textPdf, textPng, utf16 } from './fixtures';
import { noisePng } from './noise';

const OPTS: ExtractOptions = { allowImages: true, maxPages: 100, maxChars: 1_000_000 };
const HANG_WORKER = new URL('./hang-worker.ts', import.meta.url);
const closers: { close(): Promise<void> }[] = [];

afterAll(async () => {
  for (const c of closers) await c.close();
});

const HEAVY_KINDS = new Set(['pdf', 'docx', 'image']);
const HEAVY_NAME = /\.(pdf|docx|png|jpe?g|webp|tiff?)$/;

describe('triage', () => {
  test('agrees with detectFileType: heavy formats go to the heavy lane, images are images', async () => {
    const { rgba, canvas } = textCanvas(['Tiff text']);
    const pdf = await textPdf([[['A page']]]);
    const junkPdf = new Uint8Array([...enc('junk before the header\n'), ...pdf]);
    const files: [string, Uint8Array][] = [
      ['a.txt', enc('plain text')],
      ['a.md', enc('# Title\n\nBody')],
      ['a.html', enc('<html><body><p>Hi</p></body></html>')],
      ['page', enc('<!doctype html><p>nameless html</p>')],
      ['a.csv', enc('a,b\n1,2')],
      ['a.json', enc('{"a": 1}')],
      ['utf16.txt', utf16('wide text', 'le')],
      ['a.pdf', pdf],
      ['pdf-named.txt', pdf],
      ['junk.pdf', junkPdf],
      ['a.docx', await sampleDocx()],
      ['docx-named.zip', await sampleDocx()],
      ['plain.zip', zipSync({ 'a.txt': enc('zipped') })],
      ['a.png', textPng(['Png text'])],
      ['png-named.txt', textPng(['Png text'])],
      ['a.jpg', rotatedJpeg(['Jpeg text'])],
      ['a.tif', grayTiff(rgba, canvas.width, canvas.height)],
      ['a.webp', new Uint8Array(canvas.toBuffer('image/webp'))],
      ['noise.png', noisePng(64)],
      ['damaged.png', textPng(['x']).slice(0, 40)],
      ['random.bin', randomBytes(4096)],
      ['random.pdf', randomBytes(4096)],
      ['text-named.png', enc('text in a file named like an image')],
    ];
    for (const [name, bytes] of files) {
      const kind = (await detectFileType(bytes, name))?.kind;
      const head = bytes.subarray(0, HEAD_BYTES);
      const lane = laneOf(head, name);
      // Text is light, unless named like a heavy format (triage then plays safe).
      if (kind) expect({ name, lane }).toEqual({ name, lane: HEAVY_KINDS.has(kind) || HEAVY_NAME.test(name) ? 'heavy' : 'light' });
      expect({ name, image: isImageHead(head) }).toEqual({ name, image: kind === 'image' });
    }
  });
});

describe('ExtractionLanes', () => {
  // hang-worker.ts spins forever on a file named hang.txt; `%PDF-` bytes send it to the heavy lane.
  const HANG = () => enc('%PDF-1.7 this request hangs its worker');
  const makeLanes = (timeoutMs: number) => {
    const lanes = new ExtractionLanes({ heavyWorkers: 2, lightWorkers: 1, timeoutMs, workerUrl: HANG_WORKER });
    closers.push(lanes);
    return lanes;
  };

  test('text is extracted at once while every heavy worker is stuck', async () => {
    const lanes = makeLanes(3000);
    expect(lanes.pool.size).toBe(3);
    const stuck = [lanes.extract('A', HANG(), 'hang.txt', OPTS).catch((e) => e), lanes.extract('B', HANG(), 'hang.txt', OPTS).catch((e) => e)];
    await Bun.sleep(100);
    expect(lanes.lanes.heavy.busy).toBe(2);
    const started = performance.now();
    const text = await lanes.extract('A', enc('light lane text'), 'a.txt', OPTS);
    const ms = performance.now() - started;
    console.log(`[lanes] a .txt beside two stuck heavy workers: ${Math.round(ms)} ms`);
    expect(text.text).toBe('light lane text');
    expect(ms).toBeLessThan(1000);
    for (const err of await Promise.all(stuck)) expect(err).toMatchObject({ code: 'EXTRACTION_FAILED' });
  });

  test("one tenant holds all but one heavy worker; another tenant's PDF does not wait for it", async () => {
    const lanes = makeLanes(3000);
    const mine = [1, 2, 3].map(() => lanes.extract('A', HANG(), 'hang.txt', OPTS).catch((e) => e));
    await Bun.sleep(100);
    expect(lanes.lanes.heavy.heldBy('A')).toBe(1);
    expect(lanes.lanes.heavy.queued).toBe(2);
    const started = performance.now();
    const pdf = await lanes.extract('B', await textPdf([[['Tenant B report']]]), 'b.pdf', OPTS);
    const ms = performance.now() - started;
    console.log(`[lanes] B's PDF beside A's three hung requests: ${Math.round(ms)} ms`);
    expect(pdf.text).toBe('Tenant B report');
    expect(ms).toBeLessThan(2500); // well before A's first request times out (3 s)
    for (const err of await Promise.all(mine)) expect(err).toMatchObject({ code: 'EXTRACTION_FAILED' });
  }, 30_000);

  test('extractFile reads the file from disk', async () => {
    const lanes = makeLanes(30_000);
    const path = `${process.env.TMPDIR ?? '/tmp'}/lanes-test-${process.pid}.md`;
    await Bun.write(path, '# Heading\n\nFrom disk');
    try {
      expect((await lanes.extractFile('A', path, 'notes.md', OPTS)).text).toBe('# Heading\n\nFrom disk');
    } finally {
      await Bun.file(path).delete();
    }
  });
});

describe('OCR budget', () => {
  test('an image past the budget is TOO_LARGE with a clear message, its worker replaced; the pool goes on', async () => {
    const pool = new ExtractionPool({ size: 1, timeoutMs: 60_000, ocrTimeoutMs: 1500 });
    closers.push(pool);
    const started = performance.now();
    const err = await pool.extract(noisePng(1500, 3), 'noise.png', OPTS).catch((e) => e);
    const ms = performance.now() - started;
    console.log(`[lanes] a 1500 × 1500 noise PNG under a 1.5 s OCR budget: ${err?.code} after ${Math.round(ms)} ms`);
    expect(err).toBeInstanceOf(ExtractionError);
    expect(err).toMatchObject({
      code: 'TOO_LARGE',
      message:
        'Reading the text of the image took longer than the 1.5 s OCR budget and was stopped. Upload a smaller or cleaner image: cropped to the text, with sharp dark text on a plain background.',
    });
    expect(ms).toBeGreaterThanOrEqual(1400);
    expect(ms).toBeLessThan(10_000);
    expect(pool.timeouts).toBe(1);
    expect((await pool.extract(enc('after the budget'), 'a.txt', OPTS)).text).toBe('after the budget');
  }, 60_000);

  test('the budget applies to images only, and never beyond the extraction time limit', async () => {
    const pool = new ExtractionPool({ size: 1, timeoutMs: 600, ocrTimeoutMs: 30_000, workerUrl: HANG_WORKER });
    closers.push(pool);
    expect(pool.ocrTimeoutMs).toBe(600);
    // Not an image: the extraction time limit and its 502 answer.
    expect(await pool.extract(enc('x'), 'hang.txt', OPTS).catch((e) => e)).toMatchObject({ code: 'EXTRACTION_FAILED' });
    // Images not allowed: refused at once, no OCR.
    expect(await pool.extract(noisePng(64), 'n.png', { ...OPTS, allowImages: false }).catch((e) => e)).toMatchObject({ code: 'UNSUPPORTED_FILE_TYPE' });
  });
});
