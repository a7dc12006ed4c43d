import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import type { MetadataFilter } from '../../engine';
import type { Config } from '../config';
import type { ServerContext } from '../http/context';
import { orgContext } from '../http/auth';
import { AnsweredMetadataFields, API_ERRORS, checkFilter, errorAnswers, JSON_BODY, MetadataFilterSchema, StrictInteger, trimmed } from '../schemas/common';
import { hitView } from './views';
import { requireEngine } from './guards';

const HighlightsFields = {
  highlights: t.Optional(
    t.Array(t.Object({ start: Type.Integer({ minimum: 0 }), end: Type.Integer({ minimum: 0 }) }), {
      description:
        'With `highlight: true`: the words of `contentChunk` that match the query (stems, typo matches and completions included), as character offsets [start, end).',
    }),
  ),
  snippet: t.Optional(
    t.Object(
      { start: Type.Integer({ minimum: 0 }), end: Type.Integer({ minimum: 0 }), text: t.String() },
      { description: 'With `highlight: true`: about 200 characters of `contentChunk` around its best match; `text` is `contentChunk.slice(start, end)`.' },
    ),
  ),
};

const ContextChunkSchema = t.Object({ id: t.String({ description: 'Chunk id' }), contentChunk: t.String() });
const ContextFields = {
  context: t.Optional(
    t.Object(
      { before: t.Array(ContextChunkSchema), after: t.Array(ContextChunkSchema) },
      {
        description:
          "With `context`: the neighbouring chunks of the hit's content item, in the item's order (chunks overlap by the knowledge base's chunk overlap).",
      },
    ),
  ),
};

const HitSchema = t.Object({
  id: t.String({ description: 'Chunk id' }),
  contentChunk: t.String(),
  score: t.Number(),
  contentId: t.String(),
  ...AnsweredMetadataFields,
  page: t.Optional(Type.Integer({ minimum: 1, description: 'Page of the source file the chunk came from (PDF uploads).' })),
  ...HighlightsFields,
  ...ContextFields,
});

export const SearchResponse = t.Object({ success: t.Literal(true), data: t.Array(HitSchema) });

/** The request bodies of the three searches, bounded by the server's limits (MAX_QUERY_CHARS, MAX_SEARCH_LIMIT). */
function searchBodies(limits: Pick<Config['limits'], 'maxQueryChars' | 'maxSearchLimit'>) {
  const baseFields = {
    query: t.String({
      minLength: 1,
      maxLength: limits.maxQueryChars,
      description: `Non-empty after trimming, at most ${limits.maxQueryChars.toLocaleString('en-US')} characters.`,
    }),
    limit: t.Optional(
      StrictInteger({
        minimum: 1,
        maximum: limits.maxSearchLimit,
        description: `Maximum number of hits (chunks), 1–${limits.maxSearchLimit} (default ${Math.min(10, limits.maxSearchLimit)}).`,
      }),
    ),
    metadataFilter: t.Optional(MetadataFilterSchema),
    minScore: t.Optional(
      Type.Number({
        description: "Hits scoring below are left out (the mode's own score: BM25, cosine, or the blend); the search looks deeper to fill `limit`.",
      }),
    ),
    maxChunksPerContent: t.Optional(
      StrictInteger({
        minimum: 1,
        maximum: limits.maxSearchLimit,
        description: 'At most this many hits of one content item (its best ones); the search looks deeper to fill `limit` with other items.',
      }),
    ),
    context: t.Optional(
      t.Object(
        {
          before: t.Optional(StrictInteger({ minimum: 0, maximum: MAX_CONTEXT_CHUNKS, description: 'Chunks before the hit (default 0).' })),
          after: t.Optional(StrictInteger({ minimum: 0, maximum: MAX_CONTEXT_CHUNKS, description: 'Chunks after the hit (default 0).' })),
        },
        {
          additionalProperties: false,
          description: `Add up to \`before\` and \`after\` neighbouring chunks (0–${MAX_CONTEXT_CHUNKS} each) of the same content item to each hit, as \`context\`.`,
        },
      ),
    ),
    highlight: t.Optional(
      t.Boolean({ description: 'Add `highlights` (offsets of the matched words in `contentChunk`) and a `snippet` around the best match to each hit.' }),
    ),
    typoTolerance: t.Optional(
      t.Boolean({
        description:
          'Full-text and hybrid (default true): a word of 5+ characters as typed also matches words 1 typo away, of 9+ characters 2 typos, compared by their stems (a missing, extra, wrong or swapped character; one on the first character counts as two; each typo needs 4 characters of the stem; no typos in numbers, phrases or exclusions), when at least as many items hold them as hold the word as typed: `hoyses` finds "houses". The last word, when the query ends inside it, also matches every word it begins. Chunks holding a query word exactly rank above chunks matched only through typos or completions. Semantic search reads the query as written either way.',
      }),
    ),
  };

  const FullTextBody = t.Object(baseFields, {
    additionalProperties: false,
    examples: [{ query: 'refund policy', limit: 5, metadataFilter: { team: 'billing' } }],
  });

  const SemanticBody = t.Object(baseFields, {
    additionalProperties: false,
    examples: [{ query: 'how do I get my money back?', limit: 5 }],
  });

  const HybridBody = t.Object(
    {
      ...baseFields,
      semanticWeight: t.Optional(Type.Number({ minimum: 0, maximum: 1, description: '0 = full-text ranking only, 1 = semantic ranking only (default 0.5).' })),
      fusion: t.Optional(
        t.Union([t.Literal('weighted'), t.Literal('rrf')], {
          description:
            '`weighted` (default): w·semantic + (1−w)·full-text / (the most BM25 the query could score), both legs on fixed scales (never normalized over the candidates), so a lone weak keyword match stays weak; `rrf`: weighted reciprocal rank fusion.',
        }),
      ),
    },
    { additionalProperties: false, examples: [{ query: 'refund within two weeks', semanticWeight: 0.5, limit: 5 }] },
  );
  return { FullTextBody, SemanticBody, HybridBody };
}

const HybridHitSchema = t.Object({
  id: t.String(),
  contentChunk: t.String(),
  score: t.Number(),
  contentId: t.String(),
  ...AnsweredMetadataFields,
  page: t.Optional(Type.Integer({ minimum: 1, description: 'Page of the source file the chunk came from (PDF uploads).' })),
  ...HighlightsFields,
  ...ContextFields,
  fullTextScore: t.Number({
    description: 'The score full-text search gives the chunk: its BM25, raised toward the BM25 of its whole content item (0 when no term matches).',
  }),
  semanticScore: t.Optional(
    t.Number({ description: 'Cosine similarity of the chunk to the query (absent at semanticWeight 0, where no query embedding is made).' }),
  ),
});

export const HybridResponse = t.Object({ success: t.Literal(true), data: t.Array(HybridHitSchema) });

// Answers are checked against these schemas on the way out. Their fields carry no transform (the
// plain TypeBox Integer, not Elysia's coercing t.Integer): with one, Elysia runs TypeBox Encode
// over every answer, which cost about a tenth of a full-text search through HTTP (bench/http.ts).
const searchAnswer = { 200: SearchResponse };
const hybridAnswer = { 200: HybridResponse };

export function readSearch(
  body: {
    query: string;
    limit?: number;
    metadataFilter?: unknown;
    minScore?: number;
    maxChunksPerContent?: number;
    highlight?: boolean;
    context?: { before?: number; after?: number };
    typoTolerance?: boolean;
  },
  limits: Pick<Config['limits'], 'maxQueryChars' | 'maxSearchLimit'>,
) {
  const query = trimmed(body.query, '/query', limits.maxQueryChars);
  checkFilter(body.metadataFilter as MetadataFilter | undefined);
  return {
    // A space typed after the last word says it is finished (no completions of it: engine/search/expansion.ts).
    query: /\s$/.test(body.query) ? `${query} ` : query,
    limit: body.limit ?? Math.min(10, limits.maxSearchLimit),
    filter: body.metadataFilter as MetadataFilter | undefined,
    minScore: body.minScore,
    maxChunksPerContent: body.maxChunksPerContent,
    highlight: body.highlight,
    typoTolerance: body.typoTolerance,
    context: body.context && { before: body.context.before ?? 0, after: body.context.after ?? 0 },
  };
}

/** Neighbouring chunks a hit may carry on each side. */
export const MAX_CONTEXT_CHUNKS = 10;

const errors = errorAnswers(...API_ERRORS, 400, 404, 408, 413);
const embeddingErrors = errorAnswers(...API_ERRORS, 400, 404, 408, 413, 502);

export const searchRoutes = (ctx: ServerContext) => {
  const { FullTextBody, SemanticBody, HybridBody } = searchBodies(ctx.config.limits);
  const read = (body: Parameters<typeof readSearch>[0]) => readSearch(body, ctx.config.limits);
  return new Elysia({ name: 'search' })
    .use(orgContext)
    .post(
      '/knowledge-bases/:id/search/full-text',
      ({ org, params, body }) => {
        const hits = requireEngine(ctx).searchFullText(org, params.id, read(body));
        return { success: true as const, data: hits.map(hitView) };
      },
      {
        body: FullTextBody,
        parse: JSON_BODY,
        detail: {
          summary: 'Keyword search (BM25); scores are unbounded',
          description:
            "BM25 with the content items as the collection: an item's best chunk scores the higher of its own BM25 and its whole item's, so a title and a body that chunking split count together; the item's other chunks keep their own BM25; a chunk no query term matches is not a hit.",
          tags: ['Search'],
        },
        response: { ...searchAnswer, ...errors },
      },
    )
    .post(
      '/knowledge-bases/:id/search/semantic',
      async ({ org, params, body }) => {
        const hits = await requireEngine(ctx).searchSemantic(org, params.id, read(body));
        return { success: true as const, data: hits.map(hitView) };
      },
      {
        body: SemanticBody,
        parse: JSON_BODY,
        detail: { summary: 'Vector similarity search; score is the cosine similarity', tags: ['Search'] },
        response: { ...searchAnswer, ...embeddingErrors },
      },
    )
    .post(
      '/knowledge-bases/:id/search/hybrid',
      async ({ org, params, body }) => {
        const hits = await requireEngine(ctx).searchHybrid(org, params.id, {
          ...read(body),
          semanticWeight: body.semanticWeight ?? 0.5,
          fusion: body.fusion ?? 'weighted',
        });
        return {
          success: true as const,
          data: hits.map((h) => ({
            ...hitView(h),
            fullTextScore: h.fullTextScore,
            ...(h.semanticScore !== undefined ? { semanticScore: h.semanticScore } : {}),
          })),
        };
      },
      {
        body: HybridBody,
        parse: JSON_BODY,
        detail: { summary: 'Weighted blend of full-text and semantic ranking', tags: ['Search'] },
        response: { ...hybridAnswer, ...embeddingErrors },
      },
    );
};
