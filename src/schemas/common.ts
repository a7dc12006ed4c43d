// TypeBox schemas shared by routes, and the checks TypeBox cannot express (trimmed lengths,
// metadata key lengths, byte sizes). Every schema rejects unknown fields.
import { Type, type SchemaOptions, type TLiteral, type TUnion } from '@sinclair/typebox';
import { t } from 'elysia';
import { invalid } from '../errors';
import { compileFilter, FilterError, type Metadata, type MetadataFilter } from '../../engine';
import type { SearchMetadataFilter } from './metadata-filter';

export const MAX_METADATA_KEYS = 64;
export const MAX_METADATA_KEY_LENGTH = 64;
export const MAX_METADATA_STRING = 1024;
export const MAX_METADATA_ARRAY = 64;
/** The whole metadata object, as JSON (UTF-8 bytes). */
export const MAX_METADATA_JSON_BYTES = 16 * 1024;
/** Values of one key in a filter (any of them matches). */
export const MAX_FILTER_VALUES = 256;

export const MetadataValueSchema = t.Union([
  t.String({ maxLength: MAX_METADATA_STRING }),
  // TypeBox's own Number: Elysia's t.Number would accept the string "5" as 5.
  Type.Number(),
  t.Boolean(),
  t.Array(t.String({ maxLength: MAX_METADATA_STRING }), { maxItems: MAX_METADATA_ARRAY }),
]);

export const MetadataSchema = t.Record(t.String(), MetadataValueSchema, {
  maxProperties: MAX_METADATA_KEYS,
  description: `Flat key/value metadata: at most ${MAX_METADATA_KEYS} keys of 1–${MAX_METADATA_KEY_LENGTH} characters; values are strings (≤ ${MAX_METADATA_STRING} characters), numbers, booleans or arrays of at most ${MAX_METADATA_ARRAY} strings; at most ${MAX_METADATA_JSON_BYTES} bytes as JSON in all.`,
  examples: [{ team: 'support', year: 2026, tags: ['faq', 'billing'] }],
});

/** Metadata in answers (content reads, lists, hits): bounded by the limits above whatever is stored. */
export const AnsweredMetadataFields = {
  metadata: t.Record(t.String(), t.Any()),
  metadataTruncated: t.Optional(
    t.Literal(true, {
      description: `Present when the item was stored before today's metadata limits and its metadata is over them: this answer carries the part within them (at most ${MAX_METADATA_JSON_BYTES} bytes as JSON).`,
    }),
  ),
};

// What the typed client may send is what the engine takes (a compile error when they part).
type Assignable<A extends B, B> = A;
export type FilterTypesAgree = Assignable<SearchMetadataFilter, MetadataFilter>;

// Operators and $and / $or nest, so the schema validated at run time only says "an object":
// checkFilter compiles it (engine/filter/expression.ts) and answers 400 with the path and a reason
// for whatever means nothing, which a union schema's "expected one of" could not. Its static type,
// which the typed client checks requests against, is the precise one (./metadata-filter.ts).
export const MetadataFilterSchema = Type.Unsafe<SearchMetadataFilter>(
  t.Record(t.String(), t.Any(), {
    maxProperties: MAX_METADATA_KEYS,
    description:
      'All conditions must hold. { key: value } matches an equal value or an array containing it; { key: [a, b] } any of them; { key: { "$gte": 2020, "$lt": 2025 } } an operator object: $eq, $ne, $gt, $gte, $lt, $lte (numbers with numbers, strings with strings: ISO dates order as text), $in, $nin, $exists ($ne and $nin also match items without the key); { "$and": [filters] } and { "$or": [filters] } combine filters.',
    examples: [
      { team: 'support', tags: ['faq', 'howto'] },
      { year: { $gte: 2024 }, $or: [{ team: 'billing' }, { tags: { $in: ['faq'] } }] },
    ],
  }),
);

// C0 control characters other than tab, line feed, vertical tab, form feed and carriage return:
// never part of a text a person wrote (NUL in particular breaks many consumers downstream).
const CONTROL = /[\u0000-\u0008\u000e-\u001f]/;

/** Stored strings (texts, names, metadata) hold no control characters but white space. */
export function checkNoControl(value: string, path: string): void {
  const at = value.search(CONTROL);
  if (at >= 0) {
    const code = value.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0');
    throw invalid(path, `must not contain control characters (found U+${code} at character ${at})`);
  }
}

function checkKeys(obj: Record<string, unknown>, path: string): void {
  for (const key of Object.keys(obj)) {
    if (key.length < 1 || key.length > MAX_METADATA_KEY_LENGTH) {
      throw invalid(`${path}/${key}`, `metadata keys must be 1–${MAX_METADATA_KEY_LENGTH} characters`);
    }
  }
}

export function checkMetadata(metadata: Metadata | undefined, path = '/metadata'): void {
  if (!metadata) return;
  checkKeys(metadata, path);
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > MAX_METADATA_JSON_BYTES) throw invalid(path, `must be at most ${MAX_METADATA_JSON_BYTES} bytes as JSON; got ${bytes}`);
  for (const [key, value] of Object.entries(metadata)) {
    checkNoControl(key, `${path}/${key}`);
    if (typeof value === 'string') checkNoControl(value, `${path}/${key}`);
    else if (Array.isArray(value)) value.forEach((v, i) => checkNoControl(v, `${path}/${key}/${i}`));
  }
}

export function checkFilter(filter: MetadataFilter | undefined, path = '/metadataFilter'): void {
  if (filter === undefined) return;
  try {
    compileFilter(filter, path);
  } catch (err) {
    if (err instanceof FilterError) throw invalid(err.path, err.message);
    throw err;
  }
  // Keys as metadata keys are (operators aside), and lists no longer than a filter takes.
  const walk = (value: unknown, at: string): void => {
    if (Array.isArray(value)) {
      if (value.length > MAX_FILTER_VALUES) throw invalid(at, `at most ${MAX_FILTER_VALUES} values`);
      value.forEach((v, i) => walk(v, `${at}/${i}`));
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) {
        if (!key.startsWith('$') && (key.length < 1 || key.length > MAX_METADATA_KEY_LENGTH)) {
          throw invalid(`${at}/${key}`, `metadata keys must be 1–${MAX_METADATA_KEY_LENGTH} characters`);
        }
        walk(v, `${at}/${key}`);
      }
    }
  };
  walk(filter, path);
}

/** Trim and require 1..max characters. */
export function trimmed(value: string, path: string, max: number): string {
  const v = value.trim();
  if (v.length === 0) throw invalid(path, 'must not be empty or only whitespace');
  if (v.length > max) throw invalid(path, `must be at most ${max} characters`);
  return v;
}

/** A stored description: trimmed, no control characters (undefined stays undefined). */
export function storedDescription(value: string | undefined, path = '/description'): string | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  checkNoControl(v, path);
  return v;
}

/** A stored name: trimmed, 1..max characters, no control characters. */
export function storedName(value: string, path: string, max: number): string {
  const v = trimmed(value, path, max);
  checkNoControl(v, path);
  return v;
}

export const ErrorSchema = t.Object({
  success: t.Literal(false),
  error: t.Object({
    code: t.String({ examples: ['VALIDATION_ERROR'] }),
    message: t.String(),
    details: t.Optional(t.Array(t.Object({ path: t.String(), message: t.String() }))),
    requestId: t.Optional(t.String()),
  }),
});

/** What each error status means on this API, with an example answer (the OpenAPI document shows both). */
const ERROR_STATUSES = {
  400: {
    description:
      'Invalid request: VALIDATION_ERROR (one details entry per problem), INVALID_JSON, KB_TYPE_IMMUTABLE, UNSUPPORTED_FILE_TYPE, EMPTY_FILE or NO_TEXT_EXTRACTED.',
    error: {
      code: 'VALIDATION_ERROR',
      message: 'Invalid request body',
      details: [{ path: '/name', message: 'must be a string of 1 to 255 characters; got 42' }],
    },
  },
  401: {
    description: 'The x-service-api-key and x-service-organization-id headers are missing, or the key is not valid for the organization.',
    error: { code: 'UNAUTHORIZED', message: 'The API key is not valid for this organization' },
  },
  403: {
    description: 'QUOTA_EXCEEDED: the organization holds as many knowledge bases or content items as it may.',
    error: {
      code: 'QUOTA_EXCEEDED',
      message: 'Quota reached: knowledgeBases',
      details: [{ path: '/', message: 'at most 100 knowledge bases per organization' }],
    },
  },
  404: {
    description: 'No such knowledge base or content item in this organization (also for malformed ids and for those of other organizations).',
    error: { code: 'NOT_FOUND', message: 'Knowledge base not found' },
  },
  408: {
    description:
      'REQUEST_TIMEOUT: the request body (JSON, or an upload within UPLOAD_RECEIVE_TIMEOUT_S) did not arrive in time; the connection is closed after this answer.',
    error: { code: 'REQUEST_TIMEOUT', message: 'The upload was not received within 90 s; send it faster or in smaller pieces' },
  },
  413: {
    description: 'PAYLOAD_TOO_LARGE: the body, file, page count or extracted text is over its limit.',
    error: { code: 'PAYLOAD_TOO_LARGE', message: 'The request body is larger than the limit of 1048576 bytes' },
  },
  429: {
    description: 'RATE_LIMITED: too many requests for this organization; the Retry-After header says when to retry.',
    error: { code: 'RATE_LIMITED', message: 'Too many requests for this organization; retry in 1 s' },
  },
  500: {
    description: 'INTERNAL: an unexpected error; the requestId (also in the x-request-id header) finds it in the logs.',
    error: { code: 'INTERNAL', message: 'Internal server error', requestId: '0f3a9c1e-lx2k9d' },
  },
  502: {
    description: 'EMBEDDING_FAILED (the embedding model failed) or EXTRACTION_FAILED (the file parser failed or ran out of time).',
    error: { code: 'EMBEDDING_FAILED', message: 'The embedding model failed: connection refused' },
  },
  503: {
    description: 'NOT_READY: the server is starting (replaying its log, loading models); Retry-After says when to ask again.',
    error: { code: 'NOT_READY', message: 'Not ready: replaying the log', details: [{ path: '/', message: 'replaying the log' }] },
  },
} as const;

export type ErrorStatus = keyof typeof ERROR_STATUSES;

/**
 * The error answers of a route: each status with the error envelope, what it means and an example.
 * Routes list the statuses they can give; every /api/v1 route can give API_ERRORS.
 */
export function errorAnswers<S extends ErrorStatus>(...statuses: S[]): { [K in S]: typeof ErrorSchema } {
  const answers: Partial<Record<ErrorStatus, typeof ErrorSchema>> = {};
  for (const status of statuses) {
    const { description, error } = ERROR_STATUSES[status];
    answers[status] = t.Object(ErrorSchema.properties, { description, examples: [{ success: false, error }] });
  }
  return answers as { [K in S]: typeof ErrorSchema };
}

/** What any authenticated route can answer, whatever it does. */
export const API_ERRORS = [401, 429, 500] as const;

export const SuccessSchema = t.Object({ success: t.Literal(true) });
export const CreatedSchema = t.Object({
  success: t.Literal(true),
  data: t.Object({ id: t.String() }),
});

/** A new content item: with `?wait=true`, also where its indexing ended. */
export const ContentCreatedSchema = t.Object({
  success: t.Literal(true),
  data: t.Object({
    id: t.String(),
    status: t.Optional(
      t.Union([t.Literal('pending'), t.Literal('processing'), t.Literal('ready'), t.Literal('failed')], {
        description: 'With ?wait=true: ready or failed (or pending/processing if the wait timed out).',
      }),
    ),
  }),
});

/** An integer field that rejects numeric strings (Elysia's t.Integer would coerce "5"). */
export const StrictInteger = (options: { minimum?: number; maximum?: number; default?: number; description?: string }) => Type.Integer(options);

/** Names: 1–256 characters after trimming (checked by `trimmed`); the schema only bounds input. */
export const NameSchema = t.String({ maxLength: 1024, description: '1–256 characters after trimming.', examples: ['Support articles'] });
export const DescriptionSchema = t.String({ maxLength: 4096, description: 'Up to 4,096 characters.' });

/** Page and limit of the list routes (validated by positiveInt: integers, limit within the route's bound). */
export const ListQuery = t.Object({
  page: t.Optional(t.String({ description: 'Page number, integer ≥ 1 (default 1).' })),
  limit: t.Optional(t.String({ description: 'Items per page, integer 1–100 (default 20 for contents, 100 for knowledge bases).' })),
});

/** A positive integer query parameter (page, limit), or the fallback when absent. */
export function positiveInt(raw: string | undefined, path: string, fallback: number, max?: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw invalid(path, 'must be an integer ≥ 1');
  const n = Number(raw);
  if (max !== undefined && n > max) throw invalid(path, `must be at most ${max}`);
  return n;
}

/**
 * The `parse` of every route with a JSON body. It documents the body as application/json in the
 * OpenAPI document; reading it stays with the global parser of src/app.ts (size and nesting caps),
 * which runs first and leaves Elysia's own JSON parser nothing to do.
 */
export const JSON_BODY = 'application/json' as const;

/**
 * One of a list of names, typed as those names so the typed client sees them (the schema is a union
 * of literals; its type a one-member tuple of their union, which Elysia maps to that union).
 */
export function literalUnion<const T extends readonly string[]>(values: T, options?: SchemaOptions): TUnion<[TLiteral<T[number]>]> {
  return t.Union(
    values.map((v) => t.Literal(v)),
    options,
  ) as TUnion<[TLiteral<T[number]>]>;
}
