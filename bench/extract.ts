// Extraction benchmark: generated inputs, timed in process and through the worker pool.
//   pdf    a 100-page PDF of text (pdf-lib, Helvetica 11 pt, ~45 lines a page)
//   docx   a ~5 MB DOCX of text: headings, paragraphs and a table per section (docx package)
//   ocr    one A4 page of text rendered at 150 dpi (1240×1754) and at 300 dpi (2480×3508)
//
//   bun bench/extract.ts [--runs 3] [--skip-ocr]
import { parseArgs } from 'node:util';
import { createCanvas, GlobalFonts } from '@napi-rs/canvas';
import { Document, HeadingLevel, ImageRun, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { ExtractionPool, shutdownOcr } from '../engine';
import { extractFile } from './lib/engine-internals';
import { Xorshift32 } from './lib/words';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '3' }, 'skip-ocr': { type: 'boolean', default: false } } });
const RUNS = Math.max(1, Number(args.runs));
// The DOCX here is a 5 MB book: above the service's default XML cap (DOCX_MAX_XML_MB, 6 MiB of XML),
// which guards the server; this bench measures extraction itself, so it lifts the cap.
const OPTS = { allowImages: true, maxPages: 1000, maxChars: 100_000_000, maxDocxXmlBytes: 64 * 1024 * 1024 };

// One word stream for every input (the pictures draw from it too), so each run sees the same files.
const random = new Xorshift32();
const word = () => random.word();
function sentence(n = 12): string {
  const words = Array.from({ length: n }, word);
  return `${words[0]![0]!.toUpperCase()}${words.join(' ').slice(1)}.`;
}

async function makePdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < pages; p++) {
    const page = doc.addPage([595, 842]);
    let y = 790;
    page.drawText(`Section ${p + 1}: ${sentence(4)}`, { x: 56, y, size: 16, font });
    y -= 30;
    while (y > 60) {
      for (let l = 0; l < 5 && y > 60; l++, y -= 14) page.drawText(sentence(13), { x: 56, y, size: 11, font });
      y -= 14;
    }
  }
  return doc.save();
}

async function makeDocx(targetBytes: number): Promise<Uint8Array> {
  // Measure a small document, then scale the section count to reach the target size.
  const build = async (sections: number) => {
    const children: Array<Paragraph | Table> = [];
    for (let s = 0; s < sections; s++) {
      children.push(new Paragraph({ text: `Chapter ${s + 1}: ${sentence(4)}`, heading: HeadingLevel.HEADING_1 }));
      for (let p = 0; p < 8; p++) children.push(new Paragraph(Array.from({ length: 5 }, () => sentence()).join(' ')));
      const row = () => new TableRow({ children: Array.from({ length: 3 }, () => new TableCell({ children: [new Paragraph(sentence(3))] })) });
      children.push(new Table({ rows: Array.from({ length: 4 }, row) }));
    }
    return new Uint8Array(await Packer.toBuffer(new Document({ sections: [{ children }] })));
  };
  // Size grows a little faster than linearly at first (shared parts): correct once more.
  let sections = 50;
  for (let i = 0; i < 2; i++) sections = Math.round((sections * targetBytes) / (await build(sections)).length);
  return build(sections);
}

async function makeImageDocx(): Promise<Uint8Array> {
  // Four 1.2 MB pictures (incompressible bytes; never decoded) between 40 paragraphs of text.
  const picture = () => {
    const data = new Uint8Array(1_200_000);
    for (let i = 0; i < data.length; i++) {
      data[i] = random.next() & 0xff;
    }
    return new ImageRun({ type: 'png', data, transformation: { width: 400, height: 300 } });
  };
  const children: Paragraph[] = [];
  for (let i = 0; i < 4; i++) {
    children.push(new Paragraph({ text: `Figure section ${i + 1}`, heading: HeadingLevel.HEADING_2 }));
    for (let p = 0; p < 10; p++) children.push(new Paragraph(Array.from({ length: 4 }, () => sentence()).join(' ')));
    children.push(new Paragraph({ children: [picture()] }));
  }
  return new Uint8Array(await Packer.toBuffer(new Document({ sections: [{ children }] })));
}

function a4Page(dpi: number): Uint8Array {
  const width = Math.round(8.27 * dpi);
  const height = Math.round(11.69 * dpi);
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = '#000';
  const px = (pt: number) => Math.round((pt * dpi) / 72);
  const family = GlobalFonts.families.some((f) => f.family === 'DejaVu Sans') ? 'DejaVu Sans' : 'sans-serif';
  ctx.font = `${px(16)}px "${family}"`;
  let y = px(72);
  ctx.fillText('Quarterly operations report', px(56), y);
  y += px(30);
  ctx.font = `${px(11)}px "${family}"`;
  while (y < height - px(60)) {
    for (let l = 0; l < 5 && y < height - px(60); l++, y += px(15)) ctx.fillText(sentence(11), px(56), y);
    y += px(15);
  }
  return new Uint8Array(canvas.toBuffer('image/png'));
}

async function time<T>(label: string, fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const times: number[] = [];
  let value!: T;
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    value = await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const ms = times[Math.floor(times.length / 2)]!;
  console.log(`  ${label}: median ${ms.toFixed(0)} ms (runs: ${times.map((t) => t.toFixed(0)).join(', ')})`);
  return { ms, value };
}

const MB = 1024 * 1024;

console.log('PDF, 100 pages');
const pdf = await makePdf(100);
const pdfRun = await time('extractFile (in process)', () => extractFile(pdf, 'report.pdf', OPTS));
console.log(
  `  ${(pdf.length / MB).toFixed(2)} MB file, ${pdfRun.value.text.length.toLocaleString()} chars → ${(100 / (pdfRun.ms / 1000)).toFixed(0)} pages/s, ` +
    `${(pdfRun.value.text.length / 1e6 / (pdfRun.ms / 1000)).toFixed(2)} M chars/s`,
);
const pool = new ExtractionPool({ size: 1, timeoutMs: 600_000 });
await pool.extract(new TextEncoder().encode('warm up'), 'a.txt', OPTS);
await time('through the pool (copy + transfer + worker)', () => pool.extract(pdf.slice(), 'report.pdf', OPTS));

console.log('DOCX, ~5 MB');
const docx = await makeDocx(5 * MB);
const docxRun = await time('extractFile (in process)', () => extractFile(docx, 'book.docx', OPTS));
console.log(
  `  ${(docx.length / MB).toFixed(2)} MB file, ${docxRun.value.text.length.toLocaleString()} chars → ${(docx.length / MB / (docxRun.ms / 1000)).toFixed(2)} MB/s of file, ` +
    `${(docxRun.value.text.length / 1e6 / (docxRun.ms / 1000)).toFixed(2)} M chars/s`,
);
await time('through the pool', () => pool.extract(docx.slice(), 'book.docx', OPTS));

console.log('DOCX, ~5 MB of which 4.8 MB pictures');
const pictures = await makeImageDocx();
const picRun = await time('extractFile (in process)', () => extractFile(pictures, 'figures.docx', OPTS));
console.log(`  ${(pictures.length / MB).toFixed(2)} MB file, ${picRun.value.text.length.toLocaleString()} chars`);
await pool.close();

if (!args['skip-ocr']) {
  for (const dpi of [150, 300]) {
    const png = a4Page(dpi);
    console.log(`OCR, one A4 page at ${dpi} dpi (${Math.round(8.27 * dpi)}×${Math.round(11.69 * dpi)}, ${(png.length / MB).toFixed(2)} MB PNG)`);
    const cold = performance.now();
    await extractFile(png, 'page.png', OPTS);
    if (dpi === 150) console.log(`  first call incl. tesseract start: ${(performance.now() - cold).toFixed(0)} ms`);
    const run = await time('OCR (warm engine)', () => extractFile(png, 'page.png', OPTS));
    console.log(`  ${run.value.text.length.toLocaleString()} chars read`);
  }
  await shutdownOcr();
}
