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
  /**
   * Most bytes the XML parts of a DOCX may unpack to (default 6 MiB). mammoth builds the whole
   * document in memory, ~135 bytes of it per byte of XML (measured): 6 MiB stays under 1 GiB.
   */
  maxDocxXmlBytes?: number;
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
export const DEFAULT_MAX_DOCX_XML_BYTES = 6 * 1024 * 1024;
