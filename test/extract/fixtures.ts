// Files for the extraction tests, made in the test run (no committed binaries).
import { createCanvas, GlobalFonts } from '@napi-rs/canvas';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow, TextRun } from 'docx';
import { zipSync } from 'fflate';
import { PDFDocument, StandardFonts } from 'pdf-lib';

export const enc = (s: string) => new TextEncoder().encode(s);

/** A PNG of dark text lines on white, for OCR. */
export function textPng(lines: string[], options: { width?: number; fontSize?: number } = {}): Uint8Array {
  return new Uint8Array(textCanvas(lines, options).canvas.toBuffer('image/png'));
}

/** A PDF whose page n (1-based) holds `pages[n-1]`: each entry is a list of paragraphs of lines. */
export async function textPdf(pages: string[][][]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const paragraphs of pages) {
    const page = doc.addPage([595, 842]);
    let y = 790;
    for (const lines of paragraphs) {
      for (const line of lines) {
        page.drawText(line, { x: 56, y, size: 12, font });
        y -= 15;
      }
      y -= 15; // a blank line between paragraphs
    }
  }
  return doc.save();
}

/** A one-page PDF without a text layer: just the image (a "scan"). */
export async function scannedPdf(png: Uint8Array): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const image = await doc.embedPng(png);
  const page = doc.addPage([595, 842]);
  const width = 500;
  const height = (image.height / image.width) * width;
  page.drawImage(image, { x: 48, y: 842 - 60 - height, width, height });
  return doc.save();
}

export async function sampleDocx(): Promise<Uint8Array> {
  const cell = (text: string) => new TableCell({ children: [new Paragraph(text)] });
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Travel Policy', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({ children: [new TextRun('Employees book flights through the travel portal.')] }),
          new Paragraph({ children: [new TextRun('Receipts are uploaded within '), new TextRun({ text: 'thirty days', bold: true }), new TextRun('.')] }),
          new Paragraph({ text: 'Per diem rates', heading: HeadingLevel.HEADING_2 }),
          new Paragraph({ text: 'Meals are covered at the local rate.', bullet: { level: 0 } }),
          new Table({
            rows: [
              new TableRow({ children: [cell('City'), cell('Rate')] }),
              new TableRow({ children: [cell('Berlin'), cell('45 EUR')] }),
              new TableRow({ children: [cell('Lisbon'), cell('38 EUR')] }),
            ],
          }),
        ],
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(doc));
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="xml" ContentType="application/xml"/></Types>';

/** Sets the declared uncompressed size of `name` in both its local and central directory header. */
function patchDeclaredSize(zip: Uint8Array, name: string, size: number): void {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const nameBytes = enc(name);
  const nameAt = (at: number) => nameBytes.every((b, i) => zip[at + i] === b);
  let patched = 0;
  for (let i = 0; i + 46 < zip.length; i++) {
    const sig = view.getUint32(i, true);
    if (sig === 0x04034b50 && view.getUint16(i + 26, true) === nameBytes.length && nameAt(i + 30)) {
      view.setUint32(i + 22, size, true);
      patched++;
    } else if (sig === 0x02014b50 && view.getUint16(i + 28, true) === nameBytes.length && nameAt(i + 46)) {
      view.setUint32(i + 24, size, true);
      patched++;
    }
  }
  if (patched !== 2) throw new Error(`patched ${patched} headers`);
}

/**
 * A DOCX-named zip bomb: word/document.xml is 1 MiB of zeros (1 KB packed) whose headers declare
 * 4 GiB, a 4,000,000-fold ratio. Refusing it must not need inflating anything.
 */
export function zipBombDocx(): Uint8Array {
  const zip = zipSync({ '[Content_Types].xml': enc(CONTENT_TYPES), 'word/document.xml': new Uint8Array(1024 * 1024) }, { level: 9 });
  patchDeclaredSize(zip, 'word/document.xml', 0xfffffff0);
  return zip;
}

/** A zip whose word/document.xml declares 1,000 bytes but inflates to 8 MiB (a lying header). */
export function lyingDocx(): Uint8Array {
  const zip = zipSync({ '[Content_Types].xml': enc(CONTENT_TYPES), 'word/document.xml': new Uint8Array(8 * 1024 * 1024) }, { level: 9 });
  patchDeclaredSize(zip, 'word/document.xml', 1000);
  return zip;
}

/** A real high-ratio bomb: 64 MiB of zeros packed to ~64 KB (ratio ≈ 1000). */
export function ratioBombDocx(): Uint8Array {
  return zipSync({ '[Content_Types].xml': enc(CONTENT_TYPES), 'word/document.xml': new Uint8Array(64 * 1024 * 1024) }, { level: 9 });
}

/** Deterministic pseudo-random bytes (never starting with a known magic number). */
export function randomBytes(n: number, seed = 42): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  out[0] = 0x9c; // no format starts with this byte
  out[1] = 0x00;
  return out;
}

export function utf16(text: string, endian: 'le' | 'be'): Uint8Array {
  const out = new Uint8Array(2 + text.length * 2);
  const view = new DataView(out.buffer);
  view.setUint16(0, 0xfeff, endian === 'le');
  for (let i = 0; i < text.length; i++) view.setUint16(2 + i * 2, text.charCodeAt(i), endian === 'le');
  return out;
}

/** An uncompressed 8-bit grayscale TIFF of the given RGBA pixels (for OCR of the TIFF path). */
export function grayTiff(rgba: Uint8ClampedArray, width: number, height: number): Uint8Array {
  const pixels = new Uint8Array(width * height);
  for (let i = 0; i < pixels.length; i++) pixels[i] = Math.round((rgba[i * 4]! + rgba[i * 4 + 1]! + rgba[i * 4 + 2]!) / 3);
  const tags: Array<[number, number, number]> = [
    [256, 4, width], // ImageWidth (LONG)
    [257, 4, height], // ImageLength
    [258, 3, 8], // BitsPerSample
    [259, 3, 1], // Compression: none
    [262, 3, 1], // Photometric: BlackIsZero
    [273, 4, 0], // StripOffsets (patched below)
    [277, 3, 1], // SamplesPerPixel
    [278, 4, height], // RowsPerStrip
    [279, 4, pixels.length], // StripByteCounts
  ];
  const ifdOffset = 8;
  const ifdSize = 2 + tags.length * 12 + 4;
  const dataOffset = ifdOffset + ifdSize;
  const out = new Uint8Array(dataOffset + pixels.length);
  const view = new DataView(out.buffer);
  out.set([0x49, 0x49, 0x2a, 0x00]); // "II*\0": little-endian TIFF
  view.setUint32(4, ifdOffset, true);
  view.setUint16(ifdOffset, tags.length, true);
  tags.forEach(([tag, type, value], i) => {
    const at = ifdOffset + 2 + i * 12;
    view.setUint16(at, tag, true);
    view.setUint16(at + 2, type, true);
    view.setUint32(at + 4, 1, true);
    if (tag === 273) value = dataOffset;
    if (type === 3) view.setUint16(at + 8, value, true);
    else view.setUint32(at + 8, value, true);
  });
  view.setUint32(ifdOffset + 2 + tags.length * 12, 0, true); // no next IFD
  out.set(pixels, dataOffset);
  return out;
}

/** Canvas pixels of `textPng`'s drawing, for encoders other than PNG. */
export function textCanvas(lines: string[], { width = 900, fontSize = 40 } = {}) {
  const lineHeight = Math.round(fontSize * 1.6);
  const canvas = createCanvas(width, lineHeight * lines.length + fontSize);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#000000';
  const family = GlobalFonts.families.some((f) => f.family === 'DejaVu Sans') ? 'DejaVu Sans' : 'sans-serif';
  ctx.font = `${fontSize}px "${family}"`;
  lines.forEach((line, i) => ctx.fillText(line, 24, lineHeight * (i + 1)));
  return { canvas, rgba: ctx.getImageData(0, 0, canvas.width, canvas.height).data };
}

/**
 * A JPEG stored turned 90° counter-clockwise with EXIF orientation 6 ("rotate 90° clockwise to
 * view"), as phone cameras write them. Shown upright it reads `lines`.
 */
export function rotatedJpeg(lines: string[]): Uint8Array {
  const { canvas } = textCanvas(lines);
  const stored = createCanvas(canvas.height, canvas.width);
  const ctx = stored.getContext('2d');
  ctx.translate(0, canvas.width);
  ctx.rotate(-Math.PI / 2);
  ctx.drawImage(canvas, 0, 0);
  const jpeg = new Uint8Array(stored.toBuffer('image/jpeg', 95));
  // APP1 "Exif\0\0" + a little-endian TIFF header + one IFD entry: Orientation (0x0112) = 6.
  const tiff = [0x49, 0x49, 0x2a, 0x00, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0];
  const payload = [...enc('Exif'), 0, 0, ...tiff];
  const length = payload.length + 2;
  return new Uint8Array([0xff, 0xd8, 0xff, 0xe1, length >> 8, length & 0xff, ...payload, ...jpeg.subarray(2)]);
}

/**
 * A valid DOCX whose word/document.xml is `xmlBytes` long: very many one- or two-word paragraphs
 * of varied words, so it packs only ~10-fold (under the zip guard's ratio cap) while a DOM-building
 * converter would need ~100 bytes of memory per XML byte. The hostile-upload tests send it.
 */
export function paragraphBombDocx(xmlBytes: number, seed = 7): Uint8Array {
  const rels =
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
  const types =
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
  const head = '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
  const tail = '</w:body></w:document>';
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  let state = seed >>> 0 || 1;
  const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0);
  const parts: string[] = [head];
  let size = head.length + tail.length;
  while (size < xmlBytes) {
    let word = '';
    const len = 3 + (next() % 6);
    for (let i = 0; i < len; i++) word += letters[next() % 26];
    const p = `<w:p><w:r><w:t>${word}</w:t></w:r></w:p>`;
    parts.push(p);
    size += p.length;
  }
  parts.push(tail);
  return zipSync({ '[Content_Types].xml': enc(types), '_rels/.rels': enc(rels), 'word/document.xml': enc(parts.join('')) }, { level: 6 });
}
