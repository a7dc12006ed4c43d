// File extraction: bytes + file name → structured text for chunking. No HTTP here; see README.md
// beside this file for the formats, libraries, caps and error codes.
//
// `extractFile` runs in the calling thread. The server should call it through `ExtractionLanes`
// (lanes.ts: a light and a heavy lane, shared fairly by organizations) over `ExtractionPool`
// (pool.ts), which runs it in worker threads with a time limit (and an OCR budget for images).
import { gunzipSync } from 'node:zlib';
import { describeBytes, detectFileType, extensionOf, type DetectedType } from './detect';
import { ExtractionError, asExtractionFailure, formatCount } from './errors';
import { csvToText } from './extractors/csv';
import { extractDocx } from './extractors/docx';
import { decodeHtml, htmlToText } from './extractors/html';
import { imageText } from './extractors/image';
import { jsonToText } from './extractors/json';
import { extractPdf } from './extractors/pdf';
import { markdownText, plainText } from './extractors/plain';
import { decodeText, hasReadableText } from './text';
import { DEFAULT_MAX_DOCX_XML_BYTES, DEFAULT_MAX_IMAGE_PIXELS, DEFAULT_MAX_OCR_PAGES, type ExtractOptions, type ExtractResult } from './types';

export { ExtractionError, EXTRACTION_ERROR_CODES, type ExtractionErrorCode } from './errors';
export { detectFileType, type DetectedType, type FileKind } from './detect';
export { shutdownOcr } from './extractors/ocr';
export { ExtractionPool, DEFAULT_EXTRACTION_TIMEOUT_MS, DEFAULT_OCR_TIMEOUT_MS, type ExtractionPoolOptions } from './pool';
export { ExtractionLanes, type ExtractionLanesOptions } from './lanes';
export type { ExtractOptions, ExtractResult } from './types';

const isGzip = (bytes: Uint8Array) => bytes[0] === 0x1f && bytes[1] === 0x8b && bytes[2] === 0x08;

/**
 * A gzip-compressed text file (docs/faq.md.gz): unpacked, at most to the text size a file may have
 * (a gzip bomb stops there), then read as the file it holds. Only text formats: a compressed PDF,
 * DOCX or image would escape the triage that sends those to the heavy lane (triage.ts).
 */
async function extractGzipped(bytes: Uint8Array, fileName: string, options: ExtractOptions): Promise<ExtractResult> {
  // Text is at most 4 bytes a character in UTF-8.
  const limit = options.maxChars * 4;
  let inner: Uint8Array;
  try {
    inner = gunzipSync(bytes, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new ExtractionError('TOO_LARGE', `The compressed file unpacks to more than ${formatCount(limit)} bytes.`);
    }
    throw new ExtractionError('EXTRACTION_FAILED', 'The gzip file could not be unpacked; it may be damaged.');
  }
  const innerName = extensionOf(fileName) === 'gz' ? fileName.replace(/\.gz$/i, '') : fileName;
  if (inner.byteLength === 0) throw new ExtractionError('EMPTY_FILE', 'The compressed file is empty.');
  if (isGzip(inner)) throw new ExtractionError('UNSUPPORTED_FILE_TYPE', 'The file is compressed twice; unpack it once before uploading.');
  const type = await detectFileType(inner, innerName);
  if (type && (type.kind === 'pdf' || type.kind === 'docx' || type.kind === 'image')) {
    throw new ExtractionError('UNSUPPORTED_FILE_TYPE', `The file is a gzip-compressed ${LABEL[type.kind]} file; upload it uncompressed.`);
  }
  return extractFile(inner, innerName, options);
}

const LABEL: Record<DetectedType['kind'], string> = {
  text: 'text',
  markdown: 'Markdown',
  html: 'HTML',
  csv: 'CSV',
  json: 'JSON',
  pdf: 'PDF',
  docx: 'Word',
  image: 'image',
};

function tooLong(maxChars: number): ExtractionError {
  return new ExtractionError('TOO_LARGE', `The text extracted from the file is longer than ${formatCount(maxChars)} characters.`);
}

async function extractByKind(bytes: Uint8Array, type: DetectedType, options: ExtractOptions): Promise<ExtractResult> {
  const base = { mediaType: type.mediaType };
  const encoding = type.encoding ?? 'utf-8';
  switch (type.kind) {
    case 'text':
      return { ...base, text: plainText(bytes, encoding) };
    case 'markdown':
      return { ...base, text: markdownText(bytes, encoding) };
    case 'html':
      return { ...base, text: htmlToText(decodeHtml(bytes, encoding)) };
    case 'csv':
      return { ...base, text: csvToText(decodeText(bytes, encoding), type.mediaType === 'text/tab-separated-values') };
    case 'json':
      return { ...base, text: jsonToText(decodeText(bytes, encoding), options.maxChars) };
    case 'docx':
      return { ...base, text: await extractDocx(bytes, options.maxDocxXmlBytes ?? DEFAULT_MAX_DOCX_XML_BYTES) };
    case 'image':
      return { ...base, text: await imageText(bytes, type.mediaType, options.maxImagePixels ?? DEFAULT_MAX_IMAGE_PIXELS), ocrPages: 1 };
    case 'pdf': {
      const pdf = await extractPdf(bytes, {
        allowImages: options.allowImages,
        maxPages: options.maxPages,
        maxChars: options.maxChars,
        maxOcrPages: options.maxOcrPages ?? DEFAULT_MAX_OCR_PAGES,
      });
      return { ...base, text: pdf.text, pages: pdf.pages, pageCount: pdf.pageCount, ...(pdf.ocrPages > 0 ? { ocrPages: pdf.ocrPages } : {}) };
    }
  }
}

/**
 * Extracts the text of an uploaded file. Throws `ExtractionError`:
 * - EMPTY_FILE: zero bytes;
 * - UNSUPPORTED_FILE_TYPE: bytes of no supported format, or an image when `allowImages` is false;
 * - EXTRACTION_FAILED: a supported format whose parser failed (corrupt PDF, broken DOCX, bad JSON);
 * - NO_TEXT_EXTRACTED: a valid file without a letter or digit of text;
 * - TOO_LARGE: more than `maxPages` pages or `maxChars` characters, or over the zip/image caps.
 *   Files over a cap are refused, never silently truncated.
 */
export async function extractFile(bytes: Uint8Array, fileName: string, options: ExtractOptions): Promise<ExtractResult> {
  if (bytes.byteLength === 0) throw new ExtractionError('EMPTY_FILE', 'The file is empty.');
  if (isGzip(bytes)) return extractGzipped(bytes, fileName, options);
  const type = await detectFileType(bytes, fileName);
  if (!type) {
    throw new ExtractionError(
      'UNSUPPORTED_FILE_TYPE',
      `The file is ${await describeBytes(bytes)}, a type that is not supported. Upload plain text, Markdown, HTML, PDF, DOCX, CSV or JSON` +
        (options.allowImages ? ', or a PNG, JPEG, WebP or TIFF image' : '') +
        ' (text formats may be gzip-compressed).',
    );
  }
  if (type.kind === 'image' && !options.allowImages) {
    throw new ExtractionError(
      'UNSUPPORTED_FILE_TYPE',
      'Images are only accepted by knowledge bases of type TEXT_AND_MEDIA_HIGH_QUALITY, where their text is read by OCR.',
    );
  }
  let result: ExtractResult;
  try {
    result = await extractByKind(bytes, type, options);
  } catch (err) {
    throw asExtractionFailure(err, `The ${LABEL[type.kind]} file could not be read; it may be damaged.`);
  }
  if (result.text.length > options.maxChars) throw tooLong(options.maxChars);
  if (!hasReadableText(result.text)) {
    throw new ExtractionError('NO_TEXT_EXTRACTED', `No text was found in the ${LABEL[type.kind]} file.`);
  }
  return result;
}
