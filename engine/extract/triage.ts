// Triage of an upload before any parsing, from its name and first bytes only: cheap enough for the
// request thread, and needs no more than HEAD_BYTES of the file in memory.
// - lane: `heavy` for anything that may be a PDF, DOCX or image (parsers and OCR that can run for
//   minutes), `light` for the rest (text, Markdown, HTML, CSV, JSON, or unsupported bytes, refused
//   at once). It must never call a heavy file light: every way detect.ts arrives at a PDF, DOCX or
//   image starts from a signature at the very start (file-type's magic numbers, signatureType),
//   from a zip, or from `%PDF-` in the first 1,024 bytes — all checked here (test/extract/triage.test.ts
//   holds the two in step). Calling a light file heavy only costs it a shorter line.
// - image: the bytes start like a PNG, JPEG, WebP or TIFF, so reading them is OCR and gets the
//   OCR time budget.
import { extensionOf, hasPdfHeaderNearStart, signatureType } from './detect';

/** Bytes of the file triage looks at. */
export const HEAD_BYTES = 1024;

export type Lane = 'light' | 'heavy';

/** Names of the heavy formats: such a file goes to the heavy lane whatever its bytes. */
const HEAVY_EXTENSIONS = new Set(['pdf', 'docx', 'png', 'apng', 'jpg', 'jpeg', 'webp', 'tif', 'tiff']);

const startsWith = (bytes: Uint8Array, ...sig: number[]) => sig.every((b, i) => bytes[i] === b);

/** The bytes start like one of the images we read by OCR (PNG, JPEG, WebP, TIFF or BigTIFF). */
export function isImageHead(head: Uint8Array): boolean {
  if (signatureType(head, '')?.kind === 'image') return true;
  return startsWith(head, 0x49, 0x49, 0x2b, 0x00) || startsWith(head, 0x4d, 0x4d, 0x00, 0x2b); // BigTIFF
}

/** The lane of a file with this name whose first bytes (at least HEAD_BYTES, or all) are `head`. */
export function laneOf(head: Uint8Array, fileName: string): Lane {
  if (HEAVY_EXTENSIONS.has(extensionOf(fileName))) return 'heavy';
  if (isImageHead(head) || signatureType(head, 'docx') !== undefined) return 'heavy';
  if (startsWith(head, 0x50, 0x4b)) return 'heavy'; // any zip: file-type may find a DOCX inside
  if (startsWith(head, 0x25, 0x50, 0x44, 0x46) || hasPdfHeaderNearStart(head)) return 'heavy'; // %PDF
  return 'light';
}
