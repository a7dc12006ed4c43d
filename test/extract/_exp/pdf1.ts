import { PDFDocument, StandardFonts } from 'pdf-lib';
import { getDocumentProxy, renderPageAsImage } from 'unpdf';
console.log('release', process.release?.name);
const doc = await PDFDocument.create();
const font = await doc.embedFont(StandardFonts.Helvetica);
for (let p = 1; p <= 3; p++) {
  const page = doc.addPage([595, 842]);
  page.drawText(`Heading of page ${p}`, { x: 50, y: 780, size: 18, font });
  page.drawText(`First line of page ${p} about apples.`, { x: 50, y: 740, size: 12, font });
  page.drawText(`Second line of page ${p}.`, { x: 50, y: 725, size: 12, font });
  page.drawText(`New paragraph on page ${p}.`, { x: 50, y: 690, size: 12, font });
}
const pngBytes = await Bun.file('/tmp/exp/t.png').bytes();
const img = await doc.embedPng(pngBytes);
const pg = doc.addPage([595, 842]);
pg.drawImage(img, { x: 20, y: 500, width: 555, height: 139 });
const bytes = await doc.save();
console.log('pdf size', bytes.length);
const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 } as any);
console.log('pages', pdf.numPages);
for (let i = 1; i <= pdf.numPages; i++) {
  const page = await pdf.getPage(i);
  const tc = await page.getTextContent();
  console.log(i, JSON.stringify(tc.items.map((it: any) => [it.str, it.hasEOL, it.transform[5], it.height])));
}
const t = performance.now();
const buf = await renderPageAsImage(pdf, 4, { canvasImport: () => import('@napi-rs/canvas'), scale: 2 });
console.log('render', performance.now() - t, buf.byteLength);
await Bun.write('/tmp/exp/page4.png', buf);
