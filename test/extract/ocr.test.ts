// OCR with tesseract.js and the packaged English data (no network). Kept to a few small images.
import { afterAll, describe, expect, test } from 'bun:test';
import { extractFile, shutdownOcr, type ExtractOptions } from '../../engine/extract';
import { grayTiff, randomBytes, rotatedJpeg, scannedPdf, textCanvas, textPng } from './fixtures';

const MEDIA: ExtractOptions = { allowImages: true, maxPages: 100, maxChars: 1_000_000 };
const TEXT_ONLY: ExtractOptions = { ...MEDIA, allowImages: false };

const words = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];

afterAll(() => shutdownOcr());

describe('OCR', () => {
  test('reads the words of a PNG (even one named .txt)', async () => {
    const png = textPng(['Quarterly refund policy', 'Invoices are due in 30 days']);
    const r = await extractFile(png, 'notes.txt', MEDIA);
    expect(r.mediaType).toBe('image/png');
    expect(r.ocrPages).toBe(1);
    expect(words(r.text)).toEqual(['quarterly', 'refund', 'policy', 'invoices', 'are', 'due', 'in', '30', 'days']);
  });

  test('reads a TIFF', async () => {
    const { canvas, rgba } = textCanvas(['Warehouse inventory list']);
    const r = await extractFile(grayTiff(rgba, canvas.width, canvas.height), 'scan.tiff', MEDIA);
    expect(r.mediaType).toBe('image/tiff');
    expect(words(r.text)).toEqual(['warehouse', 'inventory', 'list']);
  });

  test('turns a phone photo upright (EXIF orientation) before reading it', async () => {
    const r = await extractFile(rotatedJpeg(['Orientation test words']), 'IMG_0001.jpg', MEDIA);
    expect(r.mediaType).toBe('image/jpeg');
    expect(words(r.text)).toEqual(['orientation', 'test', 'words']);
  });

  test('a PDF page without a text layer is rendered and read by OCR', async () => {
    const pdf = await scannedPdf(textPng(['Scanned invoice total']));
    const r = await extractFile(pdf, 'scan.pdf', MEDIA);
    expect(r).toMatchObject({ mediaType: 'application/pdf', pageCount: 1, pages: [0], ocrPages: 1 });
    expect(words(r.text)).toEqual(['scanned', 'invoice', 'total']);
  });

  test('without images allowed: an image is UNSUPPORTED_FILE_TYPE, a scanned PDF has no text', async () => {
    await expect(extractFile(textPng(['hello']), 'photo.png', TEXT_ONLY)).rejects.toMatchObject({ code: 'UNSUPPORTED_FILE_TYPE' });
    const pdf = await scannedPdf(textPng(['Scanned invoice total']));
    await expect(extractFile(pdf, 'scan.pdf', TEXT_ONLY)).rejects.toMatchObject({ code: 'NO_TEXT_EXTRACTED' });
  });

  test('an image over the pixel cap is refused before decoding; a blank one has no text', async () => {
    await expect(extractFile(textPng(['hello']), 'a.png', { ...MEDIA, maxImagePixels: 1000 })).rejects.toMatchObject({ code: 'TOO_LARGE' });
    await expect(extractFile(textPng([]), 'blank.png', MEDIA)).rejects.toMatchObject({ code: 'NO_TEXT_EXTRACTED' });
  });

  test('a damaged image is EXTRACTION_FAILED and OCR keeps working', async () => {
    const png = textPng(['hello world']);
    const damaged = new Uint8Array([...png.subarray(0, 33), ...randomBytes(2000)]); // signature + header, then noise
    await expect(extractFile(damaged, 'broken.png', MEDIA)).rejects.toMatchObject({ code: 'EXTRACTION_FAILED' });
    expect(words((await extractFile(png, 'ok.png', MEDIA)).text)).toEqual(['hello', 'world']);
  });

  test('more scanned pages than maxOcrPages is refused', async () => {
    const pdf = await scannedPdf(textPng(['Scanned invoice total']));
    await expect(extractFile(pdf, 'scan.pdf', { ...MEDIA, maxOcrPages: 0 })).rejects.toMatchObject({ code: 'TOO_LARGE' });
  });
});
