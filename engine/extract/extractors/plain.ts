// Plain text and Markdown: decoded (BOM-aware) and kept as written. Markdown's `#` headings stay
// on their own lines, which is what the chunker breaks at. Form feeds become blank lines.
import { decodeText, type TextEncoding } from '../text';

export function plainText(bytes: Uint8Array, encoding: TextEncoding): string {
  return decodeText(bytes, encoding).replace(/\f/g, '\n\n').trim();
}

export function markdownText(bytes: Uint8Array, encoding: TextEncoding): string {
  return plainText(bytes, encoding);
}
