// The one error type extraction throws. `message` is written for the person who uploaded the file:
// no stack traces, file paths or library internals. `detail` keeps the underlying reason for logs.
import { EngineError } from '../errors';

export type ExtractionErrorCode =
  /** Not a format we read (or an image where images are not allowed). HTTP 400. */
  | 'UNSUPPORTED_FILE_TYPE'
  /** Zero bytes. HTTP 400. */
  | 'EMPTY_FILE'
  /** A valid file with no readable text in it. HTTP 400. */
  | 'NO_TEXT_EXTRACTED'
  /** The parser failed, crashed or ran out of time on a supported format. HTTP 502. */
  | 'EXTRACTION_FAILED'
  /** Over a page, character, pixel or unpacked-size cap. HTTP 413 (`PAYLOAD_TOO_LARGE`). */
  | 'TOO_LARGE';

export const EXTRACTION_ERROR_CODES: readonly ExtractionErrorCode[] = [
  'UNSUPPORTED_FILE_TYPE',
  'EMPTY_FILE',
  'NO_TEXT_EXTRACTED',
  'EXTRACTION_FAILED',
  'TOO_LARGE',
];

export class ExtractionError extends EngineError<ExtractionErrorCode> {
  override readonly name = 'ExtractionError';

  constructor(
    code: ExtractionErrorCode,
    message: string,
    /** The underlying reason (library message), for logs only; never for a response. */
    readonly detail?: string,
  ) {
    super(code, message);
  }
}

/** The library's own message of an unknown thrown value, for `detail`. */
export function reasonOf(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/** Wraps anything that is not already an ExtractionError as EXTRACTION_FAILED with `message`. */
export function asExtractionFailure(err: unknown, message: string): ExtractionError {
  if (err instanceof ExtractionError) return err;
  return new ExtractionError('EXTRACTION_FAILED', message, reasonOf(err));
}

/** Human number formatting for messages: 10485760 → "10,485,760". */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}
