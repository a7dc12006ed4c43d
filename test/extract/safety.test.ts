import { describe, expect, test } from 'bun:test';
import { ExtractionError, extractFile, type ExtractOptions } from '../../engine/extract';
import { enc, lyingDocx, randomBytes, ratioBombDocx, sampleDocx, textPdf, textPng, zipBombDocx } from './fixtures';

const OPTS: ExtractOptions = { allowImages: false, maxPages: 100, maxChars: 1_000_000 };

async function failure(bytes: Uint8Array, name: string, opts = OPTS): Promise<ExtractionError> {
  try {
    await extractFile(bytes, name, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(ExtractionError);
    const e = err as ExtractionError;
    // Messages are for people: no stack, path or library internals.
    expect(e.message).not.toMatch(/node_modules|\/work\/|\bat \S+:\d+|Exception|TypeError|undefined/);
    return e;
  }
  throw new Error(`${name} was extracted`);
}

describe('error codes', () => {
  test('an empty file is EMPTY_FILE', async () => {
    expect((await failure(new Uint8Array(), 'a.txt')).code).toBe('EMPTY_FILE');
    expect((await failure(new Uint8Array(), 'a.pdf')).code).toBe('EMPTY_FILE');
  });

  test('a corrupt PDF is EXTRACTION_FAILED', async () => {
    const garbage = new Uint8Array([...enc('%PDF-1.7\n'), ...randomBytes(20_000)]);
    const e = await failure(garbage, 'report.pdf');
    expect(e.code).toBe('EXTRACTION_FAILED');
    expect(e.message).toBe('The PDF file could not be read; it may be damaged.');
    expect(e.detail).toContain('Invalid PDF');
    const good = await textPdf([[['Hello there']]]);
    expect((await failure(good.slice(0, good.length >> 1), 'cut.pdf')).code).toBe('EXTRACTION_FAILED');
  });

  test('a broken DOCX is EXTRACTION_FAILED', async () => {
    const docx = await sampleDocx();
    expect((await failure(docx.slice(0, docx.length - 300), 'a.docx')).code).toBe('EXTRACTION_FAILED');
    const notWord = (await import('fflate')).zipSync({ 'readme.txt': enc('hello') });
    expect((await failure(notWord, 'a.docx')).code).toBe('EXTRACTION_FAILED');
  });

  test('invalid JSON is EXTRACTION_FAILED', async () => {
    const e = await failure(enc('{"a": [1, 2'), 'data.json');
    expect(e).toMatchObject({ code: 'EXTRACTION_FAILED', message: 'The JSON file is not valid JSON.' });
  });

  test('a valid file without text is NO_TEXT_EXTRACTED', async () => {
    expect((await failure(enc(' \n\t\n'), 'a.txt')).code).toBe('NO_TEXT_EXTRACTED');
    expect((await failure(enc('<html><script>x()</script><nav>Menu</nav></html>'), 'a.html')).code).toBe('NO_TEXT_EXTRACTED');
    expect((await failure(enc('{"a": null, "b": []}'), 'a.json')).code).toBe('NO_TEXT_EXTRACTED');
    expect((await failure(await textPdf([[]]), 'blank.pdf')).code).toBe('NO_TEXT_EXTRACTED');
  });
});

describe('renamed files are judged by their bytes', () => {
  test('random bytes named .pdf (or .txt) are UNSUPPORTED_FILE_TYPE', async () => {
    expect((await failure(randomBytes(10_000), 'report.pdf')).code).toBe('UNSUPPORTED_FILE_TYPE');
    expect((await failure(randomBytes(10_000), 'notes.txt')).code).toBe('UNSUPPORTED_FILE_TYPE');
  });

  test('a PNG named .txt is an image (refused where images are not allowed)', async () => {
    const e = await failure(textPng(['hello']), 'notes.txt');
    expect(e.code).toBe('UNSUPPORTED_FILE_TYPE');
    expect(e.message).toContain('TEXT_AND_MEDIA_HIGH_QUALITY');
  });

  test('a DOCX named .txt is read as a DOCX', async () => {
    const r = await extractFile(await sampleDocx(), 'notes.txt', OPTS);
    expect(r.text).toStartWith('# Travel Policy');
  });
});

describe('zip bombs', () => {
  test('a DOCX declaring gigabytes is refused at once, from the central directory alone', async () => {
    // The archive holds 1 MiB: only its declared size says more than 256 MiB, so this message means
    // the declaration alone refused it. Built before the clock starts (level-9 compression); the
    // limit holds on a loaded machine (it was 500 ms with the compression inside, and failed at 517).
    const bomb = zipBombDocx();
    const started = performance.now();
    const e = await failure(bomb, 'bomb.docx');
    expect(e).toMatchObject({ code: 'TOO_LARGE', message: 'The Word document unpacks to more than 256 MiB.' });
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test('a DOCX part packed more than 200-fold is refused before inflating', async () => {
    const bomb = ratioBombDocx(); // 64 MiB of zeros in ~64 KB
    const started = performance.now();
    const e = await failure(bomb, 'ratio.docx');
    expect(e.code).toBe('TOO_LARGE');
    expect(e.message).toContain('zip bomb');
    expect(performance.now() - started).toBeLessThan(500);
  });

  test('a part that inflates past its declared size is stopped at the first excess chunk', async () => {
    const e = await failure(lyingDocx(), 'lying.docx');
    expect(e.code).toBe('EXTRACTION_FAILED');
    expect(e.detail).toContain('too many bytes');
  });
});
