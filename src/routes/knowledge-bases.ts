import { Elysia, t } from 'elysia';
import { ApiError } from '../errors';
import type { ServerContext } from '../http/context';
import { orgContext } from '../http/auth';
import {
  CreatedSchema,
  DescriptionSchema,
  API_ERRORS,
  errorAnswers,
  JSON_BODY,
  ListQuery,
  literalUnion,
  NameSchema,
  positiveInt,
  SuccessSchema,
  storedDescription,
  storedName,
} from '../schemas/common';
import { configForType, KB_TYPES } from '../kb-types';
import { configurationView, knowledgeBaseView } from './views';
import { requireEngine } from './guards';
import { ReembedProgressSchema } from './reembed';
import { Type } from '@sinclair/typebox';

const TypeSchema = literalUnion(KB_TYPES, { description: 'Fixes the embedding model and the supported modalities at creation.' });

const KnowledgeBaseSchema = t.Object({
  id: t.String({ examples: ['kb_01a1ffebd4220000644daed737ab'] }),
  name: t.String(),
  description: t.String(),
  activeKnowledgeBaseConfigurationId: t.String(),
  embeddingModel: t.String({
    description:
      'The embedding model its vectors come from (embedding.model of its active configuration; it changes when the knowledge base is re-embedded): a Hugging Face id, universal-sentence-encoder-lite, or the model of an http endpoint.',
    examples: ['Xenova/all-MiniLM-L6-v2'],
  }),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
});

const count = Type.Integer({ minimum: 0 });
const IngestionSchema = t.Object(
  {
    contents: t.Object({ pending: count, processing: count, ready: count, failed: count }, { description: 'Content items by status.' }),
    chunksWaiting: t.Integer({ minimum: 0, description: 'Chunks of the pending and processing items, estimated from their text length.' }),
    chunksPerSecond: t.Number({ minimum: 0, description: 'Chunks indexed per second over the last minute.' }),
    etaSeconds: t.Union([t.Integer({ minimum: 0 }), t.Null()], {
      description: 'Seconds until what waits is indexed at that pace; 0 when nothing waits, null before there is a pace.',
    }),
  },
  { description: 'Ingestion progress of this knowledge base.' },
);

const ConfigurationSchema = t.Object({
  id: t.String(),
  knowledgeBaseId: t.String(),
  type: t.String({ examples: ['TEXT_HIGH_QUALITY'] }),
  embedding: t.Object(
    {
      provider: t.String({ description: 'use-lite, transformers or http' }),
      model: t.String(),
      dimensions: Type.Integer({ minimum: 1 }),
      metric: t.Literal('cosine'),
      quantization: t.Union([t.Literal('f32'), t.Literal('i8')]),
    },
    { description: 'The model every vector of this knowledge base comes from (with its pooling, prefix and precision where they apply).' },
  ),
  chunking: t.Object({ size: Type.Integer({ minimum: 1 }), overlap: Type.Integer({ minimum: 0 }) }, { description: 'Chunk target and overlap in characters.' }),
  bm25: t.Object({ k1: t.Number(), b: t.Number() }),
  hnsw: t.Object({ connectivity: Type.Integer(), expansionAdd: Type.Integer(), expansionSearch: Type.Integer() }),
  modalities: t.Array(t.String()),
  analyzer: Type.Integer({
    minimum: 1,
    description: 'Version of the text analysis its full-text index was built with (a newer one re-embeds the knowledge base).',
  }),
  createdAt: t.String(),
  warning: t.Optional(t.String({ description: 'Present when a high-quality knowledge base is served by the small Universal Sentence Encoder Lite.' })),
});

// The error answers of each kind of route (documented and checked; see errorAnswers).
const readErrors = errorAnswers(...API_ERRORS, 404);
const listErrors = errorAnswers(...API_ERRORS, 400);
const createErrors = errorAnswers(...API_ERRORS, 400, 403, 408, 413);
const updateErrors = errorAnswers(...API_ERRORS, 400, 404, 408, 413);

export const knowledgeBaseRoutes = (ctx: ServerContext) =>
  new Elysia({ name: 'knowledge-bases' })
    .use(orgContext)
    .get(
      '/knowledge-bases',
      ({ org, query }) => {
        const page = positiveInt(query.page, '/page', 1);
        const limit = positiveInt(query.limit, '/limit', ctx.config.limits.maxPageLimit, ctx.config.limits.maxPageLimit);
        const all = requireEngine(ctx).listKnowledgeBases(org);
        return { success: true as const, data: all.slice((page - 1) * limit, page * limit).map(knowledgeBaseView), total: all.length };
      },
      {
        query: ListQuery,
        detail: {
          summary: 'List knowledge bases of the organization, oldest first (page, limit ≤ 100, default 100; total counts all)',
          tags: ['Knowledge bases'],
        },
        response: { 200: t.Object({ success: t.Literal(true), data: t.Array(KnowledgeBaseSchema), total: Type.Integer({ minimum: 0 }) }), ...listErrors },
      },
    )
    .post(
      '/knowledge-bases',
      async ({ org, body, set }) => {
        const name = storedName(body.name, '/name', 256);
        const kb = await requireEngine(ctx).createKnowledgeBase(org, {
          name,
          description: storedDescription(body.description) ?? '',
          type: body.type,
          config: configForType(body.type, ctx.config, ctx.embeddings),
        });
        set.status = 201;
        return { success: true as const, data: { id: kb.id } };
      },
      {
        parse: JSON_BODY,
        body: t.Object(
          { name: NameSchema, description: t.Optional(DescriptionSchema), type: TypeSchema },
          { additionalProperties: false, examples: [{ name: 'Support articles', description: 'Public help center', type: 'TEXT_HIGH_QUALITY' }] },
        ),
        detail: { summary: 'Create a knowledge base', tags: ['Knowledge bases'] },
        response: { 201: CreatedSchema, ...createErrors },
      },
    )
    .get(
      '/knowledge-bases/:id',
      ({ org, params }) => {
        const engine = requireEngine(ctx);
        const kb = engine.getKnowledgeBase(org, params.id);
        return {
          success: true as const,
          data: { ...knowledgeBaseView(kb), ingestion: engine.ingestionProgress(org, params.id), reembedding: engine.reembedProgress(org, params.id) ?? null },
        };
      },
      {
        detail: {
          summary: 'Get a knowledge base, with its ingestion progress (and re-embedding progress while it moves to another model)',
          tags: ['Knowledge bases'],
        },
        response: {
          200: t.Object({
            success: t.Literal(true),
            data: t.Composite([KnowledgeBaseSchema, t.Object({ ingestion: IngestionSchema, reembedding: t.Union([ReembedProgressSchema, t.Null()]) })]),
          }),
          ...readErrors,
        },
      },
    )
    .get(
      '/knowledge-bases/:id/configuration',
      ({ org, params }) => {
        const kb = requireEngine(ctx).getKnowledgeBase(org, params.id);
        return { success: true as const, data: configurationView(kb) };
      },
      {
        detail: { summary: 'Read the active configuration (the one searches use: activeKnowledgeBaseConfigurationId)', tags: ['Knowledge bases'] },
        response: { 200: t.Object({ success: t.Literal(true), data: ConfigurationSchema }), ...readErrors },
      },
    )
    .put(
      '/knowledge-bases/:id',
      async ({ org, params, body }) => {
        const engine = requireEngine(ctx);
        const kb = engine.getKnowledgeBase(org, params.id);
        const name = storedName(body.name, '/name', 256);
        if (body.type !== kb.type) {
          throw new ApiError('KB_TYPE_IMMUTABLE', `The type of a knowledge base cannot change (it is ${kb.type})`, [
            { path: '/type', message: `must equal the original type ${kb.type}` },
          ]);
        }
        await engine.updateKnowledgeBase(org, params.id, { name, description: storedDescription(body.description) });
        return { success: true as const };
      },
      {
        parse: JSON_BODY,
        body: t.Object(
          { name: NameSchema, description: t.Optional(DescriptionSchema), type: TypeSchema },
          { additionalProperties: false, examples: [{ name: 'Support handbook', description: 'Answers for the support team', type: 'TEXT_HIGH_QUALITY' }] },
        ),
        detail: { summary: 'Rename a knowledge base (type must stay the same)', tags: ['Knowledge bases'] },
        response: { 200: SuccessSchema, ...updateErrors },
      },
    )
    .delete(
      '/knowledge-bases/:id',
      async ({ org, params }) => {
        await requireEngine(ctx).deleteKnowledgeBase(org, params.id);
        return { success: true as const };
      },
      { detail: { summary: 'Delete a knowledge base and everything it holds', tags: ['Knowledge bases'] }, response: { 200: SuccessSchema, ...readErrors } },
    );
