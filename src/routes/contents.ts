import { Type } from '@sinclair/typebox';
import { Elysia, t } from 'elysia';
import type { Metadata } from '../../engine';
import { ApiError, invalid } from '../errors';
import type { ServerContext } from '../http/context';
import { orgContext } from '../http/auth';
import {
  AnsweredMetadataFields,
  checkMetadata,
  checkNoControl,
  ContentCreatedSchema,
  API_ERRORS,
  errorAnswers,
  ListQuery,
  MetadataSchema,
  JSON_BODY,
  positiveInt,
  SuccessSchema,
} from '../schemas/common';
import { contentListView, contentView } from './views';
import { requireEngine } from './guards';

// The error answers of each kind of route (documented and checked; see errorAnswers).
const readErrors = errorAnswers(...API_ERRORS, 404);
const listErrors = errorAnswers(...API_ERRORS, 400, 404);
const addErrors = errorAnswers(...API_ERRORS, 400, 403, 404, 408, 413);
const replaceErrors = errorAnswers(...API_ERRORS, 400, 404, 408, 413);

const ContentSchema = t.Object({
  id: t.String(),
  contentChunk: t.String(),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
  ...AnsweredMetadataFields,
  status: t.Union([t.Literal('pending'), t.Literal('processing'), t.Literal('ready'), t.Literal('failed')]),
  error: t.Optional(t.String()),
  chunkCount: Type.Integer({ minimum: 0 }),
  source: t.Any(),
  truncated: t.Optional(t.Boolean({ description: 'Lists only: true when contentChunk was cut to LIST_TEXT_CHARS characters (GET the item for all of it).' })),
});

const ReindexAnswer = t.Object({ success: t.Literal(true), data: t.Object({ id: t.String(), status: t.String() }) });

export const TextBody = t.Object(
  {
    text: t.String({ description: 'Non-empty after trimming; at most MAX_TEXT_BYTES (10 MiB) of UTF-8.' }),
    metadata: t.Optional(MetadataSchema),
  },
  { additionalProperties: false, examples: [{ text: 'Refunds are issued within 14 days.', metadata: { team: 'billing' } }] },
);

const WaitQuery = t.Object({
  wait: t.Optional(t.String({ description: '`true`: answer once the item is ready or failed (bounded by WAIT_TIMEOUT_MS).' })),
});

export function parseWait(raw: string | undefined): boolean {
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === '' || raw === 'true' || raw === '1') return true;
  throw invalid('/wait', 'must be true or false');
}

/** Validate text beyond the schema: non-blank and within the byte limit. */
export function checkText(text: string, maxBytes: number, path = '/text'): void {
  if (text.trim().length === 0) throw invalid(path, 'must not be empty or only whitespace');
  if (Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `${path.slice(1)} is larger than the limit of ${maxBytes} bytes`, [{ path, message: `at most ${maxBytes} bytes` }]);
  }
  checkNoControl(text, path);
}

export const contentRoutes = (ctx: ServerContext) =>
  new Elysia({ name: 'contents' })
    .use(orgContext)
    .get(
      '/knowledge-bases/:id/contents',
      ({ org, params, query }) => {
        const page = positiveInt(query.page, '/page', 1);
        const limit = positiveInt(query.limit, '/limit', 20, ctx.config.limits.maxPageLimit);
        const list = requireEngine(ctx).listContents(org, params.id, (page - 1) * limit, limit);
        return { success: true as const, data: list.items.map((item) => contentListView(item, ctx.config.limits.listTextChars)), total: list.total };
      },
      {
        query: ListQuery,
        detail: { summary: 'List content items, oldest first (texts cut to LIST_TEXT_CHARS characters, see truncated)', tags: ['Contents'] },
        response: { 200: t.Object({ success: t.Literal(true), data: t.Array(ContentSchema), total: Type.Integer({ minimum: 0 }) }), ...listErrors },
      },
    )
    .post(
      '/knowledge-bases/:id/contents',
      async ({ org, params, body, query, set }) => {
        const wait = parseWait(query.wait);
        checkText(body.text, ctx.config.limits.maxTextBytes);
        checkMetadata(body.metadata as Metadata | undefined);
        const engine = requireEngine(ctx);
        const item = await engine.addContent(org, params.id, { text: body.text, metadata: body.metadata as Metadata | undefined });
        set.status = 201;
        if (!wait) return { success: true as const, data: { id: item.id } };
        await engine.waitForContent(item, ctx.config.waitTimeoutMs);
        return { success: true as const, data: { id: item.id, status: item.status } };
      },
      {
        body: TextBody,
        parse: JSON_BODY,
        query: WaitQuery,
        detail: { summary: 'Add content from text', tags: ['Contents'] },
        response: { 201: ContentCreatedSchema, ...addErrors },
      },
    )
    .get(
      '/knowledge-bases/:id/contents/:contentId',
      ({ org, params }) => {
        const item = requireEngine(ctx).getContent(org, params.id, params.contentId);
        return { success: true as const, data: contentView(item) };
      },
      {
        detail: { summary: 'Get a content item', tags: ['Contents'] },
        response: { 200: t.Object({ success: t.Literal(true), data: ContentSchema }), ...readErrors },
      },
    )
    .put(
      '/knowledge-bases/:id/contents/:contentId',
      async ({ org, params, body, query }) => {
        const wait = parseWait(query.wait);
        checkText(body.text, ctx.config.limits.maxTextBytes);
        checkMetadata(body.metadata as Metadata | undefined);
        const engine = requireEngine(ctx);
        const item = await engine.updateContent(org, params.id, params.contentId, {
          text: body.text,
          metadata: body.metadata as Metadata | undefined,
          source: { kind: 'text' },
        });
        if (!wait) return { success: true as const };
        await engine.waitForContent(item, ctx.config.waitTimeoutMs);
        return { success: true as const, data: { id: item.id, status: item.status } };
      },
      {
        body: TextBody,
        parse: JSON_BODY,
        query: WaitQuery,
        detail: { summary: 'Replace the text (and metadata, when given) of a content item', tags: ['Contents'] },
        response: { 200: t.Object({ success: t.Literal(true), data: t.Optional(t.Object({ id: t.String(), status: t.String() })) }), ...replaceErrors },
      },
    )
    .post(
      '/knowledge-bases/:id/contents/:contentId/reindex',
      async ({ org, params }) => {
        const item = await requireEngine(ctx).reindexContent(org, params.id, params.contentId);
        return { success: true as const, data: { id: item.id, status: item.status } };
      },
      {
        detail: { summary: 'Index a failed content item again (no-op for other states)', tags: ['Contents'] },
        response: { 200: ReindexAnswer, ...readErrors },
      },
    )
    .post(
      '/knowledge-bases/:id/reindex-failed',
      async ({ org, params }) => {
        const queued = await requireEngine(ctx).reindexFailed(org, params.id);
        return { success: true as const, data: { queued } };
      },
      {
        detail: { summary: 'Index every failed content item of a knowledge base again', tags: ['Contents'] },
        response: { 200: t.Object({ success: t.Literal(true), data: t.Object({ queued: Type.Integer({ minimum: 0 }) }) }), ...readErrors },
      },
    )
    .delete(
      '/knowledge-bases/:id/contents/:contentId',
      async ({ org, params }) => {
        await requireEngine(ctx).deleteContent(org, params.id, params.contentId);
        return { success: true as const };
      },
      { detail: { summary: 'Delete a content item with its chunks', tags: ['Contents'] }, response: { 200: SuccessSchema, ...readErrors } },
    );
