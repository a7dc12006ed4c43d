// Text decoding shared by the text-based formats: byte-order marks, strict UTF-8 sniffing and a
// Windows-1252 fallback for legacy files whose name says they are text.

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252';

/** Share of C0 control characters (other than tab, LF, CR, FF) a legacy 8-bit text may hold. */
const MAX_CONTROL_RATIO = 0.01;

function decodes(bytes: Uint8Array, encoding: TextEncoding): string | undefined {
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The byte-order mark's encoding, if the bytes start with one (UTF-32 marks are not text here). */
export function bomEncoding(bytes: Uint8Array): TextEncoding | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) {
    if (bytes.length >= 4 && bytes[2] === 0 && bytes[3] === 0) return undefined; // UTF-32 LE
    return 'utf-16le';
  }
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return undefined;
}

/**
 * The encoding these bytes are text in, or undefined when they are not text:
 * - a UTF-8 / UTF-16 LE / UTF-16 BE byte-order mark, with content valid in that encoding and no NUL;
 * - else valid UTF-8 without a NUL byte;
 * - else, only with `allowLegacy` (the name says text), Windows-1252 when there is no NUL and
 *   almost no control characters (real binaries have many).
 */
export function sniffTextEncoding(bytes: Uint8Array, allowLegacy: boolean): TextEncoding | undefined {
  const bom = bomEncoding(bytes);
  if (bom) {
    const text = decodes(bytes, bom);
    return text !== undefined && !text.includes('\u0000') ? bom : undefined;
  }
  if (bytes.includes(0)) return undefined;
  if (decodes(bytes, 'utf-8') !== undefined) return 'utf-8';
  if (!allowLegacy) return undefined;
  let controls = 0;
  for (const b of bytes) {
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x0c) controls++;
  }
  return controls <= bytes.length * MAX_CONTROL_RATIO ? 'windows-1252' : undefined;
}

/** Decodes (dropping a byte-order mark) and normalizes line ends to `\n`. */
export function decodeText(bytes: Uint8Array, encoding: TextEncoding): string {
  const text = new TextDecoder(encoding).decode(bytes);
  return normalizeNewlines(text);
}

export function normalizeNewlines(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

/** Collapses runs of 3+ newlines to one blank line, trims line ends and the whole text. */
export function tidyBlocks(text: string): string {
  return text
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** True when the text holds at least one letter or digit (anything else is "no text"). */
export function hasReadableText(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}
