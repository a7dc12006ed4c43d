import { describe, expect, test } from 'bun:test';
import { zipSync } from 'fflate';
import { detectFileType } from '../../engine/extract';
import { enc, grayTiff, randomBytes, sampleDocx, textCanvas, textPdf, textPng, utf16 } from './fixtures';

describe('detectFileType: bytes first', () => {
  test('binary formats are recognized by their magic numbers, whatever the name', async () => {
    const canvas = textCanvas(['x']).canvas;
    const { rgba } = textCanvas(['x'], { width: 40 });
    expect((await detectFileType(await textPdf([[['hi']]]), 'notes.txt'))?.kind).toBe('pdf');
    expect(await detectFileType(await sampleDocx(), 'notes.txt')).toMatchObject({ kind: 'docx' });
    expect(await detectFileType(textPng(['x']), 'notes.txt')).toMatchObject({ kind: 'image', mediaType: 'image/png' });
    expect(await detectFileType(new Uint8Array(canvas.toBuffer('image/jpeg')), 'a.md')).toMatchObject({ mediaType: 'image/jpeg' });
    expect(await detectFileType(new Uint8Array(canvas.toBuffer('image/webp')), 'a.json')).toMatchObject({ mediaType: 'image/webp' });
    const tiff = grayTiff(rgba, 40, 104);
    expect(await detectFileType(tiff, 'scan.tif')).toMatchObject({ kind: 'image', mediaType: 'image/tiff' });
  });

  test('bytes that match no supported format are unsupported whatever the name', async () => {
    expect(await detectFileType(randomBytes(4096), 'report.pdf')).toBeUndefined();
    expect(await detectFileType(randomBytes(4096), 'notes.txt')).toBeUndefined();
    expect(await detectFileType(enc('{\\rtf1\\ansi Hello}'), 'letter.rtf')).toBeUndefined();
    expect(await detectFileType(zipSync({ 'a.txt': enc('hi') }), 'archive.zip')).toBeUndefined();
    expect(await detectFileType(new Uint8Array([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0, 1, 0, 0, 0, 0]), 'x.gif')).toBeUndefined();
  });

  test('a PDF header, even after junk, makes a .pdf a PDF; a zip named .docx is a DOCX', async () => {
    expect(await detectFileType(new Uint8Array([...enc('%PDF-1.7\n'), ...randomBytes(100)]), 'x.bin')).toMatchObject({ kind: 'pdf' });
    expect(await detectFileType(new Uint8Array([...randomBytes(200), ...enc('%PDF-1.4\n'), 0xff, 0xfe]), 'x.pdf')).toMatchObject({ kind: 'pdf' });
    expect(await detectFileType(zipSync({ 'a.txt': enc('hi') }), 'x.docx')).toMatchObject({ kind: 'docx' });
  });
});

describe('detectFileType: text', () => {
  test('the name picks the text format', async () => {
    const text = enc('# Title\n\nbody');
    expect(await detectFileType(text, 'a.md')).toMatchObject({ kind: 'markdown', mediaType: 'text/markdown', encoding: 'utf-8' });
    expect(await detectFileType(text, 'a.MARKDOWN')).toMatchObject({ kind: 'markdown' });
    expect(await detectFileType(text, 'page.htm')).toMatchObject({ kind: 'html' });
    expect(await detectFileType(text, 'rows.csv')).toMatchObject({ kind: 'csv', mediaType: 'text/csv' });
    expect(await detectFileType(text, 'rows.tsv')).toMatchObject({ kind: 'csv', mediaType: 'text/tab-separated-values' });
    expect(await detectFileType(text, 'data.json')).toMatchObject({ kind: 'json', mediaType: 'application/json' });
    expect(await detectFileType(text, 'a.txt')).toMatchObject({ kind: 'text', mediaType: 'text/plain' });
    expect(await detectFileType(text, 'README')).toMatchObject({ kind: 'text' });
    expect(await detectFileType(enc('<!DOCTYPE html><p>x</p>'), 'download')).toMatchObject({ kind: 'html' });
  });

  test('byte-order marks, strict UTF-8 and a Windows-1252 fallback for named text files', async () => {
    expect(await detectFileType(utf16('hello', 'le'), 'a.txt')).toMatchObject({ kind: 'text', encoding: 'utf-16le' });
    expect(await detectFileType(utf16('hello', 'be'), 'a.csv')).toMatchObject({ kind: 'csv', encoding: 'utf-16be' });
    expect(await detectFileType(new Uint8Array([0xef, 0xbb, 0xbf, ...enc('hi')]), 'a.txt')).toMatchObject({ encoding: 'utf-8' });
    const latin1 = new Uint8Array([0x43, 0x61, 0x66, 0xe9, 0x20, 0x6f, 0x6b]); // "Café ok"
    expect(await detectFileType(latin1, 'menu.txt')).toMatchObject({ kind: 'text', encoding: 'windows-1252' });
    expect(await detectFileType(latin1, 'menu.bin')).toBeUndefined();
    expect(await detectFileType(new Uint8Array([0x61, 0x00, 0x62, 0x00]), 'a.txt')).toBeUndefined(); // NULs: not text
  });
});
