// The error envelope of decisions.md: { success: false, error: { code, message, details? } }.
import { isEngineError, type EngineError, type EngineErrorCode } from '../engine';

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

export const invalid = (path: string, message: string) => new ApiError('VALIDATION_ERROR', `${path.slice(1) || 'request'}: ${message}`, [{ path, message }]);

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetail[], requestId?: string) {
  return {
    success: false as const,
    error: { code, message, ...(details && details.length > 0 ? { details } : {}), ...(requestId ? { requestId } : {}) },
  };
}

/**
 * The one table from the engine's error codes (engine/errors.ts) to the API's: every engine
 * failure answers through it (src/app.ts onError), with the engine's message.
 */
export const API_CODE_OF_ENGINE: Record<EngineErrorCode, ErrorCode> = {
  KNOWLEDGE_BASE_NOT_FOUND: 'NOT_FOUND',
  CONTENT_NOT_FOUND: 'NOT_FOUND',
  // Ids are chosen by the server (uploads), never by clients: a reused one is our fault.
  CONTENT_ID_TAKEN: 'INTERNAL',
  QUOTA_EXCEEDED: 'QUOTA_EXCEEDED',
  RECORD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  EMBEDDING_FAILED: 'EMBEDDING_FAILED',
  // Requests for another node's shard are forwarded before they get here; one that slips through
  // (the cluster's shard map changing under it) is worth retrying.
  SHARD_NOT_HELD: 'NOT_READY',
  ENGINE_CLOSED: 'NOT_READY',
  INVALID_QUERY: 'VALIDATION_ERROR',
  UNSUPPORTED_FILE_TYPE: 'UNSUPPORTED_FILE_TYPE',
  EMPTY_FILE: 'EMPTY_FILE',
  NO_TEXT_EXTRACTED: 'NO_TEXT_EXTRACTED',
  EXTRACTION_FAILED: 'EXTRACTION_FAILED',
  TOO_LARGE: 'PAYLOAD_TOO_LARGE',
};

/** The API's answer to an engine error: its code from the table, the engine's message, details where a client can act on them. */
export function apiErrorOf(err: EngineError): ApiError {
  const code = API_CODE_OF_ENGINE[err.code];
  if (isEngineError(err, 'QUOTA_EXCEEDED')) {
    const { quota, limit } = err.details;
    return new ApiError(code, `Quota reached: ${err.message}`, [
      { path: '/', message: `at most ${limit} ${quota === 'knowledgeBases' ? 'knowledge bases' : 'content items'} per organization` },
    ]);
  }
  if (err.code === 'RECORD_TOO_LARGE') return new ApiError(code, `Too large for the cluster's log: ${err.message}`);
  if (err.code === 'EMBEDDING_FAILED') return new ApiError(code, `The embedding model failed: ${err.message}`);
  if (isEngineError(err, 'INVALID_QUERY')) return new ApiError(code, `Invalid query: ${err.message}`, [{ path: '/query', message: err.message }]);
  if (code === 'NOT_READY') return new ApiError(code, `${err.message}; retry shortly`, undefined, { 'retry-after': '1' });
  if (code === 'INTERNAL') return new ApiError(code, 'Internal server error');
  return new ApiError(code, err.message);
}
