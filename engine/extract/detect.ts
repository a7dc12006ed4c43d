// Decides a file's format from its bytes first and its name second.
//
// - Magic numbers win: a PDF, DOCX, PNG, JPEG, WebP or TIFF is that format whatever its name (a PNG
//   named notes.txt is an image). Detection uses the `file-type` package.
// - A zip archive named *.docx is treated as DOCX (the DOCX extractor then refuses it if it is
//   not a Word document: a broken DOCX is EXTRACTION_FAILED).
// - Anything else must be text: a UTF-8/UTF-16 byte-order mark, or valid UTF-8 with no NUL byte
//   (plus a Windows-1252 fallback when the name says text). Its name then picks the text format
//   (.md → Markdown, .html → HTML, .csv → CSV, .json → JSON, else plain text; a nameless file that
//   starts like an HTML document is HTML).
// - A text file that `file-type` recognizes as some other format (RTF, XML, PostScript, …) is
//   only accepted when its name says it is one of our text formats.
// - Bytes that are neither a supported binary format nor text are unsupported, whatever the name:
//   random bytes named x.pdf are UNSUPPORTED_FILE_TYPE (400), while a file that does start like a
//   PDF but cannot be parsed is EXTRACTION_FAILED (502). A name ending in .pdf with "%PDF-" in
//   the first 1,024 bytes (junk before the header, which PDF readers tolerate) counts as a PDF.
// - When `file-type` recognizes nothing, the bare signatures of our binary formats still count: a
//   damaged PNG (valid signature, broken chunks) is a PNG that fails to extract (502), not an
//   unsupported file (400).
import { fileTypeFromBuffer } from 'file-type';
import { sniffTextEncoding, type TextEncoding } from './text';

export type FileKind = 'text' | 'markdown' | 'html' | 'csv' | 'json' | 'pdf' | 'docx' | 'image';

export interface DetectedType {
  kind: FileKind;
  /** Media type of the detected format, e.g. `text/markdown`, `image/png`. */
  mediaType: string;
  /** Text formats: the encoding to decode with. */
  encoding?: TextEncoding;
}

export const DOCX_MEDIA_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

const BINARY_BY_EXT: Record<string, DetectedType> = {
  pdf: { kind: 'pdf', mediaType: 'application/pdf' },
  docx: { kind: 'docx', mediaType: DOCX_MEDIA_TYPE },
  png: { kind: 'image', mediaType: 'image/png' },
  apng: { kind: 'image', mediaType: 'image/png' },
  jpg: { kind: 'image', mediaType: 'image/jpeg' },
  webp: { kind: 'image', mediaType: 'image/webp' },
  tif: { kind: 'image', mediaType: 'image/tiff' },
};

const TEXT_BY_EXT: Record<string, Omit<DetectedType, 'encoding'>> = {
  txt: { kind: 'text', mediaType: 'text/plain' },
  text: { kind: 'text', mediaType: 'text/plain' },
  md: { kind: 'markdown', mediaType: 'text/markdown' },
  markdown: { kind: 'markdown', mediaType: 'text/markdown' },
  mdown: { kind: 'markdown', mediaType: 'text/markdown' },
  mkd: { kind: 'markdown', mediaType: 'text/markdown' },
  mkdn: { kind: 'markdown', mediaType: 'text/markdown' },
  html: { kind: 'html', mediaType: 'text/html' },
  htm: { kind: 'html', mediaType: 'text/html' },
  xhtml: { kind: 'html', mediaType: 'text/html' },
  csv: { kind: 'csv', mediaType: 'text/csv' },
  tsv: { kind: 'csv', mediaType: 'text/tab-separated-values' },
  json: { kind: 'json', mediaType: 'application/json' },
};

/** Lower-case extension of a file name without the dot ('' when there is none). */
export function extensionOf(fileName: string): string {
  const base = fileName.replace(/^.*[\\/]/, '');
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
}

function looksLikeHtml(bytes: Uint8Array): boolean {
  const head = new TextDecoder('utf-8')
    .decode(bytes.subarray(0, 1024))
    .replace(/^\uFEFF/, '')
    .trimStart()
    .toLowerCase();
  return head.startsWith('<!doctype html') || head.startsWith('<html');
}

/**
 * Bare signatures of our binary formats, for damaged files `file-type` no longer recognizes (and
 * for triage.ts, which routes uploads by their first bytes).
 */
export function signatureType(bytes: Uint8Array, ext: string): DetectedType | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return { ...BINARY_BY_EXT.png! };
  if (starts(0xff, 0xd8, 0xff)) return { ...BINARY_BY_EXT.jpg! };
  if (starts(0x52, 0x49, 0x46, 0x46) && bytes[8] === 0x57 && bytes[9] === 0x45 && bytes[10] === 0x42 && bytes[11] === 0x50) return { ...BINARY_BY_EXT.webp! };
  if (starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return { ...BINARY_BY_EXT.tif! };
  if (starts(0x25, 0x50, 0x44, 0x46, 0x2d)) return { ...BINARY_BY_EXT.pdf! };
  if (starts(0x50, 0x4b, 0x03, 0x04) && ext === 'docx') return { ...BINARY_BY_EXT.docx! };
  return undefined;
}

export function hasPdfHeaderNearStart(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, 1024);
  for (let i = 0; i + 5 <= head.length; i++) {
    if (head[i] === 0x25 && head[i + 1] === 0x50 && head[i + 2] === 0x44 && head[i + 3] === 0x46 && head[i + 4] === 0x2d) return true;
  }
  return false;
}

/** What the bytes are, in words, for a refusal: "a gzip archive (application/gzip)", or "binary data of no known format". */
export async function describeBytes(bytes: Uint8Array): Promise<string> {
  try {
    const magic = await fileTypeFromBuffer(bytes);
    if (magic) return `a .${magic.ext} file (${magic.mime})`;
  } catch {}
  return sniffTextEncoding(bytes, false) ? 'text in a format of no supported kind' : 'binary data of no known format';
}

/** The detected format, or undefined when the file is of no supported type. */
export async function detectFileType(bytes: Uint8Array, fileName: string): Promise<DetectedType | undefined> {
  const ext = extensionOf(fileName);
  let magic: { ext: string; mime: string } | undefined;
  try {
    magic = await fileTypeFromBuffer(bytes);
  } catch {
    magic = undefined; // a detector choked on malformed bytes: judge them as if unrecognized
  }
  if (magic) {
    const binary = BINARY_BY_EXT[magic.ext];
    if (binary) return { ...binary };
    if (magic.ext === 'zip' && ext === 'docx') return { ...BINARY_BY_EXT.docx! };
  } else {
    // A damaged file of one of our formats (e.g. a PNG with broken chunks) is still that format,
    // so it fails as EXTRACTION_FAILED rather than being called unsupported.
    const damaged = signatureType(bytes, ext);
    if (damaged) return damaged;
  }

  const named = TEXT_BY_EXT[ext];
  const encoding = sniffTextEncoding(bytes, named !== undefined);
  if (!encoding) {
    if (!magic && ext === 'pdf' && hasPdfHeaderNearStart(bytes)) return { ...BINARY_BY_EXT.pdf! };
    return undefined;
  }
  if (named) return { ...named, encoding };
  if (magic) return undefined; // text in some other recognized format (RTF, XML, …) not named as ours
  if (looksLikeHtml(bytes)) return { kind: 'html', mediaType: 'text/html', encoding };
  return { kind: 'text', mediaType: 'text/plain', encoding };
}
