// Every failure the engine reports to its callers, one code per kind (as Meilisearch's error
// enum): callers decide on `code`, never on classes or messages. `message` is written for the
// person who made the request; `details` carries what a code needs (a quota's limit, a shard).
// The server maps each code to an HTTP status in one table (src/errors.ts).
import type { NodeEntry } from './cluster/live-nodes';
import type { ExtractionErrorCode } from './extract/errors';

export interface EngineErrorDetails {
  /** No such knowledge base for this organization (another organization's behaves the same). */
  KNOWLEDGE_BASE_NOT_FOUND: { kbId: string };
  /** No such content item in the knowledge base. */
  CONTENT_NOT_FOUND: { kbId: string; contentId: string };
  /** A caller-chosen content id that is malformed or already used. */
  CONTENT_ID_TAKEN: { kbId: string; contentId: string };
  /** The organization already holds its quota. */
  QUOTA_EXCEEDED: { quota: 'knowledgeBases' | 'contents'; limit: number };
  /** A record larger than the log takes in one entry (cluster mode: the NATS servers' max_payload). */
  RECORD_TOO_LARGE: { bytes: number; limit: number };
  /** The embedding model failed (loading or running). */
  EMBEDDING_FAILED: Record<string, never>;
  /** Cluster mode: the knowledge base's content is held by other nodes: `nodes`, the live ones holding it, in the order to try them. */
  SHARD_NOT_HELD: { kbId: string; shard: number; nodes: NodeEntry[] };
  /** A search query whose syntax cannot mean anything (a phrase of stop words, exclusions only). */
  INVALID_QUERY: { field: 'query' };
  /** The engine is closed, or its log failed and it takes no more writes. */
  ENGINE_CLOSED: Record<string, never>;
}

export type EngineErrorCode = keyof EngineErrorDetails | ExtractionErrorCode;

export class EngineError<C extends EngineErrorCode = EngineErrorCode> extends Error {
  constructor(
    readonly code: C,
    message: string,
    readonly details: C extends keyof EngineErrorDetails ? EngineErrorDetails[C] : Record<string, never> = {} as never,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EngineError';
  }
}

/** Whether `err` is the engine's error of `code`. */
export function isEngineError<C extends EngineErrorCode>(err: unknown, code: C): err is EngineError<C> {
  return err instanceof EngineError && err.code === code;
}

export const knowledgeBaseNotFound = (kbId: string) => new EngineError('KNOWLEDGE_BASE_NOT_FOUND', 'Knowledge base not found', { kbId });

export const contentNotFound = (kbId: string, contentId: string) => new EngineError('CONTENT_NOT_FOUND', 'Content not found', { kbId, contentId });
