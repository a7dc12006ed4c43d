export interface ExtractOptions {
  /** Images (PNG, JPEG, WebP, TIFF) and scanned PDF pages are read by OCR only when true. */
  allowImages: boolean;
  /** A PDF with more pages than this is refused (TOO_LARGE). */
  maxPages: number;
  /** Extracted text longer than this is refused (TOO_LARGE). */
  maxChars: number;
  /** PDF pages without a text layer read by OCR at most (more → TOO_LARGE). Default 20. */
  maxOcrPages?: number;
  /** Largest image OCR will decode, in pixels (width × height). Default 40 million. */
  maxImagePixels?: number;
}

export interface ExtractResult {
  /** The extracted text: headings on their own lines (`# …`), blocks separated by blank lines. */
  text: string;
  /** The detected media type (from the bytes and the name), e.g. `application/pdf`. */
  mediaType: string;
  /** PDF only: start offsets in `text` of pages 1..n (for `ProcessJob.pages`). */
  pages?: number[];
  /** PDF only: the number of pages. */
  pageCount?: number;
  /** Pages (PDF) or images whose text came from OCR. */
  ocrPages?: number;
}

export const DEFAULT_MAX_OCR_PAGES = 20;
export const DEFAULT_MAX_IMAGE_PIXELS = 40_000_000;
