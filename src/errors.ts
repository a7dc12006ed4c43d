// The error envelope of decisions.md: { success: false, error: { code, message, details? } }.

export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'INVALID_JSON'
  | 'KB_TYPE_IMMUTABLE'
  | 'UNSUPPORTED_FILE_TYPE'
  | 'EMPTY_FILE'
  | 'NO_TEXT_EXTRACTED'
  | 'UNAUTHORIZED'
  | 'QUOTA_EXCEEDED'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TIMEOUT'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'INTERNAL'
  | 'EXTRACTION_FAILED'
  | 'EMBEDDING_FAILED'
  | 'NOT_READY';

export const STATUS_OF: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  KB_TYPE_IMMUTABLE: 400,
  UNSUPPORTED_FILE_TYPE: 400,
  EMPTY_FILE: 400,
  NO_TEXT_EXTRACTED: 400,
  UNAUTHORIZED: 401,
  QUOTA_EXCEEDED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  EXTRACTION_FAILED: 502,
  EMBEDDING_FAILED: 502,
  NOT_READY: 503,
};

export interface ErrorDetail {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  get status(): number {
    return STATUS_OF[this.code];
  }
}

export const notFound = (what = 'Resource') => new ApiError('NOT_FOUND', `${what} not found`);

export const invalid = (path: string, message: string) =>
  new ApiError('VALIDATION_ERROR', `${path.slice(1) || 'request'}: ${message}`, [{ path, message }]);

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetail[], requestId?: string) {
  return {
    success: false as const,
    error: { code, message, ...(details && details.length > 0 ? { details } : {}), ...(requestId ? { requestId } : {}) },
  };
}
