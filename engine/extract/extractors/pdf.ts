// PDF → text per page with unpdf (a serverless build of Mozilla's PDF.js that runs in Bun without a
// PDF.js worker). Lines come from PDF.js's text items; a vertical gap of more than ~1.5 lines
// starts a new paragraph (a blank line). Pages are joined by a blank line and their start offsets
// returned, so every chunk knows its page. A page without a text layer that paints an image is,
// when images are allowed, rendered with @napi-rs/canvas and read by OCR.
import { ExtractionError, asExtractionFailure, formatCount, reasonOf } from '../errors';
import { hasReadableText } from '../text';
import { recognize } from './ocr';

export interface PdfOptions {
  allowImages: boolean;
  maxPages: number;
  maxChars: number;
  maxOcrPages: number;
}

export interface PdfText {
  text: string;
  pages: number[];
  pageCount: number;
  ocrPages: number;
}

type Unpdf = typeof import('unpdf');
type PdfDocument = Awaited<ReturnType<Unpdf['getDocumentProxy']>>;
type PdfPage = Awaited<ReturnType<PdfDocument['getPage']>>;

/** Target resolution for OCR rendering, and a cap on the rendered pixels. */
const OCR_DPI = 200;
const MAX_RENDER_PIXELS = 12_000_000;

interface Item {
  str: string;
  hasEOL: boolean;
  transform: number[];
  height: number;
}

function isTextItem(item: unknown): item is Item {
  return typeof item === 'object' && item !== null && typeof (item as Item).str === 'string';
}

/** One page's text: lines in reading order as PDF.js gives them, paragraphs split at larger gaps. */
export function pageTextFromItems(items: unknown[]): string {
  const lines: Array<{ text: string; y: number; size: number }> = [];
  let text = '';
  let y = Number.NaN;
  let size = 0;
  const endLine = () => {
    const t = text.replace(/\s+/g, ' ').trim();
    if (t) lines.push({ text: t, y, size: size || 10 });
    text = '';
    y = Number.NaN;
    size = 0;
  };
  for (const item of items) {
    if (!isTextItem(item)) continue;
    const itemY = item.transform[5] ?? 0;
    const itemSize = Math.abs(item.height) || Math.hypot(item.transform[2] ?? 0, item.transform[3] ?? 0);
    if (item.str.length > 0) {
      // A jump in baseline without an end-of-line mark is a new line all the same.
      if (text.trim() && !Number.isNaN(y) && Math.abs(itemY - y) > Math.max(size, itemSize, 1) * 0.6) endLine();
      if (Number.isNaN(y) || !text.trim()) y = itemY;
      size = Math.max(size, itemSize);
      text += item.str;
    }
    if (item.hasEOL) endLine();
  }
  endLine();

  let out = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (i > 0) {
      const prev = lines[i - 1]!;
      const gap = prev.y - line.y;
      const lineHeight = Math.max(prev.size, line.size);
      // Moving up (a new column) or a gap of more than 1.5 lines: a new paragraph.
      out += gap < 0 || gap > lineHeight * 1.5 ? '\n\n' : '\n';
    }
    out += line.text;
  }
  return out;
}

async function pageHasImages(page: PdfPage, OPS: Record<string, number>): Promise<boolean> {
  const imageOps = new Set(
    Object.entries(OPS)
      .filter(([name]) => /image/i.test(name) && name.startsWith('paint'))
      .map(([, code]) => code),
  );
  const list = await page.getOperatorList();
  return list.fnArray.some((fn: number) => imageOps.has(fn));
}

async function ocrPage(unpdf: Unpdf, pdf: PdfDocument, page: PdfPage, pageNumber: number): Promise<string> {
  const { width, height } = page.getViewport({ scale: 1 });
  let scale = OCR_DPI / 72;
  const pixels = width * height * scale * scale;
  if (pixels > MAX_RENDER_PIXELS) scale *= Math.sqrt(MAX_RENDER_PIXELS / pixels);
  const png = await unpdf.renderPageAsImage(pdf, pageNumber, { canvasImport: () => import('@napi-rs/canvas'), scale });
  return (await recognize(new Uint8Array(png))).trim();
}

function failure(err: unknown): ExtractionError {
  if (err instanceof ExtractionError) return err;
  const name = err instanceof Error ? err.name : '';
  if (name === 'PasswordException') {
    return new ExtractionError('EXTRACTION_FAILED', 'The PDF is password-protected; upload it without a password.', reasonOf(err));
  }
  return asExtractionFailure(err, 'The PDF file could not be read; it may be damaged.');
}

export async function extractPdf(bytes: Uint8Array, opts: PdfOptions): Promise<PdfText> {
  const unpdf = await import('unpdf');
  let pdf: PdfDocument;
  try {
    // PDF.js may take ownership of (detach) the buffer it is given: hand it a copy.
    pdf = await unpdf.getDocumentProxy(bytes.slice(), {
      verbosity: 0,
      disableFontFace: true,
      useSystemFonts: false,
      stopAtErrors: false,
    });
  } catch (err) {
    throw failure(err);
  }
  try {
    const pageCount = pdf.numPages;
    if (pageCount > opts.maxPages) {
      throw new ExtractionError('TOO_LARGE', `The PDF has ${formatCount(pageCount)} pages; at most ${formatCount(opts.maxPages)} are accepted.`);
    }
    const { OPS } = await unpdf.getResolvedPDFJS();
    let text = '';
    const pages: number[] = [];
    let ocrPages = 0;
    let imageOnlyPages = 0;
    for (let n = 1; n <= pageCount; n++) {
      const page = await pdf.getPage(n);
      let pageText = pageTextFromItems((await page.getTextContent()).items);
      if (!hasReadableText(pageText) && (await pageHasImages(page, OPS as unknown as Record<string, number>))) {
        imageOnlyPages++;
        if (opts.allowImages) {
          if (++ocrPages > opts.maxOcrPages) {
            throw new ExtractionError(
              'TOO_LARGE',
              `The PDF has more than ${formatCount(opts.maxOcrPages)} pages without a text layer; at most ${formatCount(opts.maxOcrPages)} are read by OCR.`,
            );
          }
          pageText = await ocrPage(unpdf, pdf, page, n);
        }
      }
      page.cleanup();
      const trimmed = pageText.trim();
      if (trimmed && text.length > 0) text += '\n\n';
      pages.push(text.length); // an empty page gets the offset where the text so far ends
      text += trimmed;
      if (text.length > opts.maxChars) {
        throw new ExtractionError('TOO_LARGE', `The text of the PDF is longer than ${formatCount(opts.maxChars)} characters.`);
      }
    }
    if (!hasReadableText(text) && imageOnlyPages > 0 && !opts.allowImages) {
      throw new ExtractionError(
        'NO_TEXT_EXTRACTED',
        'The PDF has no text layer (it looks scanned). Scanned pages are read by OCR only in knowledge bases that accept images.',
      );
    }
    return { text, pages, pageCount, ocrPages };
  } catch (err) {
    throw failure(err);
  } finally {
    await pdf.loadingTask.destroy().catch(() => {});
  }
}
